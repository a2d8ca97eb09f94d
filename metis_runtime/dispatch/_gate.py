"""The permission gate as the loop sees it, and a minimal stand-in.

`GateLike` is the surface of `metis_runtime.permissions.Gate` the loop uses:
a synchronous `decide` (facts, decision, deciding stage, rule, route) and an
async `resolve_ask`. `PassThroughGate` implements it with the mode fallback
and the scope check only (no rules, no protected/secret paths), so every
decision it records is exactly the staged resolution of the facts it records.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from typing import Protocol
from typing import TypeVar

from metis_trace import MUTATING_KINDS
from metis_trace import Decision
from metis_trace import Facts
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleRef
from metis_trace import Stage
from metis_trace import ToolKind

# What every gate returns: the production gate's values, defined once.
from ..permissions._decision import AskAnswer
from ..permissions._decision import GateDecision


class GateDecisionLike(Protocol):
    @property
    def decision(self) -> Decision: ...
    @property
    def stage(self) -> str: ...
    @property
    def rule(self) -> RuleRef | None: ...
    @property
    def facts(self) -> Facts: ...
    @property
    def route(self) -> Route: ...


class AskAnswerLike(Protocol):
    @property
    def approved(self) -> bool: ...
    @property
    def resolver(self) -> str: ...


_D = TypeVar("_D", bound=GateDecisionLike)


class GateLike(Protocol[_D]):
    """Generic in the gate's decision type: `resolve_ask` takes back what
    `decide` returned (the production `Gate` is a `GateLike[GateDecision]`)."""

    def decide(
        self,
        tool: str,
        input: Mapping[str, Any],
        kind: ToolKind,
        paths: Sequence[Path],
        command: str | None,
    ) -> _D: ...

    async def resolve_ask(
        self, occ: str, tool: str, input: Mapping[str, Any], decision: _D
    ) -> AskAnswerLike: ...


AskFunction = Callable[[str, str, Mapping[str, Any], GateDecisionLike], Awaitable[bool]]
"""(occ, tool, input, decision) -> approved; a person or a client answering."""

_WAITLESS = (Route.HEADLESS, Route.BACKGROUND)


def _fallback(mode: Mode, kind: ToolKind) -> Decision:
    if mode is Mode.BYPASS or kind in (ToolKind.READ_ONLY, ToolKind.PLAN_CONTROL):
        return Decision.ALLOW
    if mode is Mode.ACCEPT_EDITS and kind is ToolKind.EDIT:
        return Decision.ALLOW
    return Decision.DENY if mode in (Mode.DONT_ASK, Mode.PLAN) else Decision.ASK


class PassThroughGate:
    """Stages `plan`, `scope` and `mode` of specs/permissions.md, nothing else.

    `in_scope`: every classified path is inside the workspace or one of
    `additional_dirs` (all compared as real paths). Asks on a headless or
    background route resolve at once to `headless_default`; otherwise `ask`
    answers them (without one they are denied, resolver `policy`).
    """

    def __init__(
        self,
        mode: Mode,
        workspace: str | os.PathLike[str],
        *,
        additional_dirs: Sequence[str | os.PathLike[str]] = (),
        route: Route = Route.INTERACTIVE,
        headless_default: Decision = Decision.DENY,
        ask: AskFunction | None = None,
    ) -> None:
        self.mode = mode
        self.route = route
        self.headless_default = headless_default
        self._roots = tuple(Path(os.path.realpath(p)) for p in (workspace, *additional_dirs))
        self._ask = ask

    def _in_scope(self, paths: Sequence[Path]) -> bool:
        roots = self._roots
        return all(any(p == r or r in p.parents for r in roots) for p in paths)

    def decide(
        self,
        tool: str,
        input: Mapping[str, Any],
        kind: ToolKind,
        paths: Sequence[Path],
        command: str | None,
    ) -> GateDecision:
        mode = self.mode
        in_scope = self._in_scope(paths)
        facts = Facts(mode=mode, kind=kind, in_scope=in_scope)
        if mode is Mode.PLAN and kind in MUTATING_KINDS:
            decision, stage = Decision.DENY, Stage.PLAN
        elif not in_scope:
            decision = Decision.DENY if mode is Mode.DONT_ASK else Decision.ASK
            stage = Stage.SCOPE
        else:
            decision, stage = _fallback(mode, kind), Stage.MODE
        return GateDecision(decision, stage, None, facts, self.route)

    async def resolve_ask(
        self, occ: str, tool: str, input: Mapping[str, Any], decision: GateDecisionLike
    ) -> AskAnswer:
        if decision.route in _WAITLESS:
            return AskAnswer(self.headless_default is Decision.ALLOW, "headless-default")
        if self._ask is None:
            return AskAnswer(False, "policy")
        try:
            approved = await self._ask(occ, tool, input, decision)
        except Exception:  # a failing asker is a denial, never a crash of the loop
            approved = False
        return AskAnswer(bool(approved), "user")
