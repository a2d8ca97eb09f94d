"""The spawn guard's encoding (CHILD-4): `guard_decision` in z3, and its
weakened versions.

`guard_z3` mirrors `metis_model._agents.guard_decision` check by check over
a `SymGuard` (`_guard_sym`): the checks are keyed by `RefusalCode` and
chained in `GUARD_ORDER` (a code without an encoding fails at import); the
first failing check gives the code. `concrete_decision` evaluates it on a
concrete input, which the agreement tests hold equal to `guard_decision`
(`tests/smt/test_guard.py`).

The ablations (`GUARD_ABLATIONS`) weaken the guard: a check skipped, two
adjacent checks swapped, or a limit checked one too late. CHILD-4's proof
(`_guard.check_guard`) must refute each: by the claim (`_guard_claim`) and,
when it lets a count past its limit, by BMC on the ledger (`_guard_system`).
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from types import MappingProxyType

import attrs
import z3

from metis_model._agents import GUARD_ORDER
from metis_model._agents import GuardState
from metis_model._agents import RefusalCode
from metis_model._agents import SpawnRequest

from ._guard_sym import CODE
from ._guard_sym import SymDecision
from ._guard_sym import SymGuard
from ._sorts import ors

__all__ = ["GUARD_ABLATIONS", "GuardAblation", "concrete_decision", "guard_z3"]


_Check = Callable[[SymGuard], z3.BoolRef]

# "Refused when", per code, as `guard_decision` computes it.
_CHECKS: Mapping[RefusalCode, _Check] = MappingProxyType(
    {
        RefusalCode.DEPTH_LIMIT: lambda g: g.parent_depth + 1 > g.limits.max_depth,
        RefusalCode.TOTAL_LIMIT: lambda g: g.total >= g.limits.max_total,
        RefusalCode.PER_PARENT_LIMIT: lambda g: g.children >= g.limits.max_per_parent,
        RefusalCode.CONCURRENCY_LIMIT: lambda g: g.running >= g.limits.max_concurrent,
        RefusalCode.DUPLICATE_TASK_WARNING: lambda g: z3.And(g.known_task, z3.Not(g.override)),
    }
)
# The same checks, one too lenient (a limit checked one step late; the depth
# check reading the parent's depth instead of the child's): the ablations.
_LENIENT: Mapping[RefusalCode, _Check] = MappingProxyType(
    {
        RefusalCode.DEPTH_LIMIT: lambda g: g.parent_depth > g.limits.max_depth,
        RefusalCode.TOTAL_LIMIT: lambda g: g.total > g.limits.max_total,
        RefusalCode.PER_PARENT_LIMIT: lambda g: g.children > g.limits.max_per_parent,
        RefusalCode.CONCURRENCY_LIMIT: lambda g: g.running > g.limits.max_concurrent,
    }
)
if set(_CHECKS) != set(RefusalCode) or set(GUARD_ORDER) != set(RefusalCode):  # pragma: no cover
    raise AssertionError("a RefusalCode without an encoding in metis_proofs/_guard_mirror.py")


def _slug(code: RefusalCode) -> str:
    return code.value.lower().replace("_", "-")


@attrs.frozen
class GuardAblation:
    """A weakened guard. `breaks_limits`: a count can pass its limit (so BMC on
    `GuardSystem` must find it); otherwise only the claim can refute it."""

    name: str
    description: str
    checks: Callable[[SymGuard], list[tuple[RefusalCode, z3.BoolRef]]]
    breaks_limits: bool


def _checks(g: SymGuard) -> list[tuple[RefusalCode, z3.BoolRef]]:
    return [(c, _CHECKS[c](g)) for c in GUARD_ORDER]


def _skip(code: RefusalCode) -> GuardAblation:
    return GuardAblation(
        f"skip-{_slug(code)}",
        f"the {code.value} check is missing",
        lambda g: [(c, t) for c, t in _checks(g) if c is not code],
        code is not RefusalCode.DUPLICATE_TASK_WARNING,
    )


def _swap(i: int) -> GuardAblation:
    a, b = GUARD_ORDER[i], GUARD_ORDER[i + 1]

    def checks(g: SymGuard) -> list[tuple[RefusalCode, z3.BoolRef]]:
        out = _checks(g)
        out[i], out[i + 1] = out[i + 1], out[i]
        return out

    return GuardAblation(
        f"swap-{_slug(a)}-{_slug(b)}", f"{b.value} is checked before {a.value}", checks, False
    )


def _lenient(code: RefusalCode) -> GuardAblation:
    return GuardAblation(
        f"lenient-{_slug(code)}",
        f"the {code.value} check admits one spawn too many",
        lambda g: [(c, _LENIENT[c](g) if c is code else t) for c, t in _checks(g)],
        True,
    )


GUARD_ABLATIONS: Mapping[str, GuardAblation] = MappingProxyType(
    {
        a.name: a
        for a in (
            *(_skip(c) for c in GUARD_ORDER),
            *(_swap(i) for i in range(len(GUARD_ORDER) - 1)),
            *(_lenient(c) for c in GUARD_ORDER if c in _LENIENT),
        )
    }
)


def _ablation(name: str | None) -> GuardAblation | None:
    if name is None:
        return None
    try:
        return GUARD_ABLATIONS[name]
    except KeyError:
        raise ValueError(
            f"unknown guard ablation {name!r}; valid: {', '.join(GUARD_ABLATIONS)}"
        ) from None


def guard_z3(g: SymGuard, ablation: str | None = None) -> SymDecision:
    """`guard_decision` as terms: the first failing check, in `GUARD_ORDER`."""
    weakened = _ablation(ablation)
    checks = weakened.checks(g) if weakened else _checks(g)
    admitted = z3.Not(ors(t for _, t in checks))
    if not checks:  # pragma: no cover - every ablation keeps some check
        return SymDecision(admitted, CODE[GUARD_ORDER[-1]])
    code = CODE[checks[-1][0]]  # when only the last check can fail
    for c, t in reversed(checks[:-1]):
        code = z3.If(t, CODE[c], code)
    return SymDecision(admitted, code)


_SYMBOLIC: dict[str | None, tuple[SymGuard, SymDecision]] = {}


def concrete_decision(
    state: GuardState, request: SpawnRequest, ablation: str | None = None
) -> RefusalCode | None:
    """`guard_z3` evaluated on a concrete input: None for admit, else the code.

    The terms are built once (per ablation) over fresh variables; the input's
    values are substituted and the result simplified to a constant."""
    if ablation not in _SYMBOLIC:
        g = SymGuard.fresh("concrete.")
        _SYMBOLIC[ablation] = (g, guard_z3(g, ablation))
    g, d = _SYMBOLIC[ablation]
    values = SymGuard.of(state, request)
    pairs = [(a, b) for a, b in zip(_flat(g), _flat(values), strict=True)]
    admitted = z3.simplify(z3.substitute(d.admitted, *pairs))
    if not (z3.is_true(admitted) or z3.is_false(admitted)):  # pragma: no cover
        raise AssertionError(f"not a constant: {admitted}")
    if z3.is_true(admitted):
        return None
    code: RefusalCode = CODE.decode(z3.simplify(z3.substitute(d.code, *pairs)))
    return code


def _flat(g: SymGuard) -> tuple[z3.ExprRef, ...]:
    return (
        *g.limits.values(),
        g.parent_depth,
        g.total,
        g.children,
        g.running,
        g.known_task,
        g.override,
    )
