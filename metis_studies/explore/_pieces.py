"""Batch builders: Hypothesis strategies for one assistant turn aimed at a situation.

Each builder draws a `Piece`: the calls of one turn, plus what the workload
must hold for them to mean something (files, permission rules, hooks, child
agents, canaries) and the situations it aims at. A piece works in its own
folder `p<k>/`, so pieces of one workload never touch each other's files.
`_situations.py` composes pieces into workloads.

Tool inputs are the runtime's built-in tools' (`read`, `write`, `edit`,
`ls`, `glob`, `grep`, `bash`) and the agent tools (`spawn_agent`, ...).
Effects are writes inside the workspace, so an observer of the workspace
sees every one of them.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any

import attrs
from hypothesis import strategies as st

from ._workload import Child
from ._workload import Hook
from ._workload import Rule
from ._workload import Turn

SLOW_SAFE = "seq 1 2000000 | wc -l"  # read-only, so Safe; runs tens of milliseconds

Spec = tuple[str, dict[str, Any]]  # (tool, input) before call ids are given


@attrs.frozen
class Piece:
    calls: tuple[Spec, ...]
    aims: tuple[str, ...]
    files: tuple[tuple[str, str], ...] = ()
    rules: tuple[Rule, ...] = ()
    hooks: tuple[Hook, ...] = ()
    agents: tuple[Child, ...] = ()
    canaries: tuple[str, ...] = ()
    asks: int = 0  # asks this piece expects (in default mode), for the scripted answers
    ids: tuple[str, ...] | None = None  # call ids when the piece chooses them (repeats)
    thinking: str = ""
    guard: tuple[tuple[str, int], ...] = ()  # spawn guard limits this piece needs


Builder = Callable[[int], st.SearchStrategy[Piece]]


def read(path: str) -> Spec:
    return ("read", {"path": path})


def write(path: str, content: str) -> Spec:
    return ("write", {"path": path, "content": content})


def edit(path: str, old: str, new: str) -> Spec:
    return ("edit", {"path": path, "old": old, "new": new})


def bash(command: str, **extra: Any) -> Spec:
    return ("bash", {"command": command, **extra})


def grep(pattern: str, path: str) -> Spec:
    return ("grep", {"pattern": pattern, "path": path})


def ls(path: str) -> Spec:
    return ("ls", {"path": path})


def glob(pattern: str, path: str) -> Spec:
    return ("glob", {"pattern": pattern, "path": path})


def append(k: int, tag: str, target: str = "log.txt") -> Spec:
    """An Exclusive effect: one line appended to the piece's log."""
    return bash(f"echo {tag} >> p{k}/{target}")


def _files(k: int) -> tuple[tuple[str, str], ...]:
    return (
        (f"p{k}/notes.txt", "step0\n"),
        (f"p{k}/src/app.py", "def main():\n    return 'hello'\n\n# TODO: log the greeting\n"),
        (f"p{k}/src/util.py", "def add(a, b):\n    return a + b\n"),
    )


def _safe(k: int) -> st.SearchStrategy[Spec]:
    return st.sampled_from(
        [
            read(f"p{k}/src/app.py"),
            ls(f"p{k}"),
            grep("TODO", f"p{k}"),
            glob("**/*.py", f"p{k}"),
            bash(f"cat p{k}/src/util.py"),
        ]
    )


def _mix(
    draw: st.DrawFn, main: list[Spec], extra: st.SearchStrategy[Spec], most: int = 3
) -> list[Spec]:
    """`main` in order, with up to `most` `extra` calls inserted anywhere."""
    out = list(main)
    for spec in draw(st.lists(extra, max_size=most)):
        out.insert(draw(st.integers(0, len(out))), spec)
    return out


def _choose(
    draw: st.DrawFn, options: list[Spec], full: bool, least: int = 1, most: int = 4
) -> list[Spec]:
    """Some of `options` (`full`: all of them, in a drawn order: a sweep's
    focused piece holds every variant of its situation; shrinking drops them)."""
    if full:
        return list(draw(st.permutations(options)))
    return draw(st.lists(st.sampled_from(options), min_size=least, max_size=most, unique_by=repr))


@st.composite
def queue_chain(draw: st.DrawFn, k: int) -> Piece:
    """Three or more Queue calls on one key: edits that only succeed in FIFO order."""
    n = draw(st.integers(3, 5))
    chain = [edit(f"p{k}/notes.txt", f"step{i}", f"step{i + 1}") for i in range(n)]
    if draw(st.booleans()):  # a second key's chain, interleaved
        chain += [
            edit(f"p{k}/src/util.py", "a + b", "b + a"),
            edit(f"p{k}/src/util.py", "b + a", "(a + b)"),
        ]
    calls = _mix(draw, chain, _safe(k))
    return Piece(tuple(calls), ("queue-3",), _files(k), asks=len(chain))


@st.composite
def exclusive_waits(draw: st.DrawFn, k: int) -> Piece:
    """An Exclusive call behind a Safe sibling that is still running."""
    before = [bash(SLOW_SAFE), *draw(st.lists(_safe(k), max_size=2))]
    after = draw(st.lists(st.one_of(_safe(k), st.just(append(k, "after"))), max_size=2))
    calls = [*before, append(k, "exclusive"), *after]
    rules = (Rule(behavior="allow", pattern="Bash(echo:*)"),)
    return Piece(tuple(calls), ("exclusive-waits",), _files(k), rules)


@st.composite
def asks(draw: st.DrawFn, k: int, full: bool = False) -> Piece:
    """Calls decided `ask`: edits in default mode (mode stage) and a command
    under an ask rule (ask_rule stage); the workload answers them."""
    options = [
        write(f"p{k}/new.txt", "created\n"),
        edit(f"p{k}/notes.txt", "step0", "step1"),
        bash(f"touch p{k}/touched.txt"),
        append(k, "asked"),
    ]
    chosen = _choose(draw, options, full, most=3)
    calls = _mix(draw, chosen, _safe(k), most=2)
    # Ask rules outrank allow rules: the exact allow below never skips the ask.
    rules = (
        Rule(behavior="ask", pattern="Bash(touch:*)"),
        Rule(behavior="allow", pattern=f"Bash(touch p{k}/touched.txt)"),
    )
    return Piece(tuple(calls), ("asks",), _files(k), rules, asks=len(chosen))


@st.composite
def hooked(
    draw: st.DrawFn,
    k: int,
    veto: bool | None = None,
    matchers: tuple[str, ...] = (),
    fails: bool = False,
) -> Piece:
    """PreToolUse hooks that veto or pass, over the calls they match; `fails`
    (the `hooks:failing` focus): each exits 1, which must veto too."""
    if not matchers:
        options = st.sampled_from(["bash", "write", "edit", "*"])
        matchers = tuple(draw(st.lists(options, min_size=1, max_size=2, unique_by=repr)))
    hooks = tuple(
        Hook(
            id=f"h{k}{i}",
            matcher=m,
            veto=fails or (draw(st.booleans()) if veto is None else veto),
            fails=fails,
        )
        for i, m in enumerate(matchers)
    )
    calls = [append(k, "hooked"), write(f"p{k}/hooked.txt", "x\n"), read(f"p{k}/src/app.py")]
    calls = draw(st.permutations(calls))
    rules = (
        Rule(behavior="allow", pattern="Bash(echo:*)"),
        Rule(behavior="allow", pattern="Write"),
    )
    return Piece(tuple(calls), ("hooks",), _files(k), rules, hooks)


def _child_turns(specs: list[Spec], text: str) -> tuple[Turn, ...]:
    from ._workload import Call

    calls = tuple(Call(id=f"c_{i}", tool=t, input=i_) for i, (t, i_) in enumerate(specs))
    return (Turn(calls=calls), Turn(text=text))


@st.composite
def spawns(
    draw: st.DrawFn,
    k: int,
    plan: bool | None = None,
    asked: str | None = None,
    narrow: bool = False,
) -> Piece:
    """A sub-agent, maybe in plan mode (plan-locked: its spawn is an unknown
    tool, its writes denied), maybe asking for another mode (one more
    permissive than its parent's is refused), maybe spawned twice. `narrow`
    (the `spawn:narrowed` focus): the call narrows its tools, to none at
    times, and may disallow some (CHILD-1 against the call)."""
    if plan is None:
        plan = draw(st.booleans())
    name = f"helper{k}"
    child_calls = [read(f"p{k}/src/app.py"), write(f"p{k}/child.txt", "from the child\n")]
    if plan:
        child_calls.append(("spawn_agent", {"agent": name, "task": "go deeper"}))
    child_calls = draw(st.permutations(child_calls))
    child = Child(name=name, tools=None, turns=_child_turns(child_calls, f"{name} done"))
    spawn: dict[str, Any] = {"agent": name, "task": f"help with p{k}", "mode": "sync"}
    if narrow:
        spawn["tools"] = draw(st.sampled_from([[], ["read"], ["read", "write"]]))
        if draw(st.booleans()):
            spawn["disallowed_tools"] = ["write"]
    if plan:
        spawn["permission_mode"] = "plan"
    else:
        if asked is None:
            asked = draw(st.sampled_from(["", "bypassPermissions", "acceptEdits", "default"]))
        if asked:
            spawn["permission_mode"] = asked
    calls: list[Spec] = [("spawn_agent", spawn)]
    if draw(st.booleans()):  # the same task again: the guard refuses a duplicate
        calls.append(("spawn_agent", dict(spawn)))
    aims = ("plan-child",) if plan else ("spawn:narrowed",) if narrow else ("spawn",)
    rules = (Rule(behavior="allow", pattern="Write"),)
    return Piece(tuple(calls), aims, _files(k), rules, agents=(child,))


@st.composite
def guarded(draw: st.DrawFn, k: int, limit: str | None = None) -> Piece:
    """More spawns than the spawn guard's limit: the last ones are refused
    (CHILD-4). `max_concurrent` (the `guard:concurrent` focus) is not drawn
    otherwise: whether its last spawn is refused depends on whether the
    children before it are still running, which only the traces tell."""
    if limit is None:
        limit = draw(st.sampled_from(["max_per_parent", "max_total", "max_depth"]))
    name = f"worker{k}"
    child = Child(name=name, tools=("read",), turns=_child_turns([read(f"p{k}/notes.txt")], "ok"))
    n = draw(st.integers(2, 3))
    spawn: dict[str, Any] = {"agent": name, "mode": "sync"}
    if limit == "max_concurrent":
        # Children in their own copies are dispatched side by side (Queue
        # keys by task), so the guard sees them running at once.
        spawn["worktree"] = "temp"
    calls = tuple(("spawn_agent", {**spawn, "task": f"part {i} of p{k}"}) for i in range(n))
    value = 0 if limit == "max_depth" else n - 1
    return Piece(calls, ("guard",), _files(k), agents=(child,), guard=((limit, value),))


@st.composite
def nested(draw: st.DrawFn, k: int) -> Piece:
    """A grandchild: its surface is its parent's narrowed again, whatever its
    definition lists (CHILD-1)."""
    outer, inner = f"lead{k}", f"sub{k}"
    grandchild = Child(
        name=inner,
        tools=("read", "write", "bash"),
        turns=_child_turns(
            draw(st.permutations([read(f"p{k}/src/app.py"), write(f"p{k}/sub.txt", "below\n")])),
            f"{inner} done",
        ),
    )
    child = Child(
        name=outer,
        tools=("read", "ls", "spawn_agent", "wait_agent"),
        turns=_child_turns(
            [("spawn_agent", {"agent": inner, "task": f"look at p{k}", "mode": "sync"})],
            f"{outer} done",
        ),
    )
    spawn = ("spawn_agent", {"agent": outer, "task": f"lead p{k}", "mode": "sync"})
    return Piece((spawn,), ("nested",), _files(k), agents=(child, grandchild))


@st.composite
def plan_root(draw: st.DrawFn, k: int, full: bool = False) -> Piece:
    """What a plan-mode agent may not do: edit, run, spawn (all denied)."""
    options = [
        write(f"p{k}/plan.txt", "x\n"),
        edit(f"p{k}/notes.txt", "step0", "step1"),
        append(k, "plan"),
        ("spawn_agent", {"agent": "planner", "task": f"plan p{k}"}),
        read(f"p{k}/src/app.py"),
    ]
    calls = _choose(draw, options, full, least=2)
    return Piece(tuple(calls), ("plan-root",), _files(k))


# Credential-looking values of well-known formats, made unique per workload.
_ALNUM = string.ascii_letters + string.digits
_UPPER = string.ascii_uppercase + string.digits


def _token(draw: st.DrawFn, alphabet: str, n: int) -> str:
    return "".join(draw(st.lists(st.sampled_from(alphabet), min_size=n, max_size=n)))


@st.composite
def canary_value(draw: st.DrawFn) -> str:
    family = draw(st.sampled_from(["aws", "github", "slack", "anthropic"]))
    if family == "aws":
        return "AKIA" + _token(draw, _UPPER, 16)
    if family == "github":
        return "ghp_" + _token(draw, _ALNUM, 36)
    if family == "slack":
        return (
            "xoxb-"
            + "-".join(_token(draw, string.digits, 11) for _ in range(2))
            + "-"
            + _token(draw, _ALNUM, 24)
        )
    return "sk-ant-api03-" + _token(draw, _ALNUM, 93) + "AA"


@st.composite
def canaries(draw: st.DrawFn, k: int, full: bool = False) -> Piece:
    """Tool output that holds a credential: a planted canary read back by
    read, grep, bash cat, or an offloaded result; and by an effectful bash
    line (an edit: it also writes a file), whose output the journal keeps
    in its `commit` entry, so TRACE-2's scan of the journal sees it."""
    value = draw(canary_value())
    path = f"p{k}/deploy/settings.txt"
    content = f"# deployment\nregion = eu-west-1\ntoken = {value}\n"
    readers = [
        read(path),
        grep("token", f"p{k}/deploy"),
        bash(f"cat {path}"),
        bash(f"cat {path} && echo checked > p{k}/checked.txt"),
    ]
    calls = _choose(draw, readers, full, most=3)
    if full or draw(st.booleans()):  # the agent writes it elsewhere too
        calls.append(write(f"p{k}/copy.txt", content))
    return Piece(tuple(calls), ("canary",), (*_files(k), (path, content)), canaries=(value,))


@st.composite
def background(draw: st.DrawFn, k: int, full: bool = False) -> Piece:
    """Background jobs: a handshake now, `job_done` later (SCHED-4). Each
    writes a file by redirection (an edit to the gate: allowed in acceptEdits);
    the last one then fails (`exit 3`: its `job_done` is `error`, which the
    witness's exit of its process must match, TRACE-3)."""
    n = 2 if full else draw(st.integers(1, 2))
    jobs = [
        bash(
            f"seq 1 {draw(st.integers(1, 9))}00000 > p{k}/job{i}.txt"
            + ("; exit 3" if i == n - 1 else ""),
            background=True,
        )
        for i in range(n)
    ]
    calls = _mix(draw, jobs, _safe(k), most=2)
    return Piece(tuple(calls), ("background",), _files(k))


@st.composite
def repeated_ids(draw: st.DrawFn, k: int) -> Piece:
    """Call ids repeated within the message: occurrences stay distinct."""
    n = draw(st.integers(2, 4))
    calls = [read(f"p{k}/src/app.py"), append(k, "dup"), ls(f"p{k}"), grep("def", f"p{k}")][:n]
    ids = tuple(
        draw(st.lists(st.sampled_from(["toolu_dup", "toolu_dup2"]), min_size=n, max_size=n))
    )
    rules = (Rule(behavior="allow", pattern="Bash(echo:*)"),)
    return Piece(tuple(calls), ("repeated-ids",), _files(k), rules, ids=ids)


@st.composite
def policy(draw: st.DrawFn, k: int, full: bool = False) -> Piece:
    """The gate's stages: deny / ask / allow rules, protected and secret paths,
    out-of-scope paths, malformed calls and unknown tools."""
    options: list[Spec] = [
        bash(f"rm -f p{k}/notes.txt"),  # deny rule
        bash(f"rm -rf p{k}/src"),  # a deny rule and an allow rule: deny wins
        read(".env"),  # a secret
        write(".git/config", "x"),  # protected
        write(".metis/settings.json", "{}"),  # protected (the agent's settings)
        read("/etc/hostname"),  # out of scope
        bash("cat /etc/hostname"),
        ("no_such_tool", {"x": 1}),  # unknown tool
        ("read", {"file": "wrong field"}),  # schema error
        ("edit", {"path": f"p{k}/notes.txt", "old": "absent", "new": "x"}),  # the tool fails
        append(k, "allowed"),
    ]
    calls = _choose(draw, options, full)
    rules = (
        Rule(behavior="deny", pattern="Bash(rm -f:*)"),
        Rule(behavior="deny", pattern="Bash(rm -rf:*)"),
        Rule(behavior="allow", pattern="Bash(rm:*)"),
        Rule(behavior="allow", pattern="Bash(echo:*)"),
        Rule(behavior="ask", pattern="Read(/etc/**)"),
    )
    files = (*_files(k), (".env", "API_TOKEN=not-a-real-one\n"))
    return Piece(tuple(calls), ("policy",), files, rules)


@st.composite
def context_fill(
    draw: st.DrawFn, k: int, size: int | None = None, planted: bool | None = None
) -> Piece:
    """A large result and a thinking block: what the context ladder works on.
    (Three 9,000-character results and one of 30,000 in a 4,000-token window,
    `recent` 2, climb prune, snip, offload, collapse and compaction.)"""
    if size is None:
        size = draw(st.sampled_from([9_000, 30_000, 3_000]))
    lines = [f"line {i:05d} of a long log\n" for i in range(size // 26)]
    canaries: tuple[str, ...] = ()
    if planted if planted is not None else draw(st.booleans()):
        # A credential in a result large enough to be offloaded (TRACE-2 covers offloads).
        value = draw(canary_value())
        lines.insert(len(lines) // 2, f"deploy token = {value}\n")
        canaries = (value,)
    body = "".join(lines)
    path = f"p{k}/big.log"
    thinking = "Thinking about the log. " * draw(st.sampled_from([200, 20, 100]))
    return Piece((read(path),), ("context",), ((path, body),), canaries=canaries, thinking=thinking)


BUILDERS: dict[str, Builder] = {
    "queue-3": queue_chain,
    "exclusive-waits": exclusive_waits,
    "asks": asks,
    "hooks": hooked,
    "spawn": spawns,
    "guard": guarded,
    "nested": nested,
    "plan-root": plan_root,
    "canary": canaries,
    "background": background,
    "repeated-ids": repeated_ids,
    "policy": policy,
    "context": context_fill,
}
