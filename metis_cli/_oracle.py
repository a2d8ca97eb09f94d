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


def _p(text: str, *tags: str, **labels: bool) -> PathAtom:
    return PathAtom(text, tags=frozenset(tags), **labels)


PATHS: tuple[PathAtom, ...] = (
    _p("src/app.py", "src"),
    _p("./src/new.py", "src"),
    _p("src/../README.md", "md"),
    _p("README.md", "md"),
    _p("docs/guide.md", "docs", "md"),
    _p(".env", "env", secret=True),
    _p("link_env", "env", secret=True),  # a symlink to .env
    _p("config/.env.local", secret=True),
    _p(".env.example"),
    _p(".git/config", "git", protected=True),
    _p("src/../.git/HEAD", "git", protected=True),
    _p("link_git/config", "git", protected=True),  # through a symlink to .git
    _p(".metis/settings.json", protected=True),
    _p("../outside/notes.txt", "outside", in_scope=False),
    _p("link_out/notes.txt", "outside", in_scope=False),  # a symlink leaving the workspace
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
    group: str  # read | edit | bash | web
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
    RuleTemplate("Write(*.md)", "edit", "md"),
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
    command (wrappers seen through); `privileged` means it runs under sudo."""

    text: str
    argv: tuple[str, ...]
    read_only: bool
    secret: bool = False
    protected: bool = False  # names a protected path
    out_of_scope: bool = False
    privileged: bool = False


def _a(text: str, argv: Iterable[str] | None = None, *, ro: bool, **labels: bool) -> ShellAtom:
    words = tuple(argv) if argv is not None else tuple(text.split())
    return ShellAtom(text, words, ro, **labels)


ATOMS: tuple[ShellAtom, ...] = (
    _a("git status", ro=True),
    _a("git push origin main", ro=False),
    _a("rm -rf build", ro=False),
    _a("cat .env", ro=True, secret=True),
    _a("cat link_env", ro=True, secret=True),
    _a("cat .env.example", ro=True),
    _a("cat src/app.py", ro=True),
    _a("cat .git/config", ro=True, protected=True),
    _a("ls src", ro=True),
    _a("grep foo src/app.py", ro=True),
    _a("echo hi > out.txt", ("echo", "hi"), ro=False),
    _a("echo x >> {home}/.bashrc", ("echo", "x"), ro=False, protected=True, out_of_scope=True),
    _a("touch .git/hooks/pre-commit", ro=False, protected=True),
    _a("npm run test", ro=False),
    _a("curl https://example.com", ro=False),
    _a("python3 -c 'print(1)'", ("python3", "-c", "print(1)"), ro=False),
    _a("cat ../outside/notes.txt", ro=True, out_of_scope=True),
    _a(
        "sudo rm -f {outside}/notes.txt",
        ("rm", "-f", "{outside}/notes.txt"),
        ro=False,
        out_of_scope=True,
        privileged=True,
    ),
    _a("cat $F", ("cat", DYN), ro=True),
)
ECHO_DYN = _a("echo $(...)", ("echo", DYN), ro=True)  # the outer command of a substitution
PREFIX_WRAPPERS = ("timeout 5", "env A=1", "nice", "nohup")
OPERATORS = (";", "&&", "||", "|")


@attrs.frozen
class Shell:
    """A command line (with {home}/{outside} placeholders) and the simple
    commands it runs. `simple`: a prefix wrapper may be put before it.
    `parse_gap`: it puts an `&&`/`||` list inside `$( )`, which the runtime's
    shell parser reads only in parts (PARSE_GAP below)."""

    text: str
    atoms: tuple[ShellAtom, ...]
    simple: bool = True
    parse_gap: bool = False


PARSE_GAP = (
    "bashlex cannot parse an &&/|| list inside $( ) (`echo $(rm -rf build && ls)`): "
    "the line stays opaque (exec, protected: never allowed), and the analyzer still "
    "reads the substituted parts, so deny and ask rules on them are recorded"
)


def _prefixed(wrapper: str, inner: Shell) -> Shell:
    text = inner.text if inner.simple else f"bash -c {shlex.quote(inner.text)}"
    return Shell(f"{wrapper} {text}", inner.atoms, parse_gap=inner.parse_gap)


def _bash_c(inner: Shell) -> Shell:
    return Shell(f"bash -c {shlex.quote(inner.text)}", inner.atoms, parse_gap=inner.parse_gap)


def _substituted(inner: Shell) -> Shell:
    # Spaces inside `$( ... )` keep `$((` (arithmetic) from appearing.
    gap = inner.parse_gap or "&&" in inner.text or "||" in inner.text
    return Shell(f"echo $( {inner.text} )", (*inner.atoms, ECHO_DYN), parse_gap=gap)


def _compound(op: str, left: Shell, right: Shell) -> Shell:
    gap = left.parse_gap or right.parse_gap
    return Shell(f"{left.text} {op} {right.text}", left.atoms + right.atoms, False, gap)


def _subshell(inner: Shell) -> Shell:
    return Shell(f"( {inner.text} )", inner.atoms, simple=False, parse_gap=inner.parse_gap)


def _extend(children: st.SearchStrategy[Shell]) -> st.SearchStrategy[Shell]:
    return st.one_of(
        st.builds(_prefixed, st.sampled_from(PREFIX_WRAPPERS), children),
        children.map(_bash_c),
        children.map(_substituted),
        st.builds(_compound, st.sampled_from(OPERATORS), children, children),
        children.map(_subshell),
    )


def shells(*, avoid_parse_gap: bool = False) -> st.SearchStrategy[Shell]:
    """Command lines: labelled simple commands, wrapped and combined."""
    base = st.sampled_from(ATOMS).map(lambda a: Shell(a.text, (a,)))
    lines = st.recursive(base, _extend, max_leaves=4)
    return lines.filter(lambda s: not s.parse_gap) if avoid_parse_gap else lines


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


def calls(*, avoid_parse_gap: bool = False) -> st.SearchStrategy[Call]:
    file_calls = st.builds(
        Call, st.sampled_from(("read", "write", "edit", "ls", "grep")), st.sampled_from(PATHS)
    )
    bash_calls = shells(avoid_parse_gap=avoid_parse_gap).map(lambda s: Call("bash", shell=s))
    return st.one_of(file_calls, bash_calls)


def cases(route: Route, *, avoid_parse_gap: bool = False) -> st.SearchStrategy[Case]:
    """Cases for one route; a child case also draws its parent. With
    `avoid_parse_gap`, no command hits the known parser bug (PARSE_GAP)."""
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
        st.lists(calls(avoid_parse_gap=avoid_parse_gap), min_size=1, max_size=4).map(tuple),
        st.lists(st.booleans(), min_size=4, max_size=4).map(tuple),
        st.sampled_from((Decision.DENY, Decision.ALLOW)),
        st.booleans(),
        child,
    )


# --- our own reading of the matching rules --------------------------------------------------


def _words_match(pattern: BashPattern, words: tuple[str, ...]) -> bool:
    """Whether a Bash rule matches a word sequence; a run-time word equals nothing."""
    if pattern.form == "any":
        return True
    if pattern.form == "wildcard":
        return DYN not in words and re.fullmatch(pattern.regex, " ".join(words)) is not None
    n = len(pattern.tokens)
    if words[:n] != pattern.tokens:
        return False
    return pattern.form == "prefix" or len(words) == n


def bash_rule_may_match(pattern: BashPattern, atom: ShellAtom) -> bool:
    """Deny/ask: the effective command, or with its sudo wrapper."""
    forms = [atom.argv] + ([("sudo", *atom.argv)] if atom.privileged else [])
    return any(_words_match(pattern, f) for f in forms)


def bash_rule_allows(pattern: BashPattern, atom: ShellAtom) -> bool:
    """Allow: a sudo command is allowed only by a rule that names sudo."""
    words = ("sudo", *atom.argv) if atom.privileged else atom.argv
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


def expected_rules(call: Call, placed: Iterable[_Placed]) -> set[tuple[str, str, str, int]]:
    """The rules whose match the gate must record for `call` (module doc)."""
    group = _GROUP_OF_TOOL[call.tool]
    mine = [p for p in placed if p.draw.rule.group == group]
    if call.path is not None:
        tags = call.path.tags
        return {p.key() for p in mine if p.draw.rule.tag is None or p.draw.rule.tag in tags}
    assert call.shell is not None
    atoms = call.shell.atoms
    out: set[tuple[str, str, str, int]] = set()
    allows: list[_Placed] = []
    for p in mine:
        pattern = p.draw.rule.bash
        assert pattern is not None
        if p.draw.behavior is RuleBehavior.ALLOW:
            allows.append(p)
        elif any(bash_rule_may_match(pattern, a) for a in atoms):
            out.add(p.key())
    # An allow counts only when every command is allowed by some allow rule.
    hits = [
        [p for p in allows if p.draw.rule.bash and bash_rule_allows(p.draw.rule.bash, a)]
        for a in atoms
    ]
    # A line the parser cannot fully read is opaque: no allow rule ever counts.
    if all(hits) and not call.shell.parse_gap:
        out.update(p.key() for h in hits for p in h)
    return out


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


def _expected_facts(call: Call, mode: Mode, transition: bool) -> dict[str, object]:
    if call.path is not None:
        kind = ToolKind.EDIT if call.tool in ("write", "edit") else ToolKind.READ_ONLY
        a = call.path
        protected, secret, in_scope = a.protected, a.secret, a.in_scope
    else:
        assert call.shell is not None
        atoms = call.shell.atoms
        gap = call.shell.parse_gap  # opaque: exec, and protected so never allowed
        kind = ToolKind.READ_ONLY if all(a.read_only for a in atoms) and not gap else ToolKind.EXEC
        protected = any(a.protected for a in atoms) or gap
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


def run_route(
    world: World,
    route: Route,
    examples: int,
    *,
    derandomize: bool = True,
    avoid_parse_gap: bool = False,
) -> Tally:
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
    @given(cases(route, avoid_parse_gap=avoid_parse_gap))
    def one(case: Case) -> None:
        tally.add(check_case(world, case))

    if not avoid_parse_gap:  # always try the known gap, not only when drawn
        one = example(parse_gap_case(route))(one)
    one()
    return tally


def parse_gap_case(route: Route) -> Case:
    """The PARSE_GAP bug as a case: `rm` under a deny rule, in `$( a && b )`."""
    rm = next(a for a in ATOMS if a.text == "rm -rf build")
    ls = next(a for a in ATOMS if a.text == "ls src")
    shell = Shell("echo $( rm -rf build && ls src )", (rm, ls, ECHO_DYN), parse_gap=True)
    deny = RuleDraw(
        Source.PROJECT, RuleBehavior.DENY, next(r for r in RULES if r.text == "Bash(rm:*)")
    )
    child = ChildDraw(Route.INTERACTIVE, Mode.DEFAULT, None, ()) if route is Route.CHILD else None
    call = Call("bash", shell=shell)
    return Case(route, Mode.DEFAULT, (deny,), (call,), (True,) * 4, Decision.DENY, False, child)


def run_oracle(
    examples_per_route: int = 100, *, avoid_parse_gap: bool = False
) -> dict[Route, tuple[int, int]]:
    """Per route: (calls decided, calls on which gate, facts, model and
    settlement all agreed). The two are equal when everything holds. The
    PARSE_GAP case is always tried (unless `avoid_parse_gap`)."""
    with tempfile.TemporaryDirectory(prefix="metis-oracle-") as tmp:
        world = build_world(Path(tmp))
        out: dict[Route, tuple[int, int]] = {}
        for route in ROUTES:
            tally = run_route(world, route, examples_per_route, avoid_parse_gap=avoid_parse_gap)
            out[route] = (tally.cases, tally.agreements)
        return out
