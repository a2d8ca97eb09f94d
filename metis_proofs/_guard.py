"""The spawn guard (CHILD-4) in z3: its decision function and its counts.

Two encodings of `metis_model._agents`, both built from its own names
(`RefusalCode`, `GUARD_ORDER`, `GuardLimits`, `GuardState`, `SpawnRequest`):

* `guard_z3` mirrors `guard_decision` check by check, over a symbolic guard
  state and request (`SymGuard`): every limit and count an unbounded integer,
  plus whether the request's (agent, task hash) is already in the ledger and
  whether it carries `force` or a rationale. The claim (`guard_claim`) is the
  spec, stated without the encoding: the guard admits exactly when admitting
  exceeds no limit and is no unforced duplicate; otherwise its code is the
  *first* check of `GUARD_ORDER` (depth, total, per-parent, concurrency,
  duplicate) whose limit admitting would exceed; and after an admitted spawn
  (`admit`) the child's depth, the total, the parent's count and the running
  count are all within their limits. Proved as a validity query: the negated
  claim is unsat, for every integer value of every limit and count.
* `GuardSystem` is the guard's ledger as a transition system (pySMT style:
  `init` / `trans` / `bad`). A step is a spawn request (checked by
  `guard_z3`; `admit` applied when admitted) or a child's end (`finish`).
  The state: the limits (frozen, non-negative), the total, the per-parent
  counts (an array from agent id to count, all 0 initially, read like
  `per_parent.get(id, 0)`), the number of running agents and of known task
  keys (the sizes of the `running` and `tasks` sets: a step adds or removes
  one element or none, which a step parameter says), and the deepest depth
  spawned so far. `bad` is "some count exceeds its limit", read for one
  arbitrary, frozen agent id (`watch`) for the per-parent counts, so the
  queries stay quantifier-free and still cover every parent. The invariant
  "every count within its limit" is closed by k-induction (k = 1).

The ablations (`GUARD_ABLATIONS`) weaken the guard: a check skipped, two
adjacent checks swapped, or a limit checked one too late. Each must be
refuted: by the claim (a concrete guard state and request, decoded to the
Python model's own types) and, when it lets a count past its limit, by BMC
on the system (the shortest sequence of spawns and ends from the empty
ledger).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

import attrs
import z3

from metis_model._agents import (
    GUARD_ORDER,
    Admit,
    GuardLimits,
    GuardState,
    Refusal,
    RefusalCode,
    SpawnRequest,
)

from ._results import NO_CLAIM, Named, ProofResult, Verdict, refuted_scope, smt_result
from ._smt2 import Query, smt2_query, write_smt2
from ._sorts import ands, finite_enum, ors, timed

__all__ = [
    "CODE",
    "GUARD_ABLATIONS",
    "GuardAblation",
    "GuardParams",
    "GuardPathStep",
    "GuardProof",
    "GuardSystem",
    "GuardVars",
    "SymDecision",
    "SymGuard",
    "SymLimits",
    "check_guard",
    "concrete_decision",
    "decode_guard",
    "decode_path",
    "guard_claim",
    "guard_z3",
    "prove_spawn_guard",
]

CODE = finite_enum(RefusalCode)
MAX_K = 3  # k-induction is tried for k = 1..MAX_K before falling back to BMC
BMC_DEPTH = 12  # BMC depth when induction does not close (ablations: the search)


@attrs.frozen
class SymLimits:
    """`GuardLimits` without the timeout (not part of the decision)."""

    max_depth: z3.ArithRef
    max_total: z3.ArithRef
    max_per_parent: z3.ArithRef
    max_concurrent: z3.ArithRef

    @classmethod
    def fresh(cls, prefix: str) -> SymLimits:
        return cls(*(z3.Int(f"{prefix}{f.name}") for f in attrs.fields(cls)))

    @classmethod
    def of(cls, limits: GuardLimits) -> SymLimits:
        return cls(*(z3.IntVal(getattr(limits, f.name)) for f in attrs.fields(cls)))

    def values(self) -> tuple[z3.ArithRef, ...]:
        return tuple(getattr(self, f.name) for f in attrs.fields(type(self)))

    def non_negative(self) -> z3.BoolRef:
        return ands(v >= 0 for v in self.values())


@attrs.frozen
class SymGuard:
    """One guard state and one request, as `guard_decision` reads them."""

    limits: SymLimits
    parent_depth: z3.ArithRef  # request.parent_depth
    total: z3.ArithRef  # state.total
    children: z3.ArithRef  # state.per_parent.get(request.parent_id, 0)
    running: z3.ArithRef  # len(state.running)
    known_task: z3.BoolRef  # request.key in state.tasks
    override: z3.BoolRef  # request.overrides_duplicate (force or a rationale)

    @classmethod
    def fresh(cls, prefix: str) -> SymGuard:
        depth, total, children, running = (
            z3.Int(f"{prefix}{n}") for n in ("parent_depth", "total", "children", "running")
        )
        return cls(
            SymLimits.fresh(f"{prefix}limit."),
            depth,
            total,
            children,
            running,
            z3.Bool(f"{prefix}known_task"),
            z3.Bool(f"{prefix}override"),
        )

    @classmethod
    def of(cls, state: GuardState, request: SpawnRequest) -> SymGuard:
        """The abstraction of a concrete guard state and request."""
        return cls(
            SymLimits.of(state.limits),
            z3.IntVal(request.parent_depth),
            z3.IntVal(state.total),
            z3.IntVal(state.per_parent.get(request.parent_id, 0)),
            z3.IntVal(len(state.running)),
            z3.BoolVal(request.key in state.tasks),
            z3.BoolVal(request.overrides_duplicate),
        )


@attrs.frozen
class SymDecision:
    """`Admit | Refusal`: `code` means something only when not `admitted`."""

    admitted: z3.BoolRef
    code: z3.ExprRef


# --- the mirror of `guard_decision` ----------------------------------------------

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
    raise AssertionError("a RefusalCode without an encoding in metis_proofs/_guard.py")


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


# --- the claim (the spec, not the encoding) ---------------------------------------


@attrs.frozen
class _After:
    """The counts `admit` leaves: the child's depth, the total, the parent's
    count, the running count (`fresh`: the agent id was not running)."""

    depth: z3.ArithRef
    total: z3.ArithRef
    children: z3.ArithRef
    running: z3.ArithRef


def _after(g: SymGuard, fresh: z3.BoolRef | bool) -> _After:
    return _After(g.parent_depth + 1, g.total + 1, g.children + 1, g.running + z3.If(fresh, 1, 0))


def _would_break(g: SymGuard) -> Mapping[RefusalCode, z3.BoolRef]:
    """Per code: admitting this request would break what the code guards."""
    a, lim = _after(g, True), g.limits
    return {
        RefusalCode.DEPTH_LIMIT: a.depth > lim.max_depth,
        RefusalCode.TOTAL_LIMIT: a.total > lim.max_total,
        RefusalCode.PER_PARENT_LIMIT: a.children > lim.max_per_parent,
        RefusalCode.CONCURRENCY_LIMIT: a.running > lim.max_concurrent,
        RefusalCode.DUPLICATE_TASK_WARNING: z3.And(g.known_task, z3.Not(g.override)),
    }


def _within(a: _After, lim: SymLimits) -> z3.BoolRef:
    return z3.And(
        a.depth <= lim.max_depth,
        a.total <= lim.max_total,
        a.children <= lim.max_per_parent,
        a.running <= lim.max_concurrent,
    )


def guard_claim(g: SymGuard, d: SymDecision) -> z3.BoolRef:
    """CHILD-4 for one decision: (a) refused with the first check, in
    `GUARD_ORDER`, that admitting would break, and admitted when none breaks;
    (b) an admitted spawn leaves every count within its limit (whether or not
    its agent id was already running) and is no unforced duplicate."""
    breaks = _would_break(g)
    order: list[z3.BoolRef] = []
    earlier: list[z3.BoolRef] = []
    for c in GUARD_ORDER:
        first = z3.And(breaks[c], *[z3.Not(e) for e in earlier])
        order.append(z3.And(z3.Not(d.admitted), d.code == CODE[c]) == first)
        earlier.append(breaks[c])
    admitted_iff = d.admitted == z3.Not(ors(earlier))
    lim = g.limits
    limits = z3.Implies(
        d.admitted,
        z3.And(
            _within(_after(g, True), lim),
            _within(_after(g, False), lim),
            z3.Not(z3.And(g.known_task, z3.Not(g.override))),
        ),
    )
    return z3.And(admitted_iff, *order, limits)


# --- the ledger as a transition system ---------------------------------------------


@attrs.frozen
class GuardVars:
    """One state of `GuardSystem`."""

    limits: SymLimits  # frozen
    watch: z3.ArithRef  # frozen: the agent id whose per-parent count `bad` reads
    total: z3.ArithRef
    per_parent: z3.ArrayRef  # agent id -> spawned by it (Int -> Int)
    running: z3.ArithRef  # len(state.running)
    tasks: z3.ArithRef  # len(state.tasks)
    deepest: z3.ArithRef  # the deepest agent so far (the root: 0)


@attrs.frozen
class GuardParams:
    """The label of one step: a spawn request (`spawn`) or a child's end."""

    spawn: z3.BoolRef
    parent: z3.ArithRef  # request.parent_id
    parent_depth: z3.ArithRef
    known_task: z3.BoolRef
    override: z3.BoolRef
    fresh: z3.BoolRef  # the new agent id is not running (else `admit` adds nothing)
    was_running: z3.BoolRef  # finish: the id was running (else `finish` is a no-op)


class GuardSystem:
    """The guard's ledger: `init` / `trans` / `bad` (see the module docstring)."""

    def __init__(self, ablation: str | None = None, limits: GuardLimits | None = None) -> None:
        """`limits`: fix the limits (else they are any non-negative integers)."""
        _ablation(ablation)
        self.ablation = ablation
        self.limits = limits

    def state(self, name: str) -> GuardVars:
        watch, total, running, tasks, deepest = (
            z3.Int(f"{name}.{n}") for n in ("watch", "total", "running", "tasks", "deepest")
        )
        return GuardVars(
            SymLimits.fresh(f"{name}.limit."),
            watch,
            total,
            z3.Array(f"{name}.per_parent", z3.IntSort(), z3.IntSort()),
            running,
            tasks,
            deepest,
        )

    def params(self, name: str) -> GuardParams:
        spawn, known, override, fresh, was_running = (
            z3.Bool(f"{name}.{n}")
            for n in ("spawn", "known_task", "override", "fresh", "was_running")
        )
        return GuardParams(
            spawn,
            z3.Int(f"{name}.parent"),
            z3.Int(f"{name}.parent_depth"),
            known,
            override,
            fresh,
            was_running,
        )

    def init(self, s: GuardVars) -> z3.BoolRef:
        """`GuardState(limits)`: nothing spawned, only the root (depth 0).

        "Every agent has spawned 0" is asserted where counts are read: here
        for `watch`, and by the unrolling for each step's parent (see
        `starts_at_zero`). No other entry is ever read, so this is exact on
        every path, and it keeps the queries free of quantifiers and of
        constant arrays (which cvc5 reads only with an experimental option).
        """
        fixed: list[z3.BoolRef] = []
        if self.limits is not None:
            given = SymLimits.of(self.limits).values()
            fixed = [a == b for a, b in zip(s.limits.values(), given, strict=True)]
        return z3.And(
            s.limits.non_negative(),
            *fixed,
            s.total == 0,
            s.per_parent[s.watch] == 0,
            s.running == 0,
            s.tasks == 0,
            s.deepest == 0,
        )

    def starts_at_zero(self, s0: GuardVars, p: GuardParams) -> z3.BoolRef:
        """The initial count of a step's parent (the rest of `init`)."""
        return s0.per_parent[p.parent] == 0

    def request(self, s: GuardVars, p: GuardParams) -> SymGuard:
        return SymGuard(
            s.limits,
            p.parent_depth,
            s.total,
            s.per_parent[p.parent],
            s.running,
            p.known_task,
            p.override,
        )

    def decision(self, s: GuardVars, p: GuardParams) -> SymDecision:
        return guard_z3(self.request(s, p), self.ablation)

    def trans(self, s: GuardVars, p: GuardParams, t: GuardVars) -> z3.BoolRef:
        frozen = z3.And(
            *[a == b for a, b in zip(s.limits.values(), t.limits.values(), strict=True)],
            s.watch == t.watch,
        )
        unchanged = z3.And(
            t.total == s.total,
            t.per_parent == s.per_parent,
            t.tasks == s.tasks,
            t.deepest == s.deepest,
        )
        d = self.decision(s, p)
        child = p.parent_depth + 1
        admitted = z3.And(
            t.total == s.total + 1,
            t.per_parent == z3.Store(s.per_parent, p.parent, s.per_parent[p.parent] + 1),
            t.running == s.running + z3.If(p.fresh, 1, 0),
            t.tasks == s.tasks + z3.If(p.known_task, 0, 1),
            t.deepest == z3.If(child > s.deepest, child, s.deepest),
        )
        spawn = z3.And(
            # a set can hold the new id (or the known key) only if it is not empty
            z3.Implies(z3.Not(p.fresh), s.running >= 1),
            z3.Implies(p.known_task, s.tasks >= 1),
            z3.If(d.admitted, admitted, z3.And(unchanged, t.running == s.running)),
        )
        finish = z3.And(
            z3.Implies(p.was_running, s.running >= 1),
            unchanged,
            t.running == s.running - z3.If(p.was_running, 1, 0),
        )
        return z3.And(frozen, z3.If(p.spawn, spawn, finish))

    def plausible(self, s: GuardVars, p: GuardParams) -> tuple[z3.BoolRef, ...]:
        """Only to shape counterexamples (the proofs allow any request, as the
        guard does): the parent is an agent of the tree so far; the new
        agent's id is new; the parent's depth is one the tree has."""
        return tuple(
            z3.Implies(p.spawn, c)
            for c in (
                z3.And(p.parent >= 0, p.parent <= s.total),
                p.fresh,
                z3.And(p.parent_depth >= 0, p.parent_depth <= s.deepest),
            )
        )

    def bad(self, s: GuardVars) -> z3.BoolRef:
        """Some count exceeds its limit."""
        lim = s.limits
        return z3.Or(
            s.deepest > lim.max_depth,
            s.total > lim.max_total,
            s.per_parent[s.watch] > lim.max_per_parent,
            s.running > lim.max_concurrent,
        )


# --- decoding counterexamples ------------------------------------------------------


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
    from metis_model._agents import admit, finish, guard_decision

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


# --- the proof ---------------------------------------------------------------------


@attrs.frozen
class GuardProof:
    """Both halves of CHILD-4's proof, three-valued each ("unsat" proved,
    "sat" refuted, "unknown" a timeout)."""

    claim: str
    claim_witness: tuple[GuardState, SpawnRequest, RefusalCode | None] | None
    system: str  # "proved" | "refuted" | "bounded" | "unknown"
    k: int | None  # the k that closed the induction
    depth: int | None  # BMC depth reached (refuted: the path's length)
    path: tuple[GuardPathStep, ...] | None
    queries: tuple[Query, ...]
    seconds: float


def _answer(r: z3.CheckSatResult) -> str:
    return "unsat" if r == z3.unsat else "sat" if r == z3.sat else "unknown"


def _domain(g: SymGuard) -> z3.BoolRef:
    counts = (g.parent_depth, g.total, g.children, g.running)
    return z3.And(g.limits.non_negative(), *[c >= 0 for c in counts])


def check_guard(
    ablation: str | None = None,
    *,
    timeout_s: float | None = 120.0,
    bmc_depth: int = BMC_DEPTH,
    limits: GuardLimits | None = None,
) -> GuardProof:
    """Prove (or refute) the claim and the invariant of the ledger (`limits`:
    fixed limits for the ledger; the claim is always for all limits)."""
    start = time.perf_counter()
    queries: list[Query] = []
    # (1) The decision function: the negated claim.
    g = SymGuard.fresh("g.")
    d = guard_z3(g, ablation)
    negated = z3.Not(guard_claim(g, d))
    solver = timed(z3.SimpleSolver(), timeout_s)
    solver.add(negated)
    r = solver.check()
    claim = _answer(r)
    queries.append(smt2_query(negated, "the negated guard claim (order and limits)", claim))
    witness = None
    if r == z3.sat:
        # A witness the Python model can hold: no negative limit, count or depth.
        if solver.check(_domain(g)) != z3.sat:  # pragma: no cover - every ablation has one
            solver.check()
        state, request = decode_guard(solver.model(), g)
        witness = (state, request, concrete_decision(state, request, ablation))
    # (2) The ledger: k-induction, then BMC.
    system = GuardSystem(ablation, limits)
    verdict, k, depth, path = _induction(system, queries, timeout_s, bmc_depth)
    return GuardProof(
        claim, witness, verdict, k, depth, path, tuple(queries), time.perf_counter() - start
    )


def _induction(
    system: GuardSystem, queries: list[Query], timeout_s: float | None, bmc_depth: int
) -> tuple[str, int | None, int | None, tuple[GuardPathStep, ...] | None]:
    # One BMC unrolling from init; "bad at depth j" through an assumption.
    base = timed(z3.SimpleSolver(), timeout_s)
    states = [system.state("bmc.0")]
    params: list[GuardParams] = []
    base.add(system.init(states[0]))
    # One induction unrolling from any state; "not bad" on all but the last.
    step = timed(z3.SimpleSolver(), timeout_s)
    ind = [system.state("ind.0")]
    ind_params: list[GuardParams] = []

    def base_at(j: int) -> str:
        while len(states) <= j:
            p = system.params(f"bmc.{len(params)}")
            t = system.state(f"bmc.{len(states)}")
            base.add(system.trans(states[-1], p, t), system.starts_at_zero(states[0], p))
            params.append(p)
            states.append(t)
        return _answer(base.check(system.bad(states[j])))

    def path_to(j: int) -> tuple[GuardPathStep, ...]:
        queries.append(
            smt2_query(
                z3.And(*base.assertions(), system.bad(states[j])),
                f"a path of {j} steps from init breaking a limit",
                "sat",
            )
        )
        # Prefer a path a runtime could take (parents of the tree, new ids,
        # real depths), dropping those wishes from the last while none exists.
        steps = [system.plausible(s, p) for s, p in zip(states, params, strict=False)]
        wishes = [z3.Bool(f"plausible@{j}.{w}") for w in range(3)]
        for w, lit in enumerate(wishes):
            base.add(z3.Implies(lit, ands(step[w] for step in steps)))
        for n in range(len(wishes), -1, -1):
            if base.check(system.bad(states[j]), *wishes[:n]) == z3.sat:
                return tuple(decode_path(base.model(), system, states[: j + 1], params[:j]))
        return ()  # pragma: no cover - a timeout re-asking a satisfiable query

    for k in range(1, MAX_K + 1):
        answer = base_at(k - 1)
        if answer == "sat":
            return "refuted", None, k - 1, path_to(k - 1)
        if answer == "unknown":
            return "unknown", None, (k - 2 if k > 1 else None), None
        while len(ind_params) < k:
            p = system.params(f"ind.{len(ind_params)}")
            t = system.state(f"ind.{len(ind)}")
            step.add(z3.Not(system.bad(ind[-1])), system.trans(ind[-1], p, t))
            ind_params.append(p)
            ind.append(t)
        answer = _answer(step.check(system.bad(ind[k])))
        if answer == "unsat":
            _write_induction(system, queries, k, states, step, ind)
            return "proved", k, None, None
        if answer == "unknown":
            return "unknown", None, k - 1, None
    for j in range(MAX_K, bmc_depth + 1):
        answer = base_at(j)
        if answer == "sat":
            return "refuted", None, j, path_to(j)
        if answer == "unknown":
            return "unknown", None, j - 1, None
    bad_any = ors(system.bad(s) for s in states[: bmc_depth + 1])
    queries.append(
        smt2_query(
            z3.And(*base.assertions(), bad_any),
            f"paths of 0..{bmc_depth} steps from init breaking a limit",
            "unsat",
        )
    )
    return "bounded", None, bmc_depth, None


def _write_induction(
    system: GuardSystem,
    queries: list[Query],
    k: int,
    states: Sequence[GuardVars],
    step: z3.Solver,
    ind: Sequence[GuardVars],
) -> None:
    s0 = system.state("init")
    if k == 1:
        base_q = z3.And(system.init(s0), system.bad(s0))
        queries.append(smt2_query(base_q, "base case: the empty ledger is within limits", "unsat"))
    else:  # pragma: no cover - the ledger closes at k = 1
        b = z3.SimpleSolver()
        b.add(system.init(states[0]))
        for j in range(k - 1):
            p = system.params(f"base.{j}")
            b.add(system.trans(states[j], p, states[j + 1]), system.starts_at_zero(states[0], p))
        queries.append(
            smt2_query(
                z3.And(*b.assertions(), ors(system.bad(s) for s in states[:k])),
                f"base case: no limit broken within {k - 1} steps",
                "unsat",
            )
        )
    queries.append(
        smt2_query(
            z3.And(*step.assertions(), system.bad(ind[k])),
            f"{k}-induction step: within limits stays within limits",
            "unsat",
        )
    )


def prove_spawn_guard(
    prop: Named,
    out_dir: Path | None,
    timeout_s: float | None = 120.0,
    ablation: str | None = None,
) -> ProofResult:
    """CHILD-4 as a `ProofResult`: proved only when the claim is unsat and the
    ledger's invariant closes by induction; refuted if either is refuted."""
    proof = check_guard(ablation, timeout_s=timeout_s)
    smt2 = str(write_smt2(out_dir, prop, proof.queries)) if out_dir is not None else None
    said = {"unsat": "proved", "sat": "refuted", "unknown": "unknown"}
    part = f"guard claim {said[proof.claim]}; ledger {proof.system}"
    if proof.claim == "sat" or proof.system == "refuted":
        witnesses = []
        if proof.claim_witness is not None:
            witnesses.append(f"guard input: {_describe_input(*proof.claim_witness)}")
        if proof.path is not None:
            witnesses.append(f"ledger path: {_describe_path(proof.path)}")
        at = f" by a {proof.depth}-step path" if proof.path is not None else ""
        return smt_result(
            prop,
            Verdict.REFUTED,
            proof.depth,
            proof.seconds,
            smt2,
            part + at,
            witness="; ".join(witnesses) or None,
            scope=refuted_scope("a guard input or a ledger path breaks it"),
        )
    if proof.claim == "unsat" and proof.system == "proved":
        return smt_result(
            prop,
            Verdict.PROVED,
            None,
            proof.seconds,
            smt2,
            "negated guard claim unsat (unbounded limits and counts); "
            f"ledger within limits, {proof.k}-inductive over spawn/finish",
            k=proof.k,
            scope="proved for all limits, counts and runs of the ledger",
        )
    if proof.claim == "unsat" and proof.system == "bounded":  # pragma: no cover
        return smt_result(
            prop,
            Verdict.BOUNDED,
            proof.depth,
            proof.seconds,
            smt2,
            f"negated guard claim unsat; ledger BMC clean to depth {proof.depth}, not inductive",
            scope=f"bounded to depth {proof.depth} (the ledger)",
        )
    return smt_result(
        prop,
        Verdict.UNKNOWN,
        proof.depth,
        proof.seconds,
        smt2,
        f"{part} (a solver timeout: no claim)",
        scope=NO_CLAIM,
    )
