"""The spawn guard's counterexamples (CHILD-4), decoded to the Python model's
own types.

`decode_guard` reads a concrete `GuardState` and `SpawnRequest` out of a z3
model of the negated claim (`_guard_claim`); `decode_path` replays a path of
`GuardSystem` (`_guard_system`) through `admit` and `finish`, one
`GuardPathStep` a step, with the real `guard_decision`'s verdict beside the
encoding's. `_describe_input` and `_describe_path` are the witness lines of
CHILD-4's refutations (`_guard.prove_spawn_guard`).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import z3

from metis_model._agents import Admit
from metis_model._agents import GuardLimits
from metis_model._agents import GuardState
from metis_model._agents import Refusal
from metis_model._agents import RefusalCode
from metis_model._agents import SpawnRequest

from ._guard_sym import SymGuard
from ._guard_sym import SymLimits
from ._guard_system import GuardParams
from ._guard_system import GuardSystem
from ._guard_system import GuardVars

__all__ = ["GuardPathStep", "decode_guard", "decode_path"]


@attrs.frozen
class GuardPathStep:
    """One step of a decoded path, in the Python model's terms.

    A spawn carries the state before it and the request (agent ids are
    `a<N>`, the root `a0`; task `t<N>` is the N-th new task), the guard's
    verdict (`admitted`) and the real `guard_decision`'s; an end names the
    agent that ended (or None for an id that was not running)."""

    before: GuardState
    request: SpawnRequest | None
    agent_id: str | None
    admitted: bool
    model: Admit | Refusal | None


def _int(m: z3.ModelRef, x: z3.ExprRef) -> int:
    return m.eval(x, model_completion=True).as_long()  # type: ignore[no-any-return]


def _bool(m: z3.ModelRef, x: z3.ExprRef) -> bool:
    return bool(z3.is_true(m.eval(x, model_completion=True)))


def _limits(m: z3.ModelRef, lim: SymLimits) -> GuardLimits:
    return GuardLimits(**{f.name: _int(m, getattr(lim, f.name)) for f in attrs.fields(SymLimits)})


def decode_guard(m: z3.ModelRef, g: SymGuard) -> tuple[GuardState, SpawnRequest]:
    """A concrete guard state and request with the values of `g` in `m`."""
    limits = _limits(m, g.limits)
    running = frozenset(f"r{i}" for i in range(max(0, _int(m, g.running))))
    known = _bool(m, g.known_task)
    request = SpawnRequest("p", _int(m, g.parent_depth), "agent", "t0", force=_bool(m, g.override))
    state = GuardState(
        limits,
        _int(m, g.total),
        {"p": _int(m, g.children)},
        running,
        frozenset({request.key}) if known else frozenset(),
    )
    return state, request


def decode_path(
    m: z3.ModelRef, system: GuardSystem, states: Sequence[GuardVars], params: Sequence[GuardParams]
) -> list[GuardPathStep]:
    """Replay a path of `system` through the Python model (`admit`, `finish`)."""
    from metis_model._agents import admit
    from metis_model._agents import finish
    from metis_model._agents import guard_decision

    state = GuardState(_limits(m, states[0].limits))
    keys: list[str] = []  # tasks given so far, by key
    out: list[GuardPathStep] = []
    for k, p in enumerate(params):
        if not _bool(m, p.spawn):
            gone = sorted(state.running)[0] if _bool(m, p.was_running) else None
            out.append(GuardPathStep(state, None, gone, False, None))
            state = finish(state, gone) if gone is not None else state
            continue
        parent = f"a{_int(m, p.parent)}"
        task = keys[0] if _bool(m, p.known_task) else f"t{len(keys)}"
        request = SpawnRequest(
            parent, _int(m, p.parent_depth), "agent", task, force=_bool(m, p.override)
        )
        # the root is a0, the n-th agent spawned a<n>; a reused id is a running one
        agent_id = f"a{state.total + 1}" if _bool(m, p.fresh) else sorted(state.running)[0]
        admitted = _bool(m, system.decision(states[k], p).admitted)
        out.append(
            GuardPathStep(state, request, agent_id, admitted, guard_decision(state, request))
        )
        if admitted:
            if task not in keys:
                keys.append(task)
            state = admit(state, request, agent_id)
    return out


def _verdict(code: RefusalCode | None) -> str:
    return "admit" if code is None else code.value


def _describe_input(state: GuardState, request: SpawnRequest, code: RefusalCode | None) -> str:
    from metis_model._agents import guard_decision

    lim = state.limits
    real = guard_decision(state, request)
    return (
        f"limits depth {lim.max_depth}, total {lim.max_total}, per parent "
        f"{lim.max_per_parent}, concurrent {lim.max_concurrent}; spawned {state.total}, "
        f"{request.parent_id} spawned {state.per_parent.get(request.parent_id, 0)}, "
        f"{len(state.running)} running, task known {request.key in state.tasks}, "
        f"override {request.overrides_duplicate}; parent depth {request.parent_depth} -> "
        f"{_verdict(code)} [guard_decision: "
        f"{_verdict(real.code if isinstance(real, Refusal) else None)}]"
    )


def _describe_path(steps: Sequence[GuardPathStep]) -> str:
    parts = []
    for s in steps:
        if s.request is None:
            parts.append(f"end {s.agent_id or '(not running)'}")
            continue
        r = s.request
        verdict = "admitted" if s.admitted else "refused"
        real = _verdict(s.model.code if isinstance(s.model, Refusal) else None)
        parts.append(
            f"spawn {s.agent_id} (parent {r.parent_id} at depth {r.parent_depth}) {verdict}"
            f" [guard_decision: {real}]"
        )
    return "; ".join(parts)
