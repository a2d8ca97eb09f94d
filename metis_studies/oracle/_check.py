"""Checking one case: the real gate decides each call; model, facts and settlement agree."""

from __future__ import annotations

import io
from collections.abc import Coroutine
from collections.abc import Mapping
from typing import Any

import attrs

from metis_model import Settlement
from metis_model import mode_at_most
from metis_model import resolve
from metis_model import settle_ask
from metis_runtime.permissions import AskRequest
from metis_runtime.permissions import CallbackAsker
from metis_runtime.permissions import Gate
from metis_runtime.permissions import GateDecision
from metis_runtime.permissions import Policy
from metis_runtime.permissions import Refusal
from metis_runtime.permissions import TerminalAsker
from metis_runtime.tools import JobManager
from metis_runtime.tools import Tool
from metis_runtime.tools import ToolContext
from metis_runtime.tools import builtin_tools
from metis_trace import MUTATING_KINDS
from metis_trace import Decision
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import Source
from metis_trace import ToolKind

from .._sync import run_sync
from ._cases import Call
from ._cases import Case
from ._cases import ChildDraw
from ._cases import RuleDraw
from ._expect import Placed
from ._expect import expected_rules
from ._expect import rule_key
from ._shells import Shell
from ._world import WAITLESS
from ._world import World


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
    placed: list[Placed] = []
    for i, draw in enumerate(case.rules):
        text = world.render(draw.rule.text)
        policy.add(draw.source, draw.behavior, text)
        placed.append(Placed(draw, text, i + 1))
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
    parent: Gate, child: ChildDraw, placed: list[Placed], world: World, problems: list[str]
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
        placed.append(Placed(draw, world.render(rule.text), base + j + 1))
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


def _read_limits(placed: list[Placed]) -> bool:
    """Whether a Read deny or ask rule on some path is in force."""
    return any(
        p.draw.rule.group == "read"
        and p.draw.behavior is not RuleBehavior.ALLOW
        and "(" in p.draw.rule.text
        for p in placed
    )


def _expected_facts(
    call: Call, mode: Mode, transition: bool, read_limits: bool = False
) -> dict[str, object]:
    guarded = False
    if call.path is not None:
        kind = ToolKind.EDIT if call.tool in ("write", "edit") else ToolKind.READ_ONLY
        a = call.path
        protected, secret, in_scope = a.protected, a.secret, a.in_scope
    else:
        assert call.shell is not None
        atoms = call.shell.atoms
        opaque = any(a.opaque for a in atoms)  # opaque: protected, so never allowed
        mutating = not all(a.read_only for a in atoms) or opaque
        # A read known only at run time is never allowed past a Read rule
        # (issue 26): protected whatever the kind.
        guarded = read_limits and any(a.dynamic_read for a in atoms)
        protected = (mutating and any(a.protected for a in atoms)) or opaque
        kind = _shell_kind(call.shell, protected or guarded)
        secret = any(a.secret for a in atoms)
        in_scope = not any(a.out_of_scope for a in atoms)
    return {
        "mode": mode,
        "kind": kind,
        "protected": (protected and kind in MUTATING_KINDS) or guarded,
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
    placed: list[Placed],
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
    for name, want in _expected_facts(call, mode, case.transition, _read_limits(placed)).items():
        got = getattr(facts, name)
        if got != want:
            problems.append(f"fact {name}: gate {got}, labels {want} ({d.detail or 'no detail'})")
    got_rules = {rule_key(r) for r in facts.rules}
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
        s = settle_ask(case.route, hd, None if case.route in WAITLESS else answer)
        return s, s.waited
    parent_route = case.child.parent_route
    parent = settle_ask(parent_route, hd, None if parent_route in WAITLESS else answer)
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
    return run_sync(_check_case(world, case))
