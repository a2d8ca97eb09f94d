"""The z3 loop system and the Python model cannot drift apart silently.

Python -> z3: every step of simulated (and mutated) traces, abstracted, gives
the same verdict in the z3 checker mirror as `metis_model.step`, the same next
state, and (for simulated runs) is a step the z3 protocol allows.
z3 -> Python: paths the solver picks, turned into traces, get the verdict
z3 predicts from `check_trace`: every checker ID is reached and reported
back, and random protocol paths are accepted.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from functools import cache

import attrs
import pytest
import z3
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_check import SimConfig
from metis_check import check_trace
from metis_check import simulate
from metis_model import step
from metis_model._loop_state import Divergence
from metis_model._loop_state import LoopState
from metis_model._loop_state import initial_state
from metis_proofs import CHECKED
from metis_proofs import LoopConfig
from metis_proofs import LoopSystem
from metis_proofs import bmc
from metis_proofs import decode_path
from metis_proofs import path_to_trace
from metis_proofs._abstraction import Abstraction
from metis_proofs._abstraction import assume
from metis_proofs._abstraction import assume_label
from metis_proofs._engine import Unrolling
from metis_proofs._system_fields import CHECK
from metis_proofs._system_fields import EVENT
from metis_proofs._system_fields import OK
from metis_trace import EVENT_KINDS
from metis_trace import AskResolved
from metis_trace import CallClass
from metis_trace import Cancel
from metis_trace import CancelCause
from metis_trace import Commit
from metis_trace import Decision
from metis_trace import DecisionEvent
from metis_trace import EffectEnd
from metis_trace import EffectOutcome
from metis_trace import EffectStart
from metis_trace import Handshake
from metis_trace import HookRun
from metis_trace import JobDone
from metis_trace import Repair
from metis_trace import Result
from metis_trace import ResultsSent
from metis_trace import ResultStatus
from metis_trace import RunEnd
from metis_trace import RunStatus
from metis_trace import TraceEvent
from metis_trace import TraceHeader

SIM = SimConfig(max_batch=3)


class OneStep:
    """A solver holding one symbolic step; concrete steps go in as assumptions."""

    def __init__(self, protocol: bool) -> None:
        self.system = LoopSystem(LoopConfig(protocol=protocol))
        self.s = self.system.state("pre")
        self.p = self.system.params("ev")
        self.t = self.system.state("post")
        self.solver = z3.Solver()
        self.solver.add(self.system.trans(self.s, self.p, self.t))


@cache
def mirror() -> OneStep:
    return OneStep(protocol=False)


@cache
def protocol() -> OneStep:
    return OneStep(protocol=True)


def _first_id(outcome: LoopState | Divergence) -> str:
    return outcome.invariant if isinstance(outcome, Divergence) else OK


def compare(header: TraceHeader, events: Sequence[TraceEvent], *, allowed: bool) -> int:
    """Replay through `step` and the z3 mirror side by side; returns how many
    steps were compared (the rest were not representable)."""
    one = mirror()
    proto = protocol() if allowed else None
    absn = Abstraction(one.system)
    absn.prepare(events)
    state = initial_state(
        header.mode, header.route, header.headless_default, frozenset(header.tools), header.hooks
    )
    compared = 0
    for e in events:
        pre = absn.state(state)
        label = absn.event(state, e)
        if pre is None or label is None:
            return compared
        outcome = step(state, e)
        want = _first_id(outcome)
        known = assume(one.s, pre) + assume_label(one.p, *label)
        got = one.solver.check(*known, one.t["viol"] == CHECK[want])
        assert got == z3.sat, f"z3 cannot report {want} for {e!r} in {state.describe()}"
        other = one.solver.check(*known, one.t["viol"] != CHECK[want])
        assert other == z3.unsat, (
            f"z3 may report {one.solver.model().eval(one.t['viol'])} instead of {want} "
            f"for {e!r} in {state.describe()}"
        )
        if isinstance(outcome, Divergence):
            return compared + 1
        absn.after(state, e, label[0])
        post = absn.state(outcome)
        if post is None:
            return compared + 1
        fixed = assume(one.t, post)
        assert one.solver.check(*known, z3.Not(z3.And(fixed))) == z3.unsat, (
            f"z3's next state differs from step's after {e!r}"
        )
        if proto is not None:
            admitted = proto.solver.check(
                *assume(proto.s, pre), *assume_label(proto.p, *label), *assume(proto.t, post)
            )
            assert admitted == z3.sat, f"the protocol forbids simulated {e!r} in {state.describe()}"
        compared += 1
        state = outcome
    return compared


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6))
def test_simulated_runs_agree_and_are_protocol_steps(seed: int) -> None:
    header, events = simulate(seed, SIM)
    assert compare(header, events, allowed=True) > 0


@pytest.mark.exhaustive
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**9))
def test_many_simulated_runs_agree(seed: int) -> None:
    header, events = simulate(seed, attrs.evolve(SIM, turns=6, p_cancel=0.3, p_interrupt=0.3))
    compare(header, events, allowed=True)


def test_agreement_covers_most_simulated_steps() -> None:
    total = compared = 0
    for seed in range(5):
        header, events = simulate(seed, SIM)
        total += len(events)
        compared += compare(header, events, allowed=True)
    assert compared / total > 0.6, (compared, total)


# Random single events at random points of a simulated run: the kinds of a
# tool batch (the trace's run of them, `hook` to `cancel`), a resumed run's
# repair, and the run's end.
_RANDOM_KINDS = (
    *EVENT_KINDS[EVENT_KINDS.index("hook") : EVENT_KINDS.index("cancel") + 1],
    "repair",
    "run_end",
)


def _random_event(
    rng: random.Random, seq: int, occs: list[str], jobs: list[str], ids_of: list[str]
) -> TraceEvent:
    occ = rng.choice([*occs, "9.9"]) if occs or rng.random() < 0.5 else "9.9"
    job = rng.choice([*jobs, "job-x"])
    kind = rng.choice(_RANDOM_KINDS)
    base = {"seq": seq, "t": 1e6 + seq}
    if kind == "decision":
        _, sim = simulate(rng.randrange(10**6), SIM)
        decisions = [x for x in sim if isinstance(x, DecisionEvent)]
        if decisions:
            d = rng.choice(decisions)
            return d.model_copy(
                update={
                    **base,
                    "occ": occ,
                    "causes": (),
                    "decision": rng.choice(list(Decision)) if rng.random() < 0.3 else d.decision,
                    "cls": rng.choice(list(CallClass)),
                }
            )
        kind = "result"
    if kind == "ask_resolved":
        return AskResolved(
            **base,
            occ=occ,
            approved=rng.random() < 0.5,
            resolver=rng.choice(["user", "headless-default"]),
        )
    if kind == "hook":
        return HookRun(
            **base,
            occ=occ,
            hook=rng.choice(["guard-shell", "audit", "x"]),
            vetoed=rng.random() < 0.5,
        )
    if kind == "effect_start":
        return EffectStart(**base, occ=occ)
    if kind == "commit":
        return Commit(**base, occ=occ, outcome=EffectOutcome.OK)
    if kind == "cancel":
        named = tuple(o for o in occs if rng.random() < 0.5)
        return Cancel(
            **base,
            turn=1,
            cause=rng.choice(list(CancelCause)),
            occs=named if rng.random() < 0.6 else (),
            limit_s=rng.choice([None, 0.0, 1e9]),
        )
    if kind == "effect_end":
        return EffectEnd(
            **base, occ=occ, outcome=rng.choice(list(EffectOutcome)), committed=rng.random() < 0.4
        )
    if kind == "handshake":
        return Handshake(**base, occ=occ, job=job)
    if kind == "job_done":
        return JobDone(**base, occ=occ, job=job, outcome=EffectOutcome.OK)
    if kind == "results_sent":
        shuffled = occs[:]
        rng.shuffle(shuffled)
        ids = list(ids_of)
        if rng.random() < 0.3:
            rng.shuffle(ids)
        if rng.random() < 0.2:
            ids.append("toolu_stray")
        return ResultsSent(**base, turn=1, occs=tuple(shuffled), call_ids=tuple(ids))
    if kind == "repair":
        stubbed = tuple(o for o in occs if rng.random() < 0.7)
        return Repair(
            **base,
            stubbed=stubbed,
            unknown=tuple(o for o in [*occs, "9.9"] if rng.random() < 0.3),
            call_ids=tuple(ids_of) if rng.random() < 0.8 else (),
        )
    if kind == "run_end":
        return RunEnd(**base, status=rng.choice(list(RunStatus)))
    return Result(**base, occ=occ, status=rng.choice(list(ResultStatus)))


def _mutated(seed: int, rseed: int) -> None:
    rng = random.Random(rseed)
    header, events = simulate(seed, SIM)
    cut = rng.randrange(len(events))
    prefix = events[:cut]
    state = initial_state(
        header.mode, header.route, header.headless_default, frozenset(header.tools), header.hooks
    )
    for e in prefix:
        outcome = step(state, e)
        assert not isinstance(outcome, Divergence)
        state = outcome
    extra = _random_event(
        rng, cut, [c.occ for c in state.calls], list(state.jobs), [c.call_id for c in state.calls]
    )
    compare(header, [*prefix, extra], allowed=False)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**6), st.integers(0, 10**6))
def test_mutated_events_get_the_same_verdict(seed: int, rseed: int) -> None:
    _mutated(seed, rseed)


@pytest.mark.exhaustive
@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10**9), st.integers(0, 10**9))
def test_many_mutated_events_get_the_same_verdict(seed: int, rseed: int) -> None:
    _mutated(seed, rseed)


def test_queue_edit_z3_is_the_models_queue_edit() -> None:
    """The decisions SCHED-2's key clause applies to, in z3 (`_system`'s
    structural constraint on an unkeyed label) and in the model."""
    from metis_model._interference import queue_edit
    from metis_proofs._perm import KIND
    from metis_proofs._system_fields import CLS
    from metis_proofs._system_terms import queue_edit_z3
    from metis_trace import Facts
    from metis_trace import Mode
    from metis_trace import ToolKind

    _, sim = simulate(0, SIM)
    d = next(x for x in sim if isinstance(x, DecisionEvent))
    for cls in CallClass:
        for kind in ToolKind:
            e = d.model_copy(update={"cls": cls, "facts": Facts(mode=Mode.DEFAULT, kind=kind)})
            got = z3.simplify(queue_edit_z3(CLS[cls], KIND[kind]))
            assert z3.is_true(got) == queue_edit(e), (cls, kind)


def test_queue_edits_writing_beyond_their_key_get_the_same_verdict() -> None:
    """SCHED-2's key clause in the abstraction: simulated runs whose Queue edit
    call also writes a file its key does not name (`SCHED_2_CLAUSES["key"]`)
    are labelled not `keyed` at that decision, where z3 and `step` both
    report SCHED-2."""
    from metis_check._mutate_sched import SCHED_2_CLAUSES
    from metis_model._interference import queue_key_problem

    reached = 0
    for seed in range(16):
        header, events = simulate(seed, SIM)
        broken = SCHED_2_CLAUSES["key"](list(events), random.Random(seed))
        if broken is None:
            continue
        index = next(
            i
            for i, (a, b) in enumerate(zip(events, broken, strict=True))
            if a != b and isinstance(b, DecisionEvent)
        )
        assert queue_key_problem(broken[index]) is not None
        first = check_trace(broken, header).first
        assert first is not None and (first.invariant, first.index) == ("SCHED-2", index)
        # every step up to the decision compared (its regions fit the abstraction)
        if compare(header, broken, allowed=False) == index + 1:
            reached += 1
    assert reached >= 4, reached


# z3 -> Python ----------------------------------------------------------


@pytest.mark.parametrize("inv", CHECKED)
def test_every_checker_id_z3_reaches_is_what_check_trace_reports(inv: str) -> None:
    system = LoopSystem(LoopConfig(protocol=False))
    run = bmc(system, [inv], 8, stop_at_first=True)
    assert inv in run.found, f"the mirror never reports {inv}"
    depth, model = run.found[inv]
    path = decode_path(model, run.unrolling, depth)
    header, events = path_to_trace(path, system.K)
    report = check_trace(events, header)
    assert report.first is not None and report.first.invariant == inv, report.first
    # at the first event the path's last step writes (a sourced interrupt or
    # cancel writes its source just before it: PERM-6 is then at the source)
    _, before = path_to_trace(attrs.evolve(path, steps=path.steps[:-1]), system.K)
    assert report.first.index == len(before)


@cache
def _protocol_paths(depth: int) -> tuple[LoopSystem, Unrolling]:
    system = LoopSystem(LoopConfig())
    path = Unrolling(system, z3.Solver())
    for _ in range(depth):
        path.extend()
    last = path.states[-1]
    path.solver.add(*[z3.Not(last.b("hp", i)) for i in range(system.K)])
    return system, path


PATH_LEN = 10


def _random_path(kinds: list[str], pick: list[bool]) -> None:
    system, path = _protocol_paths(PATH_LEN)
    wanted = [p["ev"] == EVENT[k] for p, k, on in zip(path.params, kinds, pick, strict=True) if on]
    while path.solver.check(*wanted) != z3.sat:
        core = {str(c) for c in path.solver.unsat_core()}
        # drop one conflicting wish (the latest) until the protocol can follow
        drop = max(i for i, w in enumerate(wanted) if str(w) in core) if core else len(wanted) - 1
        wanted = wanted[:drop] + wanted[drop + 1 :]
    zpath = decode_path(path.solver.model(), path)
    assert zpath.violation == OK
    header, events = path_to_trace(zpath, system.K)
    report = check_trace(events, header)
    assert report.ok, report.first
    # and the Python model agrees with the mirror at every step of the path
    compare(header, events, allowed=True)


kinds_ = st.lists(st.sampled_from(EVENT_KINDS), min_size=PATH_LEN, max_size=PATH_LEN)
picks_ = st.lists(st.booleans(), min_size=PATH_LEN, max_size=PATH_LEN)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kinds_, picks_)
def test_random_protocol_paths_are_accepted(kinds: list[str], pick: list[bool]) -> None:
    _random_path(kinds, pick)


@pytest.mark.exhaustive
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kinds_, picks_)
def test_many_random_protocol_paths_are_accepted(kinds: list[str], pick: list[bool]) -> None:
    _random_path(kinds, pick)


def test_the_protocol_can_take_every_event_kind() -> None:
    """Non-vacuity: the proofs are about a protocol that actually does things."""
    system = LoopSystem(LoopConfig())
    path = Unrolling(system, z3.Solver())
    for _ in range(8):
        path.extend()
    for kind in EVENT_KINDS:
        seen = z3.Or([p["ev"] == EVENT[kind] for p in path.params])
        assert path.solver.check(seen) == z3.sat, kind


def test_the_mirror_covers_every_id_the_checker_reports() -> None:
    import ast
    import re
    from pathlib import Path

    import metis_model
    from metis_proofs._system_fields import NOT_MIRRORED

    root = Path(metis_model.__file__).parent
    reported: set[str] = set()
    # `step` and every module its handlers live in (the `_HANDLERS` table).
    for name in (
        "_loop.py",
        "_loop_state.py",
        "_scheduler.py",
        "_interference.py",
        "_closure.py",
        "_resume.py",
        "_decisions.py",
        "_children.py",
    ):
        for node in ast.walk(ast.parse((root / name).read_text())):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and re.fullmatch(r"[A-Z]+-\d+", node.value)
            ):
                reported.add(node.value)
    assert reported - set(NOT_MIRRORED) <= set(CHECKED), reported - set(CHECKED)
