"""The agent loop as a z3 transition system (pySMT style: init / trans / bad).

Two layers share one state space:

* the *checker mirror*: for any abstract state and any event, the variable
  `viol` of the next state is the invariant ID that `metis_model.step` reports
  first for that event (or `ok`). It follows `step` (`_loop.py` and the
  handler modules it dispatches to) check by check, in the same order, and
  a Hypothesis test compares the two on concrete steps;
* the *protocol*: which events a correct runtime may emit (the guards of a
  nondeterministic runtime, like `simulate`). Ablation flags weaken a guard.

`bad` is "the checker reported X": `viol == X`. A step is only possible from
a state with `viol == ok`, so every path stops at its first divergence, just
as `check_trace` does. With `protocol=False` the system is the checker alone
and any event may happen; the tests use that to compare the mirror with the
Python model on states no correct runtime would reach.

Abstraction: a batch has at most `slots` calls (slots are reused by the next
batch), at most `jobs` background jobs are outstanding, queue keys are two
(a Bool), and the facts of a decision have `rule_slots` rules. Footprints are
`regions` abstract areas per call (read and written), enough to tell which
Safe call conflicts with which Queue call (an Exclusive call's conflicts are
caught by SCHED-1/3 first, so its footprint is not encoded). Hooks are what
the label says of them (the call is covered, this run was the last one it
needed, the hook is in force); the tool surface is a Bool per call. Turn
numbers, ids, timestamps and text live only in the conversion to a trace.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from types import MappingProxyType
from typing import Any
from typing import TypeAlias

import attrs
import z3

from metis_model._closure import _NEEDS_CANCEL
from metis_model._invariants import BY_ID
from metis_model._loop_state import _FOREGROUND
from metis_model._loop_state import ENABLED
from metis_model._loop_state import Phase
from metis_trace import EVENT_KINDS
from metis_trace import MUTATING_KINDS
from metis_trace import CallClass
from metis_trace import Decision
from metis_trace import EffectOutcome
from metis_trace import MetisModelError
from metis_trace import Mode
from metis_trace import ResultStatus
from metis_trace import RuleBehavior
from metis_trace import RunStatus
from metis_trace import ToolKind

from ._perm import DECISION
from ._perm import KIND
from ._perm import MODE
from ._perm import ROUTE
from ._perm import STAGE
from ._perm import SymFacts
from ._perm import child_mode_z3
from ._perm import has
from ._perm import mode_at_most_z3
from ._perm import resolve_z3
from ._perm import waitless
from ._sorts import ands
from ._sorts import finite_enum
from ._sorts import finite_names
from ._sorts import ors


class UnknownAblation(MetisModelError, ValueError):
    """An ablation name that the encoding does not define."""


# Each ablation weakens one guard of the protocol; the value is the invariant
# `check_trace` reports first on the shortest trace that the weakening allows.
ABLATIONS: Mapping[str, str] = MappingProxyType(
    {
        "no-preflight": "AUTH-2",
        "gate-skips-safe": "AUTH-1",
        "no-closure-repair": "CLOSE-5",
        "exclusive-as-safe": "SCHED-1",
        "child-gate-not-cloned": "CHILD-2",
        "retry-after-commit": "RETRY-1",
        "queue-not-fifo": "SCHED-2",
        "queue-edit-unkeyed": "SCHED-2",
        "footprint-blind": "SCHED-6",
        "stub-started-as-interrupted": "RETRY-3",
        "hooks-not-run": "CHILD-6",
    }
)

# Every ID the mirror can report: what `_loop.step` (and `spawn_violation`)
# report, except TRACE-1 (sequence numbers, timestamps, causal edges are
# concrete text that the conversion to a trace always gets right). A test
# scans `step`'s modules so that a new ID there cannot go unmirrored.
CHECKED: tuple[str, ...] = (
    "LOOP-1",
    "LOOP-2",
    "AUTH-1",
    "AUTH-2",
    "AUTH-3",
    "PERM-1",
    "PERM-2",
    "PERM-3",
    "PERM-4",
    "PERM-5",
    "PERM-6",
    "CLOSE-1",
    "CLOSE-2",
    "CLOSE-3",
    "CLOSE-4",
    "CLOSE-5",
    "CLOSE-6",
    "CLOSE-8",
    "SCHED-1",
    "SCHED-2",
    "SCHED-3",
    "SCHED-4",
    "SCHED-5",
    "SCHED-6",
    "CHILD-1",
    "CHILD-2",
    "CHILD-3",
    "CHILD-6",
    "RETRY-1",
    "RETRY-2",
    "RETRY-3",
)
# RETRY-4 is about a flag the abstraction drops (a commit written from an
# exit record): the model's check and its property tests cover it. AUTH-4
# reads paths, commands and rule texts (the header's settings against the
# call's input), which the abstraction drops too: `_derive` and its property
# and differential tests cover it.
NOT_MIRRORED: tuple[str, ...] = ("TRACE-1", "RETRY-4", "AUTH-4")
for _id in CHECKED:  # every mirrored ID is a real invariant
    BY_ID[_id]
OK = "ok"

PHASE = finite_enum(Phase)
CLS = finite_enum(CallClass)
OUT = finite_enum(EffectOutcome)
STATUS = finite_enum(ResultStatus)
RUN = finite_enum(RunStatus)
EVENT = finite_names("Event", EVENT_KINDS)
CHECK = finite_names("Check", (OK, *CHECKED))

# Per-slot fields: name -> (sort factory, canonical value after clearing).
_SLOT_BOOLS = (
    "inb",
    "decided",
    "settled",
    "appr",
    "key",
    "running",
    "started",
    "finished",
    "committed",
    "closed",
    "hp",
    "cov",  # a timeout's cancel covers it
    "surf",  # its tool is in the header's surface
    "hkpend",  # a hook that covers it has not run yet
    "vet",  # a hook vetoed it
)
REGIONS = 2  # abstract footprint areas: rd<i>_<r>, wr<i>_<r>
QUEUE_KEYS = 2  # a Queue call's key is a Bool: two keys per batch
_SLOT_ENUMS = {"dec": DECISION, "cls": CLS, "out": OUT}
_GLOBAL = {"phase": PHASE, "mode": MODE, "route": ROUTE, "hdef": DECISION, "viol": CHECK}
_FROZEN = ("mode", "route", "hdef")
# eff: effects started in the batch; canc: the batch was cancelled or
# interrupted; stsrc: and that stop explains an effect ending cancelled (a
# cancel of the whole batch, or an interrupt naming its source: SCHED-5).
_STATE_BOOLS = ("eff", "canc", "stsrc")


def _region_names(i: int) -> list[str]:
    return [f"{f}{i}_{r}" for f in ("rd", "wr") for r in range(REGIONS)]


@attrs.frozen
class LoopConfig:
    slots: int = 3
    jobs: int = 2
    rule_slots: int = 2
    ablations: frozenset[str] = frozenset()
    protocol: bool = True
    # Unboundedly many calls, jobs, queue keys and regions: per-call fields
    # are functions over the naturals and every "some / every call" is a
    # quantifier (`Slots`), the same encoding as the finite one otherwise.
    parametric: bool = False

    def __attrs_post_init__(self) -> None:
        unknown = sorted(self.ablations - set(ABLATIONS))
        if unknown:
            raise UnknownAblation(f"unknown ablation {unknown[0]!r}; valid: {', '.join(ABLATIONS)}")

    def ablated(self, name: str) -> bool:
        return name in self.ablations

    def bounds(self) -> str:
        """The abstraction bounds a proof in this system is limited to."""
        return (
            f"\u2264 {self.slots} calls, \u2264 {self.jobs} jobs, \u2264 {QUEUE_KEYS} queue keys, "
            f"\u2264 {self.rule_slots} rules, \u2264 {REGIONS} regions"
        )


# A call, job or region: a slot number (finite) or a z3 natural (parametric);
# `Any` because the encoding applies `<`, `+` and `==` to both alike.
Index: TypeAlias = Any


class Slots:
    """How the encoding ranges over calls, jobs and regions.

    Finite: `K` call slots, `J` job slots, `REGIONS` regions, and "some call"
    is an `Or` over them. Parametric: every natural number is a call (a job,
    a region), and "some call" is a quantifier over the naturals; the
    encoding's text is the same either way, so the two cannot drift apart."""

    def __init__(self, K: int, J: int, parametric: bool) -> None:
        self.K, self.J, self.parametric = K, J, parametric
        self._n = 0

    def _var(self) -> z3.ArithRef:
        self._n += 1
        return z3.Int(f"q!{self._n}")

    def _some(self, f: Callable[[Index], z3.BoolRef], lo: Index, hi: Index | None) -> z3.BoolRef:
        v = self._var()
        rng = [v >= lo] + ([] if hi is None else [v < hi])
        return z3.Exists([v], z3.And(*rng, f(v)))

    def _every(self, f: Callable[[Index], z3.BoolRef], lo: Index, hi: Index | None) -> z3.BoolRef:
        v = self._var()
        rng = [v >= lo] + ([] if hi is None else [v < hi])
        return z3.ForAll([v], z3.Implies(z3.And(*rng), f(v)))

    def _any(self, f: Callable[[Index], z3.BoolRef], n: int) -> z3.BoolRef:
        """Some index: any natural if parametric, else one below `n`."""
        if self.parametric:
            return self._some(f, 0, None)
        return ors([f(i) for i in range(n)])

    def any_call(self, f: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
        return self._any(f, self.K)

    def all_calls(self, f: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
        if self.parametric:
            return self._every(f, 0, None)
        return ands([f(i) for i in range(self.K)])

    def any_before(self, i: Index, f: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
        """Some call j < i."""
        if self.parametric:
            return self._some(f, 0, i)
        assert isinstance(i, int)
        return ors([f(j) for j in range(i)])

    def all_before(self, i: Index, f: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
        if self.parametric:
            return self._every(f, 0, i)
        assert isinstance(i, int)
        return ands([f(j) for j in range(i)])

    def any_other(self, i: Index, f: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
        """Some call j != i."""
        if self.parametric:
            return self.any_call(lambda j: z3.And(j != i, f(j)))
        return ors([f(j) for j in range(self.K) if j != i])

    def all_other(self, i: Index, f: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
        if self.parametric:
            return self.all_calls(lambda j: z3.Implies(j != i, f(j)))
        return ands([f(j) for j in range(self.K) if j != i])

    def any_region(self, f: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
        return self._any(f, REGIONS)

    def any_job(self, f: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
        return self._any(f, self.J)

    def before_done(self, i: Index, done: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
        """The call before i (if any) is done: decisions run in call order."""
        if self.parametric:
            assert not isinstance(i, int)
            return z3.Or(i == 0, done(i - 1))
        assert isinstance(i, int)
        return done(i - 1) if i > 0 else z3.BoolVal(True)


_SLOT_FIELDS = (*_SLOT_BOOLS, *_SLOT_ENUMS)
# Pair lemmas stated for i < j only (the rest: for every j != i).
_ORDERED_LEMMAS = frozenset(
    {"exclusive-barrier", "exclusive-after", "queue-fifo", "footprint-order"}
)
_REGION_FIELDS = ("rd", "wr")


class State:
    """The state variables of one step, by name (`inb1`, `job0`, `phase`);
    parametric: per-call fields are functions (`inb(i)`), `funcs` by field."""

    def __init__(
        self,
        values: Mapping[str, z3.ExprRef],
        slots: int,
        jobs: int,
        funcs: Mapping[str, z3.FuncDeclRef] | None = None,
        over: Slots | None = None,
    ) -> None:
        self.values = dict(values)
        self.slots = slots
        self.jobs = jobs
        self.funcs = dict(funcs or {})
        self.over = over or Slots(slots, jobs, parametric=False)

    def __getitem__(self, name: str) -> z3.ExprRef:
        return self.values[name]

    def b(self, field: str, i: Index) -> z3.BoolRef:
        if self.over.parametric:
            return self.funcs[field](i)
        return self.values[f"{field}{i}"]

    def e(self, field: str, i: Index) -> z3.ExprRef:
        return self.b(field, i)

    # Derived notions, named as in `_loop_state.Call`.
    def admitted(self, i: Index) -> z3.BoolRef:
        return self._decided_as(i, approved=True)

    def refused(self, i: Index) -> z3.BoolRef:
        return self._decided_as(i, approved=False)

    def _decided_as(self, i: Index, approved: bool) -> z3.BoolRef:
        """Admitted (`approved`) or refused: decided so outright (allow, deny),
        or asked and answered so."""
        return z3.And(
            self.b("decided", i),
            z3.Or(
                self.e("dec", i) == DECISION[Decision.ALLOW if approved else Decision.DENY],
                z3.And(
                    self.e("dec", i) == DECISION[Decision.ASK],
                    self.b("settled", i),
                    self.b("appr", i) if approved else z3.Not(self.b("appr", i)),
                ),
            ),
        )

    def done(self, i: Index) -> z3.BoolRef:
        """Decided, and its ask (if any) answered: preflight is over for it."""
        return z3.And(
            self.b("decided", i),
            z3.Or(self.e("dec", i) != DECISION[Decision.ASK], self.b("settled", i)),
        )

    def open(self, i: Index) -> z3.BoolRef:
        return z3.And(self.b("inb", i), z3.Not(self.b("closed", i)))

    def any_open(self) -> z3.BoolRef:
        return self.over.any_call(self.open)

    def any_running(self) -> z3.BoolRef:
        return self.over.any_call(lambda i: z3.And(self.b("inb", i), self.b("running", i)))

    def any_job(self) -> z3.BoolRef:
        return self.over.any_job(lambda j: self.b("job", j))

    def unfinished(self, i: Index) -> z3.BoolRef:
        """Admitted, and neither finished nor closed: what barriers wait for."""
        return z3.And(
            self.b("inb", i),
            self.admitted(i),
            z3.Not(self.b("finished", i)),
            z3.Not(self.b("closed", i)),
        )

    def is_cls(self, i: Index, cls: CallClass) -> z3.BoolRef:
        return self.e("cls", i) == CLS[cls]

    def region(self, field: str, i: Index, r: Index) -> z3.BoolRef:
        if self.over.parametric:
            return self.funcs[field](i, r)
        return self.values[f"{field}{i}_{r}"]

    def conflict(self, i: Index, j: Index) -> z3.BoolRef:
        """`footprints_conflict`: one is Safe and reads an area the other, a
        Queue call, writes (an Exclusive call's conflicts: SCHED-1/3)."""

        def reads_writes(a: Index, b: Index) -> z3.BoolRef:
            return z3.And(
                self.is_cls(a, CallClass.SAFE),
                self.is_cls(b, CallClass.QUEUE),
                self.over.any_region(
                    lambda r: z3.And(self.region("rd", a, r), self.region("wr", b, r))
                ),
            )

        return z3.Or(reads_writes(i, j), reads_writes(j, i))

    def may_have_happened(self, i: Index) -> z3.BoolRef:
        """RETRY-3: its effect started, and it is not Safe or it committed."""
        return z3.And(
            self.b("started", i),
            z3.Or(self.b("committed", i), z3.Not(self.is_cls(i, CallClass.SAFE))),
        )


@attrs.frozen
class Params:
    """The label of one step: the event kind and everything it carries."""

    values: Mapping[str, z3.ExprRef]
    facts: SymFacts
    funcs: Mapping[str, z3.FuncDeclRef] = attrs.field(factory=dict)

    def __getitem__(self, name: str) -> z3.ExprRef:
        return self.values[name]

    def at(self, field: str, i: Index) -> z3.BoolRef:
        """A per-call (`surf`, `cv`, ...) or per-region (`drd`) flag."""
        if self.funcs:
            return self.funcs[field](i)
        return self.values[f"{field}{i}"]

    def all_vars(self) -> list[z3.ExprRef]:
        out = list(self.values.values())
        f = self.facts
        out += [f.mode, f.kind, f.protected, f.secret, f.in_scope, f.transition]
        for r in f.rules:
            out += [r.present, r.behavior, r.source, r.recency]
        return out


_PARAM_BOOLS = (
    "dkey",
    "approved",
    "by_default",
    "committed",
    "turn_ok",
    "dup",
    "split",
    "retry",
    "valid",  # compaction: the transcript it left is provider-valid
    "inorder",
    "ids_known",  # results_sent / repair: every id is a call's of the batch
    "ids_inorder",  # ... and they are the calls' ids in call order
    "exact",
    "uextra",  # repair: `unknown` names a call it does not stub
    "occ_match",
    "tools_extra",
    "locked",
    "req_none",
    "vetoed",  # hook: this run vetoed the call
    "hdone",  # hook: after it, no hook that covers the call is left to run
    "hknown",  # hook: it is in force
    "scoped",  # cancel: it names the calls it covers
    "timeout",  # cancel: its cause is a timeout
    "limit_ok",  # cancel: it names calls of the batch past the limit each recorded
    # cancel, interrupt: its causes name a recorded source (a signal or stop
    # request; for a sink failure, the sink's error) no other stop used: an
    # abstract fact, as `limit_ok` is (SCHED-5; specs/proofs.md)
    "sourced",
    # decision: not a Queue edit call whose recorded writes its key does not
    # name (SCHED-2's key clause, `_interference.queue_key_problem`): an abstract
    # fact, as `sourced` is (specs/proofs.md)
    "keyed",
)
# Per slot: surf<i>, hneed<i> (assistant: in the surface, covered by a hook),
# cv<i> (cancel: names it), unk<i> (repair: stubs it unknown); per region:
# drd<r>, dwr<r> (decision: the footprint).
_PARAM_SLOT_BOOLS = ("surf", "hneed", "cv", "unk")
_PARAM_REGION_BOOLS = ("drd", "dwr")
_PARAM_INTS = ("slot", "jslot", "n")
_PARAM_ENUMS = {
    "ev": EVENT,
    "d": DECISION,
    "stage": STAGE,
    "dcls": CLS,
    "droute": ROUTE,
    "outcome": OUT,
    "status": STATUS,
    "rstatus": RUN,
    "parent_mode": MODE,
    "child_mode": MODE,
    "req": MODE,
}


def queue_edit_z3(cls: z3.ExprRef, kind: z3.ExprRef) -> z3.BoolRef:
    """`_interference.queue_edit`: the decisions SCHED-2's key clause applies to."""
    return z3.And(cls == CLS[CallClass.QUEUE], kind == KIND[ToolKind.EDIT])


def _val(value: z3.ExprRef | bool) -> z3.ExprRef:
    return z3.BoolVal(value) if isinstance(value, bool) else value


class _Chain:
    """Collects conditional updates per variable; builds If-chains at the end.

    Per-call (per-job, per-region) updates are given as functions of the
    index: finite, they are expanded into the slots' variables at once;
    parametric, they are kept and built for a quantified index."""

    def __init__(self, over: Slots) -> None:
        self.over = over
        self.cases: dict[str, list[tuple[z3.BoolRef, z3.ExprRef]]] = {}
        self.indexed: dict[str, list[tuple[Callable[..., z3.BoolRef], Callable[..., Any]]]] = {}

    def set(self, name: str, when: z3.BoolRef, value: z3.ExprRef | bool) -> None:
        self.cases.setdefault(name, []).append((when, _val(value)))

    def set_call(
        self, field: str, when: Callable[[Index], z3.BoolRef], value: Callable[[Index], Any]
    ) -> None:
        if self.over.parametric:
            self.indexed.setdefault(field, []).append((when, value))
        else:
            for i in range(self.over.K):
                self.set(f"{field}{i}", when(i), value(i))

    def set_job(self, when: Callable[[Index], z3.BoolRef], value: Callable[[Index], Any]) -> None:
        if self.over.parametric:
            self.indexed.setdefault("job", []).append((when, value))
        else:
            for j in range(self.over.J):
                self.set(f"job{j}", when(j), value(j))

    def set_region(
        self,
        field: str,
        when: Callable[[Index], z3.BoolRef],
        value: Callable[[Index, Index], Any],
    ) -> None:
        if self.over.parametric:
            self.indexed.setdefault(field, []).append((when, value))
        else:
            for i in range(self.over.K):
                for r in range(REGIONS):
                    self.set(f"{field}{i}_{r}", when(i), value(i, r))

    def build(self, name: str, current: z3.ExprRef) -> z3.ExprRef:
        out = current
        for when, value in reversed(self.cases.get(name, [])):
            out = z3.If(when, value, out)
        return out

    def build_at(self, field: str, current: z3.ExprRef, *index: Index) -> z3.ExprRef:
        """Parametric: the next value of `field` at a (quantified) index."""
        out = current
        for when, value in reversed(self.indexed.get(field, [])):
            out = z3.If(when(index[0]), _val(value(*index)), out)
        return out


def _first(checks: Sequence[tuple[z3.BoolRef, str]], otherwise: z3.ExprRef) -> z3.ExprRef:
    out = otherwise
    for cond, inv in reversed(checks):
        out = z3.If(cond, CHECK[inv], out)
    return out


class LoopSystem:
    """init / trans / bad over `State`s; see the module docstring."""

    def __init__(self, config: LoopConfig | None = None) -> None:
        self.config = config or LoopConfig()
        self.K = self.config.slots
        self.J = self.config.jobs
        self.over = Slots(self.K, self.J, self.config.parametric)
        self.parametric = self.config.parametric

    # --- variables -------------------------------------------------------

    def state_names(self) -> list[str]:
        names = [*_GLOBAL, *_STATE_BOOLS]
        for i in range(self.K):
            names += [f"{f}{i}" for f in _SLOT_BOOLS]
            names += [f"{f}{i}" for f in _SLOT_ENUMS]
            names += _region_names(i)
        names += [f"job{j}" for j in range(self.J)]
        return names

    def state(self, tag: str) -> State:
        values: dict[str, z3.ExprRef] = {}
        for name, fin in _GLOBAL.items():
            values[name] = fin.const(f"{name}@{tag}")
        for name in _STATE_BOOLS:
            values[name] = z3.Bool(f"{name}@{tag}")
        if self.parametric:
            N, B = z3.IntSort(), z3.BoolSort()
            funcs = {f: z3.Function(f"{f}@{tag}", N, B) for f in (*_SLOT_BOOLS, "job")}
            for f, fin in _SLOT_ENUMS.items():
                funcs[f] = z3.Function(f"{f}@{tag}", N, fin.sort)
            for f in _REGION_FIELDS:
                funcs[f] = z3.Function(f"{f}@{tag}", N, N, B)
            funcs["key"] = z3.Function(f"key@{tag}", N, N)  # any number of keys
            return State(values, self.K, self.J, funcs, self.over)
        for i in range(self.K):
            for f in _SLOT_BOOLS:
                values[f"{f}{i}"] = z3.Bool(f"{f}{i}@{tag}")
            for f, fin in _SLOT_ENUMS.items():
                values[f"{f}{i}"] = fin.const(f"{f}{i}@{tag}")
            for name in _region_names(i):
                values[name] = z3.Bool(f"{name}@{tag}")
        for j in range(self.J):
            values[f"job{j}"] = z3.Bool(f"job{j}@{tag}")
        return State(values, self.K, self.J, over=self.over)

    def params(self, tag: str) -> Params:
        values: dict[str, z3.ExprRef] = {}
        names = [*_PARAM_BOOLS]
        names += [f"{f}{i}" for f in _PARAM_SLOT_BOOLS for i in range(self.K)]
        names += [f"{f}{r}" for f in _PARAM_REGION_BOOLS for r in range(REGIONS)]
        for name in names:
            values[name] = z3.Bool(f"p.{name}@{tag}")
        for name in _PARAM_INTS:
            values[name] = z3.Int(f"p.{name}@{tag}")
        for name, fin in _PARAM_ENUMS.items():
            values[name] = fin.const(f"p.{name}@{tag}")
        facts = SymFacts.fresh(f"p.facts@{tag}.", self.config.rule_slots)
        if not self.parametric:
            return Params(values, facts)
        N, B = z3.IntSort(), z3.BoolSort()
        funcs = {
            f: z3.Function(f"p.{f}@{tag}", N, B) for f in (*_PARAM_SLOT_BOOLS, *_PARAM_REGION_BOOLS)
        }
        values["dkey"] = z3.Int(f"p.dkey@{tag}")
        return Params(values, facts, funcs)

    # --- init ------------------------------------------------------------

    def canonical(self, i: int) -> dict[str, z3.ExprRef]:
        out: dict[str, z3.ExprRef] = {f"{f}{i}": z3.BoolVal(False) for f in _SLOT_BOOLS}
        for f, fin in _SLOT_ENUMS.items():
            out[f"{f}{i}"] = fin[fin.members[0]]
        for name in _region_names(i):
            out[name] = z3.BoolVal(False)
        return out

    def canon(self, field: str) -> z3.ExprRef:
        """The value of a per-call field in a cleared slot."""
        if field in _SLOT_ENUMS:
            fin = _SLOT_ENUMS[field]
            return fin[fin.members[0]]
        if field == "key" and self.parametric:
            return z3.IntVal(0)
        return z3.BoolVal(False)

    def cleared(self, s: State, i: Index) -> list[z3.BoolRef]:
        """Call i's fields (all but `inb`, regions included) are canonical."""
        out = [s.b(f, i) == self.canon(f) for f in _SLOT_FIELDS if f != "inb"]
        if self.parametric:
            out.append(self.over.all_calls(lambda r: z3.Not(s.region("rd", i, r))))
            out.append(self.over.all_calls(lambda r: z3.Not(s.region("wr", i, r))))
        else:
            out += [z3.Not(s.region(f, i, r)) for f in _REGION_FIELDS for r in range(REGIONS)]
        return out

    def init(self, s: State) -> z3.BoolRef:
        parts = [
            s["phase"] == PHASE[Phase.READY],
            s["viol"] == CHECK[OK],
            z3.Not(s["eff"]),
            z3.Not(s["canc"]),
            z3.Not(s["stsrc"]),
        ]
        if self.parametric:
            parts.append(
                self.over.all_calls(lambda i: z3.And(z3.Not(s.b("inb", i)), *self.cleared(s, i)))
            )
            parts.append(self.over.all_calls(lambda j: z3.Not(s.b("job", j))))
            return z3.And(parts)
        for i in range(self.K):
            parts += [s[n] == v for n, v in self.canonical(i).items()]
        parts += [z3.Not(s.b("job", j)) for j in range(self.J)]
        return z3.And(parts)

    # --- bad -------------------------------------------------------------

    def bad(self, s: State, inv: str | None = None) -> z3.BoolRef:
        """`viol == inv`, or any violation when `inv` is None."""
        if inv is None:
            return s["viol"] != CHECK[OK]
        return s["viol"] == CHECK[inv]

    # --- trans -----------------------------------------------------------

    def trans(self, s: State, p: Params, t: State) -> z3.BoolRef:
        parts = [s["viol"] == CHECK[OK], self._wellformed(p), self._structural(s, p)]
        parts += [t[n] == s[n] for n in _FROZEN]
        if self.config.protocol:
            parts.append(self._protocol(s, p))
        parts.append(t["viol"] == self._monitor(s, p))
        upd = self._updates(s, p)
        if self.parametric:
            for name in (*_GLOBAL, *_STATE_BOOLS):
                if name not in _FROZEN and name != "viol":
                    parts.append(t[name] == upd.build(name, s[name]))
            for f in (*_SLOT_FIELDS, "job"):
                parts.append(
                    self.over.all_calls(lambda i, f=f: t.b(f, i) == upd.build_at(f, s.b(f, i), i))  # type: ignore[misc]
                )
            for f in _REGION_FIELDS:
                parts.append(
                    self.over.all_calls(
                        lambda i, f=f: self.over.all_calls(  # type: ignore[misc]
                            lambda r: t.region(f, i, r) == upd.build_at(f, s.region(f, i, r), i, r)
                        )
                    )
                )
            return z3.And(parts)
        for name in self.state_names():
            if name in _FROZEN or name == "viol":
                continue
            parts.append(t[name] == upd.build(name, s[name]))
        return z3.And(parts)

    def _ev(self, p: Params, kind: str) -> z3.BoolRef:
        return p["ev"] == EVENT[kind]

    def _at(self, p: Params, f: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
        """f(slot) for the slot the event names (False for a foreign slot;
        parametric, a foreign call is any natural not in the batch)."""
        if self.parametric:
            return z3.And(p["slot"] >= 0, f(p["slot"]))
        return ors([z3.And(p["slot"] == i, f(i)) for i in range(self.K)])

    def _found(self, s: State, p: Params) -> z3.BoolRef:
        return self._at(p, lambda i: s.b("inb", i))

    def _job_at(self, s: State, p: Params) -> z3.BoolRef:
        if self.parametric:
            return z3.And(p["jslot"] >= 0, s.b("job", p["jslot"]))
        return ors([z3.And(p["jslot"] == j, s.b("job", j)) for j in range(self.J)])

    def _wellformed(self, p: Params) -> z3.BoolRef:
        if self.parametric:  # no upper bounds: any call, job or batch size
            return z3.And(
                p["slot"] >= 0,
                p["jslot"] >= 0,
                p["n"] >= 0,
                z3.Implies(p["dup"], p["n"] >= 2),
            )
        return z3.And(
            p["slot"] >= 0,
            p["slot"] <= self.K,
            p["jslot"] >= 0,
            p["jslot"] <= self.J,
            p["n"] >= 0,
            p["n"] <= self.K,
            z3.Implies(self._ev(p, "handshake"), p["jslot"] < self.J),
            z3.Implies(p["dup"], p["n"] >= 2),
        )

    def _structural(self, s: State, p: Params) -> z3.BoolRef:
        """What every concrete event's label satisfies in its state (the
        abstraction computes these from the same facts): a hook run never makes
        hooks pending again; a cancel names only calls of the batch, some if it
        names its calls within a limit; a repair that stubs exactly the open
        calls and marks a closed or foreign one unknown marks one it does not stub;
        known ids of no calls are in order."""
        over = self.over
        parts = [
            z3.Implies(
                z3.And(self._ev(p, "hook"), self._at(p, lambda i: z3.Not(s.b("hkpend", i)))),
                p["hdone"],
            ),
            z3.Implies(
                z3.And(self._ev(p, "cancel"), p["scoped"], p["limit_ok"]),
                over.any_call(lambda i: p.at("cv", i)),
            ),
        ]
        parts.append(
            over.all_calls(
                lambda i: z3.Implies(z3.And(self._ev(p, "cancel"), p.at("cv", i)), s.b("inb", i))
            )
        )
        parts.append(
            over.all_calls(
                lambda i: z3.Implies(
                    z3.And(self._ev(p, "repair"), p["exact"], p.at("unk", i), z3.Not(s.open(i))),
                    p["uextra"],
                )
            )
        )
        # Only a Queue edit call can be unkeyed, and only by a write (which
        # is a Queue write: it has a region).
        parts.append(
            z3.Implies(
                z3.And(self._ev(p, "decision"), z3.Not(p["keyed"])),
                z3.And(
                    queue_edit_z3(p["dcls"], p.facts.kind),
                    over.any_region(lambda r: p.at("dwr", r)),
                ),
            )
        )
        # With no calls, ids that are all known are all of them, in order.
        parts.append(z3.Implies(z3.And(p["ids_known"], z3.Not(s.b("inb", 0))), p["ids_inorder"]))
        return z3.And(parts)

    def enabled_in_phase(self, phase: z3.ExprRef, ev: z3.ExprRef) -> z3.BoolRef:
        """LOOP-1's table, read from `_loop_state.ENABLED`."""
        return PHASE.table(phase, {ph: EVENT.is_in(ev, sorted(ENABLED[ph])) for ph in Phase})

    # --- the checker mirror ---------------------------------------------

    def _sched_checks(self, s: State, p: Params, i: Index) -> list[tuple[z3.BoolRef, str]]:
        """`_interference.interference` for starting slot i, in its order."""
        ex = CallClass.EXCLUSIVE
        over = self.over
        sched1 = over.any_other(
            i,
            lambda j: z3.And(
                s.b("inb", j),
                s.b("running", j),
                CLS.is_in(s.e("cls", j), _FOREGROUND),
                z3.Or(s.is_cls(i, ex), s.is_cls(j, ex)),
            ),
        )
        sched3 = over.any_before(
            i, lambda j: z3.And(s.unfinished(j), z3.Or(s.is_cls(i, ex), s.is_cls(j, ex)))
        )
        q = CallClass.QUEUE
        sched2 = z3.And(
            s.is_cls(i, q),
            over.any_other(
                i,
                lambda j: z3.And(
                    s.b("inb", j),
                    s.is_cls(j, q),
                    s.b("key", j) == s.b("key", i),
                    z3.Or(s.b("running", j), z3.And(j < i, s.unfinished(j))),
                ),
            ),
        )
        sched6 = over.any_other(
            i,
            lambda j: z3.And(
                s.b("inb", j),
                s.conflict(i, j),
                z3.Or(s.b("running", j), z3.And(j < i, s.unfinished(j))),
            ),
        )
        return [(sched1, "SCHED-1"), (sched3, "SCHED-3"), (sched2, "SCHED-2"), (sched6, "SCHED-6")]

    def _checks(self, s: State, p: Params) -> dict[str, list[tuple[z3.BoolRef, str]]]:

        def at(f: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
            return self._at(p, f)

        found = self._found(s, p)
        f = p.facts
        res = resolve_z3(f)
        d = p["d"]
        status = p["status"]
        over = self.over
        unsettled = over.any_call(lambda i: z3.And(s.b("inb", i), z3.Not(s.done(i))))
        sched: list[tuple[z3.BoolRef, str]] = []
        for inv in ("SCHED-1", "SCHED-3", "SCHED-2", "SCHED-6"):
            cond = self._at(
                p,
                lambda i, inv=inv: dict((v, c) for c, v in self._sched_checks(s, p, i))[inv],  # type: ignore[misc]
            )
            sched.append((cond, inv))
        completed = p["rstatus"] == RUN[RunStatus.COMPLETED]
        ended_cancelled = p["outcome"] == OUT[EffectOutcome.CANCELLED]
        deny = DECISION[Decision.DENY]
        covered = over.any_call(
            lambda i: z3.And(p.at("cv", i), z3.Not(z3.And(s.b("inb", i), s.b("running", i))))
        )
        cancel_bad = z3.Or(
            z3.And(z3.Not(p["timeout"]), p["scoped"]),
            z3.And(z3.Not(p["timeout"]), z3.Not(p["sourced"])),
            z3.And(p["timeout"], z3.Or(z3.Not(p["scoped"]), z3.Not(p["limit_ok"]), covered)),
        )
        stubs_bad = z3.Or(
            p["uextra"],
            over.any_call(lambda i: z3.And(s.open(i), p.at("unk", i) != s.may_have_happened(i))),
        )
        return {
            "turn_start": [(z3.Not(p["turn_ok"]), "LOOP-1")],
            "compaction": [
                (p["split"], "CLOSE-6"),
                (s.any_open(), "CLOSE-6"),
                # while streaming, only the overflow retry may cut the context
                (z3.And(s["phase"] == PHASE[Phase.STREAMING], z3.Not(p["retry"])), "LOOP-1"),
                (z3.Not(p["valid"]), "CLOSE-8"),
            ],
            "hook": [
                (z3.Not(found), "LOOP-1"),
                (z3.Not(p["hknown"]), "CHILD-6"),
                (at(lambda i: s.b("decided", i)), "CHILD-6"),
            ],
            "request": [(s.any_open(), "CLOSE-2")],
            "assistant": [(p["dup"], "LOOP-1")],
            "decision": [
                (z3.Not(found), "LOOP-1"),
                (at(lambda i: s.b("decided", i)), "LOOP-1"),
                (z3.And(has(f, RuleBehavior.DENY), d != DECISION[Decision.DENY]), "PERM-2"),
                (z3.And(z3.Or(f.protected, f.secret), d == DECISION[Decision.ALLOW]), "PERM-3"),
                (
                    z3.And(
                        f.mode == MODE[Mode.PLAN],
                        KIND.is_in(f.kind, MUTATING_KINDS),
                        d != DECISION[Decision.DENY],
                    ),
                    "PERM-4",
                ),
                (z3.And(f.mode == MODE[Mode.DONT_ASK], d == DECISION[Decision.ASK]), "PERM-5"),
                (z3.Not(z3.And(res.decision == d, res.stage == p["stage"])), "PERM-1"),
                (z3.Not(p["keyed"]), "SCHED-2"),  # its key clause, before AUTH-4 (not mirrored)
                (at(lambda i: z3.And(s.b("vet", i), d != deny)), "CHILD-6"),
                (
                    at(lambda i: z3.And(z3.Not(s.b("vet", i)), d != deny, s.b("hkpend", i))),
                    "CHILD-6",
                ),
            ],
            "ask_resolved": [
                (z3.Not(found), "LOOP-1"),
                (
                    at(
                        lambda i: z3.Or(
                            z3.Not(s.b("decided", i)),
                            s.e("dec", i) != DECISION[Decision.ASK],
                            s.b("settled", i),
                        )
                    ),
                    "LOOP-1",
                ),
                (
                    z3.And(
                        at(lambda i: s.b("hp", i)),
                        z3.Or(
                            z3.Not(p["by_default"]),
                            p["approved"] != (s["hdef"] == DECISION[Decision.ALLOW]),
                        ),
                    ),
                    "PERM-6",
                ),
            ],
            "effect_start": [
                (z3.Not(found), "AUTH-1"),
                (at(lambda i: s.b("committed", i)), "RETRY-1"),
                (at(lambda i: z3.Not(s.admitted(i))), "AUTH-1"),
                (at(lambda i: z3.Not(s.b("surf", i))), "AUTH-3"),
                (at(lambda i: z3.Or(s.b("running", i), s.b("closed", i))), "LOOP-1"),
                (s["canc"], "SCHED-5"),
                (z3.And(z3.Not(s["eff"]), unsettled), "AUTH-2"),
                *sched,
            ],
            "commit": [
                (z3.Not(found), "LOOP-1"),
                (at(lambda i: z3.Or(z3.Not(s.b("running", i)), s.b("committed", i))), "LOOP-1"),
            ],
            "effect_end": [
                (z3.Not(found), "LOOP-1"),
                (at(lambda i: z3.Not(s.b("running", i))), "LOOP-1"),
                (p["outcome"] == OUT[EffectOutcome.DETACHED], "LOOP-1"),
                (
                    z3.And(
                        p["outcome"] == OUT[EffectOutcome.UNKNOWN],
                        s["phase"] != PHASE[Phase.INTERRUPTED],
                    ),
                    "LOOP-1",
                ),
                (at(lambda i: s.b("committed", i) != p["committed"]), "RETRY-2"),
                (
                    at(
                        lambda i: z3.Or(
                            z3.And(s.b("cov", i), z3.Not(p["committed"]), z3.Not(ended_cancelled)),
                            z3.And(ended_cancelled, z3.Not(s.b("cov", i)), z3.Not(s["stsrc"])),
                        )
                    ),
                    "SCHED-5",
                ),
            ],
            "handshake": [
                (z3.Not(found), "LOOP-1"),
                (
                    at(
                        lambda i: z3.Or(
                            z3.Not(s.is_cls(i, CallClass.BACKGROUND)), z3.Not(s.b("running", i))
                        )
                    ),
                    "SCHED-4",
                ),
                (self._job_at(s, p), "SCHED-4"),
            ],
            "job_done": [(z3.Or(z3.Not(self._job_at(s, p)), z3.Not(p["occ_match"])), "SCHED-4")],
            "result": [
                (z3.Not(found), "CLOSE-4"),
                (at(lambda i: s.b("closed", i)), "CLOSE-1"),
                (
                    z3.And(
                        s["phase"] == PHASE[Phase.RESUMED],
                        at(lambda i: z3.Not(s.b("committed", i))),
                    ),
                    "RETRY-2",
                ),
                (
                    z3.And(
                        STATUS.is_in(status, _NEEDS_CANCEL),
                        z3.Not(s["canc"]),
                        z3.Not(
                            z3.And(
                                status == STATUS[ResultStatus.CANCELLED],
                                at(lambda i: s.b("cov", i)),
                            )
                        ),
                    ),
                    "SCHED-5",
                ),
                (at(lambda i: s.b("running", i)), "LOOP-1"),
                (
                    z3.And(
                        status == STATUS[ResultStatus.OK],
                        at(lambda i: z3.Not(s.b("finished", i))),
                    ),
                    "LOOP-1",
                ),
                (
                    z3.And(
                        status == STATUS[ResultStatus.DENIED],
                        at(lambda i: z3.Not(s.refused(i))),
                    ),
                    "LOOP-1",
                ),
                (
                    z3.And(
                        status != STATUS[ResultStatus.CANCELLED],
                        at(
                            lambda i: z3.And(
                                s.b("finished", i),
                                s.e("out", i) == OUT[EffectOutcome.CANCELLED],
                                z3.Not(s.b("committed", i)),
                            )
                        ),
                    ),
                    "SCHED-5",
                ),
            ],
            "results_sent": [
                (s.any_open(), "CLOSE-2"),
                (z3.Not(p["inorder"]), "CLOSE-3"),
                (z3.Not(p["ids_known"]), "CLOSE-4"),
                (z3.Not(p["ids_inorder"]), "CLOSE-3"),
            ],
            "cancel": [(cancel_bad, "SCHED-5")],
            "repair": [
                (z3.Not(p["exact"]), "CLOSE-5"),
                # RETRY-2: a committed call is answered by its commit, never stubbed
                (over.any_call(lambda i: z3.And(s.open(i), s.b("committed", i))), "RETRY-2"),
                (stubs_bad, "RETRY-3"),
                (z3.Not(p["ids_known"]), "CLOSE-4"),
                (z3.Not(p["ids_inorder"]), "CLOSE-3"),
            ],
            "spawn": [
                (p["tools_extra"], "CHILD-1"),
                (
                    z3.And(p["parent_mode"] == MODE[Mode.PLAN], p["child_mode"] != MODE[Mode.PLAN]),
                    "CHILD-3",
                ),
                (z3.Not(mode_at_most_z3(p["child_mode"], p["parent_mode"])), "CHILD-2"),
                # a recorded request (req_none false): refused when more
                # permissive than the parent's, else granted as asked
                (
                    z3.And(
                        z3.Not(p["req_none"]),
                        p["parent_mode"] != MODE[Mode.PLAN],
                        z3.Or(
                            z3.Not(mode_at_most_z3(p["req"], p["parent_mode"])),
                            p["child_mode"] != p["req"],
                        ),
                    ),
                    "CHILD-2",
                ),
                (z3.And(p["child_mode"] == MODE[Mode.PLAN], p["locked"]), "CHILD-3"),
            ],
            "run_end": [
                (z3.And(completed, s["phase"] != PHASE[Phase.ANSWERED]), "LOOP-2"),
                (z3.And(completed, s.any_job()), "SCHED-4"),
                (
                    z3.And(p["rstatus"] != RUN[RunStatus.INTERRUPTED], s.any_open()),
                    "CLOSE-2",
                ),
            ],
        }

    def _monitor(self, s: State, p: Params) -> z3.ExprRef:
        """The ID `step` reports first for this event, or `ok`."""
        hpend = self.over.any_call(lambda i: s.b("hp", i))
        settles_it = z3.And(self._ev(p, "ask_resolved"), self._at(p, lambda i: s.b("hp", i)))
        per_kind = self._checks(s, p)
        body: z3.ExprRef = CHECK[OK]
        for kind in reversed(EVENT_KINDS):
            if per_kind.get(kind):
                body = z3.If(self._ev(p, kind), _first(per_kind[kind], CHECK[OK]), body)
        rerun = z3.And(
            self._ev(p, "effect_start"),
            PHASE.is_in(s["phase"], (Phase.INTERRUPTED, Phase.RESUMED)),
            self._at(p, lambda i: z3.And(s.b("inb", i), s.b("committed", i))),
        )
        pre = [
            (z3.And(hpend, z3.Not(settles_it)), "PERM-6"),
            (rerun, "RETRY-1"),
            (z3.Not(self.enabled_in_phase(s["phase"], p["ev"])), "LOOP-1"),
        ]
        return _first(pre, body)

    def _updates(self, s: State, p: Params) -> _Chain:
        c = _Chain(self.over)

        def ev(kind: str) -> z3.BoolRef:
            return self._ev(p, kind)

        def clear(when: z3.BoolRef) -> None:
            for f in _SLOT_FIELDS:
                c.set_call(f, lambda i: when, lambda i, f=f: self.canon(f))  # type: ignore[misc]
            for f in _REGION_FIELDS:
                c.set_region(f, lambda i: when, lambda i, r: False)

        def slot(kind: str) -> Callable[[Index], z3.BoolRef]:
            return lambda i: z3.And(ev(kind), p["slot"] == i)

        c.set("phase", ev("turn_start"), PHASE[Phase.PREPARING])
        c.set("phase", ev("request"), PHASE[Phase.STREAMING])
        retry = z3.And(ev("compaction"), s["phase"] == PHASE[Phase.STREAMING])
        c.set("phase", retry, PHASE[Phase.PREPARING])
        clear(ev("request"))
        answered = z3.And(ev("assistant"), p["n"] == 0)
        batch = z3.And(ev("assistant"), p["n"] > 0)
        c.set("phase", answered, PHASE[Phase.ANSWERED])
        c.set("phase", batch, PHASE[Phase.BATCH])
        c.set("eff", batch, False)
        c.set("canc", batch, False)
        c.set("stsrc", batch, False)
        fresh: dict[str, Callable[[Index], z3.BoolRef]] = {
            "inb": lambda i: p["n"] > i,
            "surf": lambda i: z3.And(p["n"] > i, p.at("surf", i)),
            "hkpend": lambda i: z3.And(p["n"] > i, p.at("hneed", i)),
        }
        for f in _SLOT_FIELDS:
            c.set_call(f, lambda i: batch, fresh.get(f, lambda i, f=f: self.canon(f)))  # type: ignore[misc]
        for f in _REGION_FIELDS:
            c.set_region(f, lambda i: batch, lambda i, r: False)
        hook, dec, ans = slot("hook"), slot("decision"), slot("ask_resolved")
        start, end, hs = slot("effect_start"), slot("effect_end"), slot("handshake")
        c.set_call("vet", hook, lambda i: z3.Or(s.b("vet", i), p["vetoed"]))
        c.set_call("hkpend", hook, lambda i: z3.Not(p["hdone"]))
        c.set_call("decided", dec, lambda i: True)
        c.set_call("dec", dec, lambda i: p["d"])
        c.set_call("cls", dec, lambda i: p["dcls"])
        c.set_call("key", dec, lambda i: p["dkey"])
        c.set_region("rd", dec, lambda i, r: p.at("drd", r))
        c.set_region("wr", dec, lambda i, r: p.at("dwr", r))
        c.set_call(
            "hp", dec, lambda i: z3.And(p["d"] == DECISION[Decision.ASK], waitless(p["droute"]))
        )
        c.set_call("settled", ans, lambda i: True)
        c.set_call("appr", ans, lambda i: p["approved"])
        c.set_call("hp", ans, lambda i: False)
        c.set_call("running", start, lambda i: True)
        c.set_call("started", start, lambda i: True)
        c.set_call("committed", slot("commit"), lambda i: True)
        c.set_call("running", end, lambda i: False)
        c.set_call("finished", end, lambda i: True)
        c.set_call("out", end, lambda i: p["outcome"])
        c.set_call(
            "cov", lambda i: z3.And(ev("cancel"), p["scoped"], p.at("cv", i)), lambda i: True
        )
        c.set_call("running", hs, lambda i: False)
        c.set_call("finished", hs, lambda i: True)
        c.set_call("out", hs, lambda i: OUT[EffectOutcome.OK])
        c.set_call("closed", slot("result"), lambda i: True)
        c.set("eff", ev("effect_start"), True)
        c.set_job(lambda j: z3.And(ev("handshake"), p["jslot"] == j), lambda j: True)
        c.set_job(lambda j: z3.And(ev("job_done"), p["jslot"] == j), lambda j: False)
        c.set("phase", ev("results_sent"), PHASE[Phase.READY])
        clear(ev("results_sent"))
        c.set("canc", z3.And(ev("cancel"), z3.Not(p["scoped"])), True)
        c.set("stsrc", z3.And(ev("cancel"), z3.Not(p["scoped"])), True)
        c.set("phase", ev("interrupt"), PHASE[Phase.INTERRUPTED])
        c.set("canc", ev("interrupt"), True)
        c.set("stsrc", z3.And(ev("interrupt"), p["sourced"]), True)
        c.set("phase", ev("resume"), PHASE[Phase.RESUMED])
        c.set("phase", ev("repair"), PHASE[Phase.READY])
        clear(ev("repair"))
        c.set("phase", ev("run_end"), PHASE[Phase.ENDED])
        return c

    # --- the protocol ----------------------------------------------------

    def preflight_done(self, s: State) -> z3.BoolRef:
        """Every call of the batch is decided and settled. (Stated for every
        call, not as "the last call is", which decisions in call order make
        equivalent: over unboundedly many calls the last one is no
        first-order notion, and the all-widths proof needs no induction.)"""
        return self.over.all_calls(lambda i: z3.Implies(s.b("inb", i), s.done(i)))

    def _may_start(self, s: State, p: Params, i: Index) -> z3.BoolRef:
        cfg = self.config
        cls, key = p["dcls"], p["dkey"]
        skips_gate = z3.And(
            z3.BoolVal(cfg.ablated("gate-skips-safe")),
            z3.Not(s.b("decided", i)),
            cls == CLS[CallClass.SAFE],
        )
        gate = z3.Or(s.admitted(i), skips_gate)
        known = z3.Implies(s.b("decided", i), z3.And(cls == s.e("cls", i), key == s.b("key", i)))
        error = s.e("out", i) == OUT[EffectOutcome.ERROR]
        may_retry = (
            error
            if cfg.ablated("retry-after-commit")
            else z3.And(error, z3.Not(s.b("committed", i)))
        )
        retry = z3.Or(z3.Not(s.b("finished", i)), may_retry)
        preflight = z3.Or(
            z3.BoolVal(cfg.ablated("no-preflight")), skips_gate, self.preflight_done(s)
        )

        def exclusive(j: Index | None) -> z3.BoolRef:
            if cfg.ablated("exclusive-as-safe"):
                return z3.BoolVal(False)
            if j is None:
                return cls == CLS[CallClass.EXCLUSIVE]
            return s.is_cls(j, CallClass.EXCLUSIVE)

        over = self.over

        def running(j: Index) -> z3.BoolRef:
            return z3.And(s.b("inb", j), s.b("running", j))

        barrier = z3.And(
            over.all_other(i, lambda j: z3.Not(z3.And(running(j), exclusive(j)))),
            over.all_before(i, lambda j: z3.Not(z3.And(s.unfinished(j), exclusive(j)))),
        )
        alone = z3.Implies(
            exclusive(None),
            z3.And(
                over.all_other(i, lambda j: z3.Not(running(j))),
                over.all_before(i, lambda j: z3.Not(s.unfinished(j))),
            ),
        )

        def same_queue(j: Index) -> z3.BoolRef:
            return z3.And(s.is_cls(j, CallClass.QUEUE), s.b("key", j) == key)

        fifo = (
            z3.BoolVal(True)
            if cfg.ablated("queue-not-fifo")
            else over.all_before(i, lambda j: z3.Not(z3.And(s.unfinished(j), same_queue(j))))
        )
        queue = z3.Implies(
            cls == CLS[CallClass.QUEUE],
            z3.And(over.all_other(i, lambda j: z3.Not(z3.And(running(j), same_queue(j)))), fifo),
        )
        # SCHED-6: a Safe call and a writer whose footprints conflict never
        # overlap and run in call order.
        footprint = (
            z3.BoolVal(True)
            if cfg.ablated("footprint-blind")
            else z3.And(
                over.all_other(i, lambda j: z3.Not(z3.And(running(j), s.conflict(i, j)))),
                over.all_before(i, lambda j: z3.Not(z3.And(s.unfinished(j), s.conflict(i, j)))),
            )
        )
        return z3.And(
            z3.Not(s.b("running", i)),
            z3.Not(s.b("closed", i)),
            s.b("surf", i),
            gate,
            known,
            retry,
            preflight,
            barrier,
            alone,
            queue,
            footprint,
        )

    def _result_ok(self, s: State, p: Params, i: int) -> z3.BoolRef:
        st = p["status"]
        fin, out = s.b("finished", i), s.e("out", i)
        by_status = {
            ResultStatus.OK: z3.And(fin, out == OUT[EffectOutcome.OK]),
            ResultStatus.ERROR: z3.And(fin, out == OUT[EffectOutcome.ERROR]),
            ResultStatus.DENIED: s.refused(i),
            ResultStatus.CANCELLED: z3.And(
                z3.Or(s["canc"], s.b("cov", i)), fin, out == OUT[EffectOutcome.CANCELLED]
            ),
            ResultStatus.SKIPPED: z3.And(s["canc"], z3.Not(fin)),
            # repair stubs, never the runtime's results
            ResultStatus.INTERRUPTED: z3.BoolVal(False),
            ResultStatus.UNKNOWN: z3.BoolVal(False),
        }
        return z3.And(
            z3.Not(s.b("closed", i)),
            z3.Not(s.b("running", i)),
            STATUS.table(st, by_status),
            z3.Implies(s["phase"] == PHASE[Phase.RESUMED], s.b("committed", i)),
        )

    def _protocol(self, s: State, p: Params) -> z3.BoolRef:
        """What a correct runtime may do next (the ablations weaken it)."""
        cfg = self.config

        def at(f: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
            return self._at(p, f)

        f = p.facts
        res = resolve_z3(f)
        bg = CallClass.BACKGROUND
        child, refused = child_mode_z3(
            s["mode"], p["req"], p["req_none"], cloned=not cfg.ablated("child-gate-not-cloned")
        )
        exact = (
            p["exact"] == z3.Not(s.any_open())  # it stubs nothing
            if cfg.ablated("no-closure-repair")
            else p["exact"]
        )
        # RETRY-3: a stub is unknown exactly when the call may have had an
        # effect (ablated: every stub says interrupted).
        told_apart = self.over.all_calls(
            lambda i: z3.Implies(
                s.open(i),
                p.at("unk", i)
                == (
                    z3.BoolVal(False)
                    if cfg.ablated("stub-started-as-interrupted")
                    else s.may_have_happened(i)
                ),
            )
        )
        deny = DECISION[Decision.DENY]
        enforced = (
            z3.BoolVal(True)
            if cfg.ablated("hooks-not-run")
            else z3.Not(
                at(lambda i: z3.And(z3.Not(s.b("vet", i)), p["d"] != deny, s.b("hkpend", i)))
            )
        )
        hdef_allows = s["hdef"] == DECISION[Decision.ALLOW]
        guards: dict[str, z3.BoolRef] = {
            "turn_start": p["turn_ok"],
            "compaction": z3.And(
                z3.Not(p["split"]),
                p["valid"],
                z3.Implies(s["phase"] == PHASE[Phase.STREAMING], p["retry"]),
            ),
            "hook": z3.And(
                at(lambda i: z3.And(s.b("inb", i), z3.Not(s.b("decided", i)), s.b("hkpend", i))),
                p["hknown"],
            ),
            "request": z3.BoolVal(True),
            "stream_repair": z3.BoolVal(True),
            "assistant": z3.Not(p["dup"]),
            "decision": z3.And(
                at(
                    lambda i: z3.And(
                        s.b("inb", i),
                        z3.Not(s.b("decided", i)),
                        self.over.before_done(i, s.done),
                    )
                ),
                f.mode == s["mode"],
                res.decision == p["d"],
                res.stage == p["stage"],
                p["droute"] == s["route"],
                z3.Not(at(lambda i: z3.And(s.b("vet", i), p["d"] != deny))),
                enforced,
                # SCHED-2's key clause: a Queue edit call writes only within its key
                z3.BoolVal(True) if cfg.ablated("queue-edit-unkeyed") else p["keyed"],
            ),
            "ask_resolved": z3.And(
                at(
                    lambda i: z3.And(
                        s.b("inb", i),
                        s.b("decided", i),
                        s.e("dec", i) == DECISION[Decision.ASK],
                        z3.Not(s.b("settled", i)),
                    )
                ),
                z3.If(
                    waitless(s["route"]),
                    z3.And(p["by_default"], p["approved"] == hdef_allows),
                    z3.Not(p["by_default"]),
                ),
            ),
            "effect_start": z3.And(
                z3.Not(s["canc"]),
                at(lambda i: z3.And(s.b("inb", i), self._may_start(s, p, i))),
            ),
            "commit": at(
                lambda i: z3.And(s.b("inb", i), s.b("running", i), z3.Not(s.b("committed", i)))
            ),
            "effect_end": z3.And(
                at(
                    lambda i: z3.And(
                        s.b("inb", i),
                        s.b("running", i),
                        z3.Implies(s.is_cls(i, bg), p["outcome"] != OUT[EffectOutcome.OK]),
                        p["committed"] == s.b("committed", i),
                        z3.Implies(
                            p["outcome"] == OUT[EffectOutcome.CANCELLED],
                            z3.Or(s["stsrc"], s.b("cov", i)),
                        ),
                        # a call its timeout named ends cancelled, unless it committed
                        z3.Implies(
                            z3.And(s.b("cov", i), z3.Not(p["committed"])),
                            p["outcome"] == OUT[EffectOutcome.CANCELLED],
                        ),
                    )
                ),
                z3.Implies(p["committed"], p["outcome"] != OUT[EffectOutcome.CANCELLED]),
                p["outcome"] != OUT[EffectOutcome.DETACHED],
                z3.Implies(
                    p["outcome"] == OUT[EffectOutcome.UNKNOWN],
                    s["phase"] == PHASE[Phase.INTERRUPTED],
                ),
            ),
            "handshake": z3.And(
                at(lambda i: z3.And(s.b("inb", i), s.b("running", i), s.is_cls(i, bg))),
                z3.Not(self._job_at(s, p)),
            ),
            "job_done": z3.And(self._job_at(s, p), p["occ_match"]),
            "result": at(lambda i: z3.And(s.b("inb", i), self._result_ok(s, p, i))),
            "results_sent": z3.And(
                z3.Not(s.any_open()), p["inorder"], p["ids_known"], p["ids_inorder"]
            ),
            # A timeout names the running calls past its limit; any other
            # cause covers the whole batch.
            "cancel": z3.If(
                p["timeout"],
                z3.And(
                    p["scoped"],
                    p["limit_ok"],
                    self.over.any_call(lambda i: p.at("cv", i)),
                    self.over.all_calls(
                        lambda i: z3.Implies(
                            p.at("cv", i), z3.And(s.b("inb", i), s.b("running", i))
                        )
                    ),
                ),
                z3.And(z3.Not(p["scoped"]), p["sourced"]),
            ),
            "interrupt": z3.BoolVal(True),
            # A stop's recorded sources: facts, enabled wherever `ENABLED` has them.
            "signal": z3.BoolVal(True),
            "stop_request": z3.BoolVal(True),
            "sink_error": z3.BoolVal(True),
            "resume": z3.Not(s.any_running()),
            "repair": z3.And(
                z3.Not(s.any_running()),
                # the committed calls were answered first, from the journal (RETRY-2)
                z3.Not(self.over.any_call(lambda i: z3.And(s.open(i), s.b("committed", i)))),
                exact,
                z3.Not(p["uextra"]),
                told_apart,
                p["ids_known"],
                p["ids_inorder"],
            ),
            "spawn": z3.And(
                p["parent_mode"] == s["mode"],
                z3.Not(p["tools_extra"]),
                z3.Implies(child == MODE[Mode.PLAN], z3.Not(p["locked"])),
                p["child_mode"] == child,
                z3.Not(refused),
            ),
            "run_end": z3.And(
                z3.Implies(
                    p["rstatus"] == RUN[RunStatus.COMPLETED],
                    z3.And(s["phase"] == PHASE[Phase.ANSWERED], z3.Not(s.any_job())),
                ),
                z3.Implies(p["rstatus"] != RUN[RunStatus.INTERRUPTED], z3.Not(s.any_open())),
                z3.Implies(
                    p["rstatus"] == RUN[RunStatus.INTERRUPTED],
                    s["phase"] == PHASE[Phase.INTERRUPTED],
                ),
            ),
        }
        missing = set(EVENT_KINDS) - set(guards)
        if missing:  # pragma: no cover - a new event kind needs a guard
            raise MetisModelError(f"protocol has no guard for {sorted(missing)}")
        hpend = self.over.any_call(lambda i: s.b("hp", i))
        return z3.And(
            self.enabled_in_phase(s["phase"], p["ev"]),
            z3.Implies(
                hpend,
                z3.And(self._ev(p, "ask_resolved"), at(lambda i: s.b("hp", i))),
            ),
            ors([z3.And(self._ev(p, k), g) for k, g in guards.items()]),
        )

    # --- candidate lemmas for k-induction --------------------------------

    def lemmas(self, s: State) -> list[tuple[str, z3.BoolRef]]:
        """Candidate state invariants; Houdini keeps the inductive subset.

        Each holds only in states the checker accepted (`viol == ok`)."""
        K = self.K
        out: list[tuple[str, z3.BoolRef]] = []
        # Parametric: one lemma per family, over every call i (and j != i;
        # j > i for the ordered families), named with the bound variables.
        li, lj = z3.Int("L.i"), z3.Int("L.j")
        calls: Sequence[Index] = [li] if self.parametric else range(K)
        pairs: Callable[[Index], Sequence[Index]] = (
            (lambda i: [lj]) if self.parametric else (lambda i: [j for j in range(K) if j != i])
        )

        def add(name: str, body: z3.BoolRef) -> None:
            body = z3.Implies(s["viol"] == CHECK[OK], body)
            if self.parametric and "L.j" in name:
                order = li < lj if name.split("-L.i")[0] in _ORDERED_LEMMAS else li != lj
                body = z3.ForAll([li, lj], z3.Implies(z3.And(li >= 0, lj >= 0, order), body))
            elif self.parametric and "L.i" in name:
                body = z3.ForAll([li], z3.Implies(li >= 0, body))
            out.append((name, body))

        quiet = (Phase.READY, Phase.PREPARING, Phase.STREAMING, Phase.ANSWERED)
        add("batch-has-calls", z3.Implies(s["phase"] == PHASE[Phase.BATCH], s.b("inb", 0)))
        add("sourced-stop-stopped", z3.Implies(s["stsrc"], s["canc"]))
        for i in calls:
            # per call, not for call 0 alone: without a bound, "call 0 is out
            # so every call is" would need induction over the prefix
            add(
                f"no-calls-when-quiet-{i}",
                z3.Implies(PHASE.is_in(s["phase"], quiet), z3.Not(s.b("inb", i))),
            )

            def b(f: str, i: Index = i) -> z3.BoolRef:
                return s.b(f, i)

            canon = ands(self.cleared(s, i))
            add(f"cleared-{i}", z3.Implies(z3.Not(b("inb")), canon))
            if self.parametric or i + 1 < K:
                add(f"prefix-{i}", z3.Implies(s.b("inb", i + 1), b("inb")))
                add(f"in-order-{i}", z3.Implies(s.b("decided", i + 1), s.done(i)))
            add(
                f"settled-ask-{i}",
                z3.Implies(
                    b("settled"), z3.And(b("decided"), s.e("dec", i) == DECISION[Decision.ASK])
                ),
            )
            add(f"approved-settled-{i}", z3.Implies(b("appr"), b("settled")))
            add(
                f"running-admitted-{i}",
                z3.Implies(b("running"), z3.And(s.admitted(i), z3.Not(b("closed")), s["eff"])),
            )
            add(
                f"finished-admitted-{i}", z3.Implies(b("finished"), z3.And(s.admitted(i), s["eff"]))
            )
            add(
                f"committed-started-{i}",
                z3.Implies(
                    b("committed"), z3.And(b("started"), z3.Or(b("running"), b("finished")))
                ),
            )
            add(f"running-started-{i}", z3.Implies(b("running"), b("started")))
            add(f"finished-started-{i}", z3.Implies(b("finished"), b("started")))
            add(
                f"started-ran-{i}",
                z3.Implies(b("started"), z3.And(z3.Or(b("running"), b("finished")), s["eff"])),
            )
            add(f"started-surface-{i}", z3.Implies(b("started"), b("surf")))
            add(f"covered-started-{i}", z3.Implies(b("cov"), b("started")))
            deny = DECISION[Decision.DENY]
            add(
                f"veto-denied-{i}",
                z3.Implies(z3.And(b("decided"), b("vet")), s.e("dec", i) == deny),
            )
            add(
                f"hooks-ran-{i}",
                z3.Implies(
                    z3.And(b("decided"), z3.Not(b("vet")), s.e("dec", i) != deny),
                    z3.Not(b("hkpend")),
                ),
            )
            add(f"eff-preflight-{i}", z3.Implies(z3.And(s["eff"], b("inb")), s.done(i)))
            add(
                f"running-phase-{i}",
                z3.Implies(b("running"), PHASE.is_in(s["phase"], (Phase.BATCH, Phase.INTERRUPTED))),
            )
            add(
                f"resumed-still-{i}",
                z3.Implies(s["phase"] == PHASE[Phase.RESUMED], z3.Not(b("running"))),
            )
            ask_open = z3.And(
                b("decided"), s.e("dec", i) == DECISION[Decision.ASK], z3.Not(b("settled"))
            )
            add(f"hp-exact-{i}", b("hp") == z3.And(ask_open, waitless(s["route"])))
            add(f"closed-decided-{i}", z3.Implies(b("closed"), z3.Or(b("decided"), s["canc"])))
            add(f"unfinished-not-closed-run-{i}", z3.Implies(b("running"), b("inb")))
            for j in pairs(i):
                add(f"hp-one-{i}-{j}", z3.Not(z3.And(b("hp"), s.b("hp", j))))
                add(
                    f"exclusive-alone-{i}-{j}",
                    z3.Implies(
                        z3.And(b("running"), s.is_cls(i, CallClass.EXCLUSIVE)),
                        z3.Not(s.b("running", j)),
                    ),
                )
                same_q = z3.And(
                    s.is_cls(i, CallClass.QUEUE),
                    s.is_cls(j, CallClass.QUEUE),
                    b("key") == s.b("key", j),
                )
                add(f"queue-alone-{i}-{j}", z3.Not(z3.And(same_q, b("running"), s.b("running", j))))
                add(
                    f"footprint-alone-{i}-{j}",
                    z3.Not(z3.And(s.conflict(i, j), b("running"), s.b("running", j))),
                )
                if self.parametric or i < j:
                    started_j = z3.Or(s.b("running", j), s.b("finished", j))
                    add(
                        f"exclusive-barrier-{i}-{j}",
                        z3.Implies(
                            z3.And(s.unfinished(i), s.is_cls(i, CallClass.EXCLUSIVE)),
                            z3.Not(started_j),
                        ),
                    )
                    add(
                        f"exclusive-after-{i}-{j}",
                        z3.Implies(
                            z3.And(s.b("running", j), s.is_cls(j, CallClass.EXCLUSIVE)),
                            z3.Not(s.unfinished(i)),
                        ),
                    )
                    add(
                        f"queue-fifo-{i}-{j}",
                        z3.Implies(z3.And(s.unfinished(i), same_q), z3.Not(started_j)),
                    )
                    add(
                        f"footprint-order-{i}-{j}",
                        z3.Implies(
                            z3.And(s.unfinished(i), s.conflict(i, j)), z3.Not(s.b("started", j))
                        ),
                    )
        return out


def ablation_names() -> tuple[str, ...]:
    return tuple(ABLATIONS)


def check_ablations(names: Iterable[str]) -> frozenset[str]:
    """Validate ablation names (raises `UnknownAblation` on the first bad one)."""
    return LoopConfig(ablations=frozenset(names)).ablations
