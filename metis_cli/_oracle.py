"""Differential permission oracle: the runtime gate against the reference model.

Hypothesis draws a case: a mode, rules from every source in Claude Code
syntax, a batch of concrete calls (file tools on labelled paths, shell
commands built from labelled simple commands under wrappers, substitutions,
`bash -c` and compound operators), scripted answers, and the route. Each call
is classified by the real tool and decided by the real `Gate`, exactly as the
loop's preflight does; nothing is executed. Three things are checked per call:

1. the model agrees: `resolve(decision.facts)` gives the same decision, stage
   and rule as the gate (PERM-1 across two independent implementations);
2. the facts are right: mode, kind, protected, secret, in_scope and the exact
   set of matching rules equal what the case's labels say. Without this the
   first check is weak, since both sides read the same facts;
3. an ask settles as `settle_ask` says: approved, resolver, and whether anyone
   was waited on (headless and background must finish without suspending).

`run_oracle(n)` runs `n` examples per route and returns, per route, the
number of calls decided and how many passed every check.
"""

from __future__ import annotations

import asyncio
import io
import os
import re
import shlex
import tempfile
from collections.abc import Coroutine, Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from metis_model import Settlement, mode_at_most, resolve, settle_ask
from metis_model.trace import (
    MUTATING_KINDS,
    Decision,
    Mode,
    Route,
    RuleBehavior,
    RuleRef,
    Source,
    ToolKind,
)
from metis_runtime.permissions import (
    AskRequest,
    CallbackAsker,
    Gate,
    GateDecision,
    Policy,
    Refusal,
    TerminalAsker,
)
from metis_runtime.tools import JobManager, Tool, ToolContext, builtin_tools

ROUTES: tuple[Route, ...] = tuple(Route)
_WAITLESS = (Route.HEADLESS, Route.BACKGROUND)
_PARENT_ROUTES = (Route.INTERACTIVE, Route.PROTOCOL, Route.HEADLESS)

# --- the world: a workspace with labelled paths ---------------------------------------


@attrs.frozen
class World:
    """A temporary workspace, a directory outside it and a fake home."""

    workspace: Path
    outside: Path
    home: Path

    def render(self, text: str) -> str:
        return text.replace("{outside}", str(self.outside)).replace("{home}", str(self.home))


def build_world(root: Path) -> World:
    """Create the files and symlinks the labels describe (idempotent)."""
    root = Path(os.path.realpath(root))
    ws, outside, home = root / "ws", root / "outside", root / "home"
    files = {
        ws / "src" / "app.py": "print('app')\n",
        ws / "README.md": "# readme\n",
        ws / "docs" / "guide.md": "# guide\n",
        ws / ".env": "TOKEN=x\n",
        ws / "config" / ".env.local": "TOKEN=y\n",
        ws / ".env.example": "TOKEN=\n",
        ws / ".git" / "config": "[core]\n",
        ws / ".git" / "HEAD": "ref: refs/heads/main\n",
        ws / ".metis" / "settings.json": "{}\n",
        outside / "notes.txt": "outside\n",
        home / ".bashrc": "# rc\n",
        home / ".ssh" / "id_rsa": "KEY\n",
        home / ".ssh" / "id_rsa.pub": "PUB\n",
    }
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    for name, target in (("link_env", ".env"), ("link_git", ".git"), ("link_out", "../outside")):
        link = ws / name
        if not link.is_symlink():
            link.symlink_to(target)
    return World(ws, outside, home)


@attrs.frozen
class PathAtom:
    """A path as a call names it, with what is true of its real target.

    `protected` is the path's own nature; the gate reports it only for
    mutating calls. `tags` say which path rules (below) match it.
    """

    text: str
    in_scope: bool = True
    protected: bool = False
    secret: bool = False
    tags: frozenset[str] = frozenset()
    link: bool = False  # named through a symlink: an allow must match both names

    @property
    def allow_tags(self) -> frozenset[str]:
        """The rules an allow matches: the path as named and its target both."""
        return frozenset() if self.link else self.tags


def _p(text: str, *tags: str, **labels: bool) -> PathAtom:
    return PathAtom(text, tags=frozenset(tags), **labels)


PATHS: tuple[PathAtom, ...] = (
    _p("src/app.py", "src"),
    _p("./src/new.py", "src"),
    _p("src/../README.md", "md"),
    _p("README.md", "md"),
    _p("docs/guide.md", "docs", "md"),
    _p(".env", "env", secret=True),
    _p("link_env", "env", secret=True, link=True),  # a symlink to .env
    _p("config/.env.local", secret=True),
    _p(".env.example"),
    _p(".git/config", "git", protected=True),
    _p("src/../.git/HEAD", "git", protected=True),
    _p("link_git/config", "git", protected=True, link=True),  # through a symlink to .git
    _p(".metis/settings.json", protected=True),
    _p("../outside/notes.txt", "outside", in_scope=False),
    _p("link_out/notes.txt", "outside", in_scope=False, link=True),  # a symlink leaving
    _p("{outside}/notes.txt", "outside", in_scope=False),
    _p("{home}/.bashrc", "home", in_scope=False, protected=True),
    _p("{home}/.ssh/id_rsa", "home", "ssh", in_scope=False, protected=True, secret=True),
    _p("{home}/.ssh/id_rsa.pub", "home", "ssh", in_scope=False, protected=True),
)

# --- rules -----------------------------------------------------------------------------

DYN = "\x00dynamic"  # a word only known at run time


@attrs.frozen
class BashPattern:
    """Our own reading of a Bash rule (independent of the runtime's parser)."""

    form: str  # any | prefix | exact | wildcard
    tokens: tuple[str, ...] = ()
    regex: str = ""


@attrs.frozen
class RuleTemplate:
    """A rule text and what it matches: `group` is the tool family it speaks
    for; a path rule matches the atoms carrying `tag` (None: every path)."""

    text: str
    group: str  # read | edit | write | bash | web
    tag: str | None = None
    bash: BashPattern | None = None


def _bash(spec: str, form: str, *tokens: str, regex: str = "") -> RuleTemplate:
    return RuleTemplate(f"Bash({spec})", "bash", bash=BashPattern(form, tokens, regex))


RULES: tuple[RuleTemplate, ...] = (
    RuleTemplate("Read(./.env)", "read", "env"),
    RuleTemplate("Read(.env)", "read", "env"),
    RuleTemplate("Read(src/**)", "read", "src"),
    RuleTemplate("Read(*.md)", "read", "md"),
    RuleTemplate("Read(/{outside}/**)", "read", "outside"),  # renders as //abs
    RuleTemplate("Read(/{home}/.ssh/**)", "read", "ssh"),
    RuleTemplate("Read", "read"),
    RuleTemplate("Edit(src/**)", "edit", "src"),
    RuleTemplate("Edit(/docs/**)", "edit", "docs"),
    RuleTemplate("Write(*.md)", "write", "md"),
    RuleTemplate("Edit(.git/**)", "edit", "git"),
    RuleTemplate("Edit(/{home}/**)", "edit", "home"),
    RuleTemplate("Edit", "edit"),
    RuleTemplate("WebFetch(domain:example.com)", "web", "never"),
    _bash("git status:*", "prefix", "git", "status"),
    _bash("git:*", "prefix", "git"),
    _bash("rm:*", "prefix", "rm"),
    _bash("npm run test", "exact", "npm", "run", "test"),
    _bash("npm run *", "wildcard", regex=r"npm run(?: .*)?"),
    _bash("curl:*", "prefix", "curl"),
    _bash("cat:*", "prefix", "cat"),
    _bash("echo:*", "prefix", "echo"),
    _bash("python3:*", "prefix", "python3"),
    _bash("sudo:*", "prefix", "sudo"),
    _bash("ls:*", "prefix", "ls"),
    _bash("touch:*", "prefix", "touch"),
    RuleTemplate("Bash", "bash", bash=BashPattern("any")),
)

_GROUP_OF_TOOL = {
    "read": "read",
    "ls": "read",
    "grep": "read",
    "write": "edit",
    "edit": "edit",
    "bash": "bash",
}

# --- shell commands ----------------------------------------------------------------------


@attrs.frozen
class ShellAtom:
    """A simple command and what is true of it. `argv` is the effective
    command (wrappers seen through); `privileged` means it runs under sudo.
    `reads` / `writes` are the tags of the files it reads and writes (for
    Read and Edit rules); `redirect`: it writes by a redirection (only an
    Edit allow covers that); `edit`: one of acceptEdits's file commands;
    `opaque`: the analysis cannot see what it runs."""

    text: str
    argv: tuple[str, ...]
    read_only: bool
    secret: bool = False
    protected: bool = False  # names a protected path
    out_of_scope: bool = False
    privileged: bool = False
    reads: frozenset[str] = frozenset()
    writes: frozenset[str] = frozenset()
    has_write: bool = False
    redirect: bool = False
    edit: bool = False
    opaque: bool = False


def _a(
    text: str,
    argv: Iterable[str] | None = None,
    *,
    ro: bool,
    reads: Iterable[str] = (),
    writes: Iterable[str] | None = None,
    **labels: bool,
) -> ShellAtom:
    words = tuple(argv) if argv is not None else tuple(text.split())
    return ShellAtom(
        text,
        words,
        ro,
        reads=frozenset(reads),
        writes=frozenset(writes or ()),
        has_write=writes is not None,
        **labels,
    )


ATOMS: tuple[ShellAtom, ...] = (
    _a("git status", ro=True),
    _a("git push origin main", ro=False),
    _a("rm -rf build", ro=False, writes=(), edit=True),
    _a("cat .env", ro=True, secret=True, reads=["env"]),
    _a("cat link_env", ro=True, secret=True, reads=["env"]),
    _a("cat .env.example", ro=True),
    _a("cat src/app.py", ro=True, reads=["src"]),
    _a("cat .git/config", ro=True, protected=True, reads=["git"]),
    _a("ls src", ro=True, reads=["src"]),
    _a("grep foo src/app.py", ro=True, reads=["src"]),
    _a("echo hi > out.txt", ("echo", "hi"), ro=False, writes=(), redirect=True),
    _a(
        "echo x >> {home}/.bashrc",
        ("echo", "x"),
        ro=False,
        protected=True,
        out_of_scope=True,
        writes=["home"],
        redirect=True,
    ),
    _a("touch .git/hooks/pre-commit", ro=False, protected=True, writes=["git"], edit=True),
    _a("npm run test", ro=False),
    _a("curl https://example.com", ro=False),
    _a("python3 -c 'print(1)'", ("python3", "-c", "print(1)"), ro=False, opaque=True),
    _a("cat ../outside/notes.txt", ro=True, out_of_scope=True, reads=["outside"]),
    _a(
        "sudo rm -f {outside}/notes.txt",
        ("rm", "-f", "{outside}/notes.txt"),
        ro=False,
        out_of_scope=True,
        privileged=True,
        writes=["outside"],
    ),
    _a("cat $F", ("cat", DYN), ro=True),
)
ECHO_DYN = _a("echo $(...)", ("echo", DYN), ro=True)  # the outer command of a substitution
PREFIX_WRAPPERS = ("timeout 5", "env A=1", "nice", "nohup")
OPERATORS = (";", "&&", "||", "|")
# Wrappers Claude Code strips before matching allow rules; the others stay
# part of the command an allow rule must name.
STRIPPED = frozenset({"timeout 5", "nice", "nohup"})


@attrs.frozen
class Occ:
    """A simple command as it occurs in a line: under which wrappers."""

    atom: ShellAtom
    wrappers: tuple[str, ...] = ()  # outermost first, as written
    top: bool = True  # the line's own command, not one inside a substitution of it

    @property
    def kept(self) -> tuple[str, ...]:
        """The words of the wrappers an allow rule must match too."""
        return tuple(w for wr in self.wrappers if wr not in STRIPPED for w in wr.split())

    @property
    def wrapped(self) -> bool:
        return bool(self.kept)


@attrs.frozen
class Shell:
    """A command line (with {home}/{outside} placeholders) and the simple
    commands it runs. `simple`: a prefix wrapper may be put before it."""

    text: str
    occs: tuple[Occ, ...]
    simple: bool = True

    @property
    def atoms(self) -> tuple[ShellAtom, ...]:
        return tuple(o.atom for o in self.occs)


def line(text: str, *atoms: ShellAtom) -> Shell:
    """A line of unwrapped atoms."""
    return Shell(text, tuple(Occ(a) for a in atoms))


def _under(wrapper: str, inner: Shell, *, script: bool) -> tuple[Occ, ...]:
    """`inner`'s commands under `wrapper`: all of them when the wrapper runs
    `inner` as a script (`bash -c`), else only the line's own command (a
    substitution in its words runs before the wrapper, in the shell)."""
    return tuple(
        attrs.evolve(o, wrappers=(wrapper, *o.wrappers), top=True) if script or o.top else o
        for o in inner.occs
    )


def _prefixed(wrapper: str, inner: Shell) -> Shell:
    if inner.simple:
        return Shell(f"{wrapper} {inner.text}", _under(wrapper, inner, script=False))
    text = f"{wrapper} bash -c {shlex.quote(inner.text)}"
    scripted = Shell(inner.text, _under("bash -c", inner, script=True))
    return Shell(text, _under(wrapper, scripted, script=False))


def _bash_c(inner: Shell) -> Shell:
    return Shell(f"bash -c {shlex.quote(inner.text)}", _under("bash -c", inner, script=True))


def _substituted(inner: Shell) -> Shell:
    # Spaces inside `$( ... )` keep `$((` (arithmetic) from appearing.
    occs = tuple(attrs.evolve(o, top=False) for o in inner.occs)
    return Shell(f"echo $( {inner.text} )", (*occs, Occ(ECHO_DYN)))


def _compound(op: str, left: Shell, right: Shell) -> Shell:
    return Shell(f"{left.text} {op} {right.text}", left.occs + right.occs, False)


def _subshell(inner: Shell) -> Shell:
    return Shell(f"( {inner.text} )", inner.occs, simple=False)


def _extend(children: st.SearchStrategy[Shell]) -> st.SearchStrategy[Shell]:
    return st.one_of(
        st.builds(_prefixed, st.sampled_from(PREFIX_WRAPPERS), children),
        children.map(_bash_c),
        children.map(_substituted),
        st.builds(_compound, st.sampled_from(OPERATORS), children, children),
        children.map(_subshell),
    )


def shells() -> st.SearchStrategy[Shell]:
    """Command lines: labelled simple commands, wrapped and combined."""
    base = st.sampled_from(ATOMS).map(lambda a: line(a.text, a))
    return st.recursive(base, _extend, max_leaves=4)


# --- cases -------------------------------------------------------------------------------


@attrs.frozen
class RuleDraw:
    source: Source
    behavior: RuleBehavior
    rule: RuleTemplate


@attrs.frozen
class Call:
    """A call: `path` for file tools, `shell` for bash."""

    tool: str
    path: PathAtom | None = None
    shell: Shell | None = None


@attrs.frozen
class ChildDraw:
    parent_route: Route
    parent_mode: Mode
    requested: Mode | None
    extra_deny: tuple[RuleTemplate, ...]


@attrs.frozen
class Case:
    route: Route
    mode: Mode
    rules: tuple[RuleDraw, ...]
    calls: tuple[Call, ...]
    answers: tuple[bool, ...]  # the scripted answer to the k-th ask
    headless_default: Decision
    transition: bool
    child: ChildDraw | None = None


def rule_draws() -> st.SearchStrategy[RuleDraw]:
    return st.builds(
        RuleDraw, st.sampled_from(Source), st.sampled_from(RuleBehavior), st.sampled_from(RULES)
    )


def calls() -> st.SearchStrategy[Call]:
    file_calls = st.builds(
        Call, st.sampled_from(("read", "write", "edit", "ls", "grep")), st.sampled_from(PATHS)
    )
    bash_calls = shells().map(lambda s: Call("bash", shell=s))
    return st.one_of(file_calls, bash_calls)


def cases(route: Route) -> st.SearchStrategy[Case]:
    """Cases for one route; a child case also draws its parent."""
    child: st.SearchStrategy[ChildDraw | None] = st.none()
    if route is Route.CHILD:
        child = st.builds(
            ChildDraw,
            st.sampled_from(_PARENT_ROUTES),
            st.sampled_from(Mode),
            st.none() | st.sampled_from(Mode),
            st.lists(st.sampled_from(RULES), max_size=2).map(tuple),
        )
    return st.builds(
        Case,
        st.just(route),
        st.sampled_from(Mode),
        st.lists(rule_draws(), max_size=6).map(tuple),
        st.lists(calls(), min_size=1, max_size=4).map(tuple),
        st.lists(st.booleans(), min_size=4, max_size=4).map(tuple),
        st.sampled_from((Decision.DENY, Decision.ALLOW)),
        st.booleans(),
        child,
    )


# --- our own reading of the matching rules --------------------------------------------------


def _words_match(pattern: BashPattern, words: tuple[str, ...]) -> bool:
    """Whether a Bash rule matches a word sequence. A run-time word equals
    no literal word, but a trailing wildcard or prefix covers it."""
    if pattern.form == "any":
        return True
    if pattern.form == "wildcard":
        text = " ".join("\x00" if w == DYN else w for w in words)
        return re.fullmatch(pattern.regex, text, re.DOTALL) is not None
    n = len(pattern.tokens)
    if words[:n] != pattern.tokens:
        return False
    return pattern.form == "prefix" or len(words) == n


def bash_rule_may_match(pattern: BashPattern, occ: Occ) -> bool:
    """Deny/ask: the effective command, or under any suffix of its wrappers
    (`sudo` included)."""
    atom = occ.atom
    wrappers = [w.split() for w in occ.wrappers] + ([["sudo"]] if atom.privileged else [])
    forms = [atom.argv]
    for i in range(len(wrappers)):
        forms.append((*(w for wr in wrappers[i:] for w in wr), *atom.argv))
    return any(_words_match(pattern, f) for f in forms)


def bash_rule_allows(pattern: BashPattern, occ: Occ) -> bool:
    """Allow: the command with the wrappers Claude Code does not strip (a sudo
    command is allowed only by a rule that names sudo)."""
    atom = occ.atom
    words = (*occ.kept, *(("sudo",) if atom.privileged else ()), *atom.argv)
    return _words_match(pattern, words)


def _key(ref: RuleRef) -> tuple[str, str, str, int]:
    return (ref.behavior.value, ref.source.value, ref.pattern, ref.recency)


@attrs.frozen
class _Placed:
    """A rule as added to the policy: its text and recency there."""

    draw: RuleDraw
    text: str
    recency: int

    def key(self) -> tuple[str, str, str, int]:
        return (self.draw.behavior.value, self.draw.source.value, self.text, self.recency)


_READ_TOOLS = frozenset({"read", "ls", "grep"})
_EDIT_TOOLS = frozenset({"write", "edit"})


def _applies(draw: RuleDraw, tool: str) -> bool:
    """Which tools a rule speaks for: Read rules for the read tools (a Read
    deny or ask on a path also for edits), Edit rules for the edit tools (an
    Edit allow on a path also for reads), Write rules for Write alone (and
    never as an allow)."""
    rule, allow = draw.rule, draw.behavior is RuleBehavior.ALLOW
    if rule.group == "read":
        return tool in _READ_TOOLS or (tool in _EDIT_TOOLS and rule.tag is not None and not allow)
    if rule.group == "edit":
        return tool in _EDIT_TOOLS or (tool in _READ_TOOLS and rule.tag is not None and allow)
    if rule.group == "write":
        return tool == "write" and not allow
    return rule.group == _GROUP_OF_TOOL.get(tool)


def _file_expected(call: Call, placed: Iterable[_Placed]) -> set[tuple[str, str, str, int]]:
    assert call.path is not None
    out: set[tuple[str, str, str, int]] = set()
    allows: set[tuple[str, str, str, int]] = set()
    for p in placed:
        if not _applies(p.draw, call.tool):
            continue
        tag = p.draw.rule.tag
        if p.draw.behavior is RuleBehavior.ALLOW:
            if tag is None or tag in call.path.allow_tags:
                allows.add(p.key())
        elif tag is None or tag in call.path.tags:
            out.add(p.key())
    return out | allows


def _shell_expected(shell: Shell, placed: Iterable[_Placed]) -> set[tuple[str, str, str, int]]:
    placed = list(placed)
    out: set[tuple[str, str, str, int]] = set()
    bash = [p for p in placed if p.draw.rule.group == "bash"]
    files = [p for p in placed if p.draw.rule.group in ("read", "edit")]
    for p in bash:
        pattern = p.draw.rule.bash
        assert pattern is not None
        if p.draw.behavior is not RuleBehavior.ALLOW and any(
            bash_rule_may_match(pattern, o) for o in shell.occs
        ):
            out.add(p.key())
    # Read/Edit deny and ask rules on a file the line reads or writes (a Read
    # rule covers writes too); bare Read/Edit rules do not speak for Bash.
    for p in files:
        tag = p.draw.rule.tag
        if p.draw.behavior is RuleBehavior.ALLOW or tag is None:
            continue
        seen = set().union(*(o.atom.writes for o in shell.occs))
        if p.draw.rule.group == "read":
            seen |= set().union(*(o.atom.reads for o in shell.occs))
        if tag in seen:
            out.add(p.key())
    if any(o.atom.opaque for o in shell.occs):
        return out  # a line the parser cannot see through: no allow rule ever counts
    used: set[tuple[str, str, str, int]] = set()
    for o in shell.occs:
        hits = [
            p
            for p in bash
            if p.draw.behavior is RuleBehavior.ALLOW
            and p.draw.rule.bash is not None
            and bash_rule_allows(p.draw.rule.bash, o)
        ]
        if not hits and not (o.atom.read_only and not o.atom.out_of_scope):
            return out  # one command not allowed: no allow rule counts
        used.update(p.key() for p in hits)
    file_allows = [p for p in files if p.draw.behavior is RuleBehavior.ALLOW]
    for o in shell.occs:
        a = o.atom
        # A redirection target needs an Edit allow; outside the scope, every
        # write needs one and every read a Read or Edit allow.
        if a.redirect or (a.out_of_scope and a.has_write):
            hits = [
                p
                for p in file_allows
                if p.draw.rule.group == "edit"
                and (p.draw.rule.tag is None or p.draw.rule.tag in a.writes)
            ]
            if not hits:
                return out
            used.update(p.key() for p in hits)
        if a.out_of_scope and a.reads:
            hits = [p for p in file_allows if p.draw.rule.tag is None or p.draw.rule.tag in a.reads]
            if not hits:
                return out
            used.update(p.key() for p in hits)
    return out | used


def expected_rules(call: Call, placed: Iterable[_Placed]) -> set[tuple[str, str, str, int]]:
    """The rules whose match the gate must record for `call` (module doc)."""
    if call.path is not None:
        return _file_expected(call, placed)
    assert call.shell is not None
    return _shell_expected(call.shell, placed)


# --- checking one case ------------------------------------------------------------------------


@attrs.frozen
class CallCheck:
    """One decided call: what the gate and the model said, and any mismatch."""

    call: str
    decision: str
    stage: str
    asked: bool
    problems: tuple[str, ...]

    @property
    def agrees(self) -> bool:
        return not self.problems


@attrs.frozen
class CaseOutcome:
    route: Route
    checks: tuple[CallCheck, ...]
    problems: tuple[str, ...] = ()  # about the case as a whole (child clone)

    @property
    def ok(self) -> bool:
        return not self.problems and all(c.agrees for c in self.checks)

    def describe(self) -> str:
        lines = list(self.problems)
        for c in self.checks:
            lines.extend(f"{c.call}: {p}" for p in c.problems)
        return "\n".join(lines)


def _input(call: Call, world: World) -> dict[str, Any]:
    if call.shell is not None:
        return {"command": world.render(call.shell.text)}
    assert call.path is not None
    path = world.render(call.path.text)
    extra: dict[str, dict[str, Any]] = {
        "write": {"content": "x\n"},
        "edit": {"old": "a", "new": "b"},
        "grep": {"pattern": "foo"},
    }
    return {"path": path, **extra.get(call.tool, {})}


class _Scripted:
    """The scripted answers, one per ask in order, and who was waited on."""

    def __init__(self, answers: tuple[bool, ...]) -> None:
        self.answers = answers
        self.asked = 0
        self.out = io.StringIO()
        lines = "".join("y\n" if a else "n\n" for a in answers)
        self.terminal = TerminalAsker(io.StringIO(lines), self.out)
        self.callback = CallbackAsker(self._answer)

    def _answer(self, request: AskRequest) -> bool:
        self.asked += 1
        return self.answers[(self.asked - 1) % len(self.answers)]

    @property
    def waited(self) -> int:
        """How many times a person or a client was asked."""
        return self.asked + self.out.getvalue().count("[y/N]")

    def next_answer(self) -> bool:
        return self.answers[self.waited % len(self.answers)]


def _gate(
    route: Route, mode: Mode, policy: Policy, world: World, script: _Scripted, hd: Decision
) -> Gate:
    if route is Route.INTERACTIVE:
        return Gate(policy, mode, world.workspace, route, script.terminal, headless_default=hd)
    if route is Route.PROTOCOL:
        return Gate(policy, mode, world.workspace, route, script.callback, headless_default=hd)
    return Gate(policy, mode, world.workspace, route, headless_default=hd)


def _settle_now(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that must not suspend; None if it did (it is closed)."""
    try:
        coro.send(None)
    except StopIteration as stop:
        return stop.value
    coro.close()
    return None


_TOOLS: dict[str, Tool] = {t.name: t for t in builtin_tools()}


async def _check_case(world: World, case: Case) -> CaseOutcome:
    policy = Policy()
    placed: list[_Placed] = []
    for i, draw in enumerate(case.rules):
        text = world.render(draw.rule.text)
        policy.add(draw.source, draw.behavior, text)
        placed.append(_Placed(draw, text, i + 1))
    script = _Scripted(case.answers)
    hd = case.headless_default
    problems: list[str] = []
    gate_route = case.child.parent_route if case.child is not None else case.route
    gate_mode = case.child.parent_mode if case.child is not None else case.mode
    gate = _gate(gate_route, gate_mode, policy, world, script, hd)
    expected_mode = gate_mode
    if case.transition:
        gate.begin_transition()
    if case.child is not None:
        gate, expected_mode = _clone(gate, case.child, placed, world, problems)
    ctx = ToolContext(world.workspace, {"HOME": str(world.home)}, JobManager())
    checks = []
    for index, call in enumerate(case.calls):
        checks.append(
            await _check_call(world, case, gate, ctx, call, index, placed, script, expected_mode)
        )
    return CaseOutcome(case.route, tuple(checks), tuple(problems))


def _clone(
    parent: Gate, child: ChildDraw, placed: list[_Placed], world: World, problems: list[str]
) -> tuple[Gate, Mode]:
    """The child's gate; the runtime's refusal must be the model's mode order."""
    parent_mode = child.parent_mode
    extra = tuple(world.render(r.text) for r in child.extra_deny)
    clone = parent.clone_for_child(child.requested, extra)
    requested = child.requested or parent_mode
    if parent_mode is Mode.PLAN:
        expected: Mode | None = Mode.PLAN  # a plan parent forces plan
    else:
        expected = requested if mode_at_most(requested, parent_mode) else None
    if isinstance(clone, Refusal):
        if expected is not None:
            problems.append(f"clone refused {requested} under {parent_mode}; model allows it")
        clone = parent.clone_for_child(None, extra)
        expected = parent_mode
    elif expected is None:
        problems.append(f"clone gave {requested} under {parent_mode}; model orders it above")
        expected = requested
    assert isinstance(clone, Gate)
    base = len(placed)
    for j, rule in enumerate(child.extra_deny):
        draw = RuleDraw(Source.SESSION, RuleBehavior.DENY, rule)
        placed.append(_Placed(draw, world.render(rule.text), base + j + 1))
    return clone, expected


def _shell_kind(shell: Shell, protected: bool) -> ToolKind:
    """As the tool declares it and the gate refines it: read-only when every
    command is; an edit when every command is read-only or one of
    acceptEdits's file commands or writes only by redirection, none under a
    wrapper that is not stripped, all in scope, none protected or opaque."""
    atoms = shell.atoms
    opaque = any(a.opaque for a in atoms)
    writes = any(a.has_write for a in atoms)
    if all(a.read_only for a in atoms) and not opaque and not writes:
        return ToolKind.READ_ONLY
    if opaque or protected or not writes:
        return ToolKind.EXEC
    for o in shell.occs:
        a = o.atom
        if o.wrapped or a.privileged or a.out_of_scope:
            return ToolKind.EXEC
        if not (a.read_only or a.edit or a.redirect):
            return ToolKind.EXEC
    return ToolKind.EDIT


def _expected_facts(call: Call, mode: Mode, transition: bool) -> dict[str, object]:
    if call.path is not None:
        kind = ToolKind.EDIT if call.tool in ("write", "edit") else ToolKind.READ_ONLY
        a = call.path
        protected, secret, in_scope = a.protected, a.secret, a.in_scope
    else:
        assert call.shell is not None
        atoms = call.shell.atoms
        opaque = any(a.opaque for a in atoms)  # opaque: protected, so never allowed
        mutating = not all(a.read_only for a in atoms) or opaque
        protected = (mutating and any(a.protected for a in atoms)) or opaque
        kind = _shell_kind(call.shell, protected)
        secret = any(a.secret for a in atoms)
        in_scope = not any(a.out_of_scope for a in atoms)
    return {
        "mode": mode,
        "kind": kind,
        "protected": protected and kind in MUTATING_KINDS,
        "secret": secret,
        "in_scope": in_scope,
        "transition": transition,
    }


async def _check_call(
    world: World,
    case: Case,
    gate: Gate,
    ctx: ToolContext,
    call: Call,
    index: int,
    placed: list[_Placed],
    script: _Scripted,
    mode: Mode,
) -> CallCheck:
    occ = f"1.{index}"
    tool = _TOOLS[call.tool]
    tool_input = _input(call, world)
    label = f"{occ} {call.tool} {tool_input.get('command', tool_input.get('path'))!r}"
    shown = tool.classify(tool_input, ctx)
    d: GateDecision = gate.decide(call.tool, tool_input, shown.kind, shown.paths, shown.command)
    problems: list[str] = []
    # 1. the model, from the recorded facts alone
    model = resolve(d.facts)
    if (d.decision, d.stage, d.rule) != (model.decision, model.stage, model.rule):
        problems.append(
            f"gate {d.decision}/{d.stage}/{d.rule} but model {model.decision}/{model.stage}/"
            f"{model.rule} from {d.facts}"
        )
    if d.route is not gate.route:
        problems.append(f"decision recorded route {d.route}, gate route {gate.route}")
    # 2. the facts, against the labels
    facts = d.facts
    for name, want in _expected_facts(call, mode, case.transition).items():
        got = getattr(facts, name)
        if got != want:
            problems.append(f"fact {name}: gate {got}, labels {want} ({d.detail or 'no detail'})")
    got_rules = {_key(r) for r in facts.rules}
    want_rules = expected_rules(call, placed)
    if got_rules != want_rules:
        problems.append(
            f"rules: gate recorded {sorted(got_rules)}, labels say {sorted(want_rules)}"
        )
    # 3. settling an ask
    asked = d.decision is Decision.ASK
    if asked:
        problems.extend(await _check_settlement(case, gate, occ, call.tool, tool_input, d, script))
    return CallCheck(label, d.decision.value, d.stage.value, asked, tuple(problems))


def _model_settlement(case: Case, answer: bool) -> tuple[Settlement, bool]:
    """The model's settlement, and whether someone must have been waited on."""
    hd = case.headless_default
    if case.child is None:
        s = settle_ask(case.route, hd, None if case.route in _WAITLESS else answer)
        return s, s.waited
    parent_route = case.child.parent_route
    parent = settle_ask(parent_route, hd, None if parent_route in _WAITLESS else answer)
    # The model's CHILD settlement says waited=True whatever the parent's route;
    # a child of a headless parent waits on no one, as its parent does not.
    return settle_ask(Route.CHILD, hd, parent.approved), parent.waited


async def _check_settlement(
    case: Case,
    gate: Gate,
    occ: str,
    tool: str,
    tool_input: Mapping[str, Any],
    d: GateDecision,
    script: _Scripted,
) -> list[str]:
    answer = script.next_answer()
    want, must_wait = _model_settlement(case, answer)
    before = script.waited
    coro = gate.resolve_ask(occ, tool, tool_input, d)
    if must_wait:
        got = await coro
    else:
        got = _settle_now(coro)
        if got is None:
            return ["the ask suspended on a route that never waits (PERM-6)"]
    waited = script.waited - before
    problems = []
    if (got.approved, got.resolver) != (want.approved, want.resolver):
        problems.append(
            f"ask settled {got.approved}/{got.resolver}, model {want.approved}/{want.resolver}"
        )
    if waited != int(must_wait):
        problems.append(f"ask waited on {waited} answerer(s), expected {int(must_wait)}")
    return problems


def check_case(world: World, case: Case) -> CaseOutcome:
    """Decide every call of `case` with the real gate and check it (module doc)."""
    return asyncio.run(_check_case(world, case))


# --- running it ---------------------------------------------------------------------------------


@attrs.define
class Tally:
    """Calls decided and calls that passed every check, plus asks settled."""

    cases: int = 0
    agreements: int = 0
    asks: int = 0
    failures: list[str] = attrs.field(factory=list)

    def add(self, outcome: CaseOutcome) -> None:
        self.cases += len(outcome.checks)
        self.asks += sum(c.asked for c in outcome.checks)
        if outcome.problems:  # a wrong clone spoils every call of the case
            self.failures.append(outcome.describe())
            return
        self.agreements += sum(c.agrees for c in outcome.checks)
        if not outcome.ok:
            self.failures.append(outcome.describe())


def run_route(world: World, route: Route, examples: int, *, derandomize: bool = True) -> Tally:
    """`examples` Hypothesis examples on one route; never raises on a mismatch."""
    tally = Tally()

    @settings(
        max_examples=examples,
        database=None,
        derandomize=derandomize,
        deadline=None,
        phases=(Phase.explicit, Phase.generate),
        suppress_health_check=list(HealthCheck),
    )
    @example(substituted_list_case(route))  # bashlex once missed `rm` here (PERM-2)
    @given(cases(route))
    def one(case: Case) -> None:
        tally.add(check_case(world, case))

    one()
    return tally


def substituted_list_case(route: Route) -> Case:
    """`rm` under a deny rule, in `$( a && b )`: the bashlex parser could not
    read the list, recorded no deny rule, and an approved ask ran `rm`."""
    rm = next(a for a in ATOMS if a.text == "rm -rf build")
    ls = next(a for a in ATOMS if a.text == "ls src")
    shell = line("echo $( rm -rf build && ls src )", rm, ls, ECHO_DYN)
    deny = RuleDraw(
        Source.PROJECT, RuleBehavior.DENY, next(r for r in RULES if r.text == "Bash(rm:*)")
    )
    child = ChildDraw(Route.INTERACTIVE, Mode.DEFAULT, None, ()) if route is Route.CHILD else None
    call = Call("bash", shell=shell)
    return Case(route, Mode.DEFAULT, (deny,), (call,), (True,) * 4, Decision.DENY, False, child)


def run_oracle(examples_per_route: int = 100) -> dict[Route, tuple[int, int]]:
    """Per route: (calls decided, calls on which gate, facts, model and
    settlement all agreed). The two are equal when everything holds. The
    substituted-list case is always tried."""
    with tempfile.TemporaryDirectory(prefix="metis-oracle-") as tmp:
        world = build_world(Path(tmp))
        out: dict[Route, tuple[int, int]] = {}
        for route in ROUTES:
            tally = run_route(world, route, examples_per_route)
            out[route] = (tally.cases, tally.agreements)
        return out
