"""CHILD-4: the z3 spawn guard agrees with `guard_decision`, `admit` and `finish`,
its proof holds, and every weakened guard is refuted with a concrete input."""

from __future__ import annotations

import itertools
from pathlib import Path

import attrs
import pytest
import z3
from hypothesis import example
from hypothesis import given
from hypothesis import strategies as st

from metis_model._agents import GUARD_ORDER
from metis_model._agents import Admit
from metis_model._agents import GuardLimits
from metis_model._agents import GuardState
from metis_model._agents import Refusal
from metis_model._agents import RefusalCode
from metis_model._agents import SpawnRequest
from metis_model._agents import admit
from metis_model._agents import finish
from metis_model._agents import guard_decision
from metis_proofs import GUARD_ABLATIONS
from metis_proofs import GuardSystem
from metis_proofs import SymGuard
from metis_proofs import Verdict
from metis_proofs import _guard
from metis_proofs import _guard_induction
from metis_proofs import check_guard
from metis_proofs import concrete_decision
from metis_proofs import cvc5_answers
from metis_proofs import expected_answers
from metis_proofs import get_property
from metis_proofs import guard_z3
from metis_proofs import prove
from metis_proofs import prove_spawn_guard
from metis_proofs import z3_answers
from metis_proofs._guard_claim import guard_claim
from metis_proofs._guard_decode import GuardPathStep
from metis_proofs._guard_sym import CODE
from metis_proofs._guard_system import GuardParams
from metis_proofs._guard_system import GuardVars

CHILD_4 = get_property("CHILD-4")
OVERRIDES = [(False, ""), (True, ""), (False, "   "), (False, "needed twice")]


def _python(state: GuardState, request: SpawnRequest) -> RefusalCode | None:
    got = guard_decision(state, request)
    if isinstance(got, Admit):
        assert got.depth == request.depth
        return None
    return got.code


def _input(
    limits: GuardLimits,
    parent_depth: int,
    total: int,
    children: int,
    running: int,
    known: bool,
    override: tuple[bool, str],
) -> tuple[GuardState, SpawnRequest]:
    request = SpawnRequest(
        "p", parent_depth, "planner", "Plan it", force=override[0], rationale=override[1]
    )
    state = GuardState(
        limits,
        total,
        # other parents' counts must not matter
        {"p": children, "q": children + 7, "r": 0},
        frozenset(f"r{i}" for i in range(running)),
        frozenset({(request.agent, request.key[1]), ("reviewer", "x")})
        if known
        else frozenset({("planner", "other"), ("reviewer", request.key[1])}),
    )
    return state, request


# --- the decision function: z3 == Python -----------------------------------------


def test_z3_guard_equals_guard_decision_on_every_small_input() -> None:
    """Exhaustive: limits 0..1, counts and the parent's depth 0..2 (so every
    count is below, at and above its limit), known task or not, each way to
    override a duplicate: 7776 inputs."""
    seen: set[RefusalCode | None] = set()
    for lim in itertools.product(range(2), repeat=4):
        limits = GuardLimits(*lim)
        for counts in itertools.product(range(3), repeat=4):
            for known in (False, True):
                for override in OVERRIDES if known else OVERRIDES[:2]:
                    state, request = _input(limits, *counts, known, override)
                    expected = _python(state, request)
                    assert concrete_decision(state, request) == expected, (state, request)
                    seen.add(expected)
    assert seen == {None, *RefusalCode}


counts = st.integers(0, 6)
big = st.integers(-3, 10**9)


@given(
    st.tuples(big, big, big, big),
    st.tuples(st.integers(-3, 10**9), big, big, counts),
    st.tuples(st.integers(-2, 2), st.integers(-2, 2), st.integers(-2, 2), st.integers(-2, 2)),
    st.booleans(),
    st.sampled_from(OVERRIDES),
    st.booleans(),
)
def test_z3_guard_equals_guard_decision_on_large_values(
    limits: tuple[int, int, int, int],
    values: tuple[int, int, int, int],
    near: tuple[int, int, int, int],
    known: bool,
    override: tuple[bool, str],
    close: bool,
) -> None:
    """Large and negative limits and counts, often right next to each other."""
    depth, total, children, running = values
    if close:  # each count within 2 of its limit
        depth = limits[0] - 1 + near[0]
        total, children = limits[1] + near[1], limits[2] + near[2]
        running = max(0, min(limits[3] + near[3], 8))
    state, request = _input(GuardLimits(*limits), depth, total, children, running, known, override)
    assert concrete_decision(state, request) == _python(state, request)


def test_the_encoding_follows_guard_order_and_covers_every_code() -> None:
    assert set(GUARD_ORDER) == set(RefusalCode) == set(CODE.members)
    # A state breaking every check is refused with the first of GUARD_ORDER.
    state, request = _input(GuardLimits(0, 0, 0, 0), 0, 0, 0, 0, True, OVERRIDES[0])
    assert concrete_decision(state, request) is GUARD_ORDER[0] == _python(state, request)


# --- the ledger: z3 transitions == admit / finish ---------------------------------


@attrs.define
class _Run:
    """A Python run of the guard, mirrored step by step in `GuardSystem`."""

    state: GuardState
    depth_of: dict[str, int]
    deepest: int = 0
    spawned: int = 0


def _ids(names: set[str]) -> dict[str, int]:
    return {n: i for i, n in enumerate(sorted(names))}


def _abstract(
    run: _Run, ids: dict[str, int], s: GuardVars, watch: int
) -> tuple[z3.BoolRef, list[z3.BoolRef]]:
    """(the scalars of `s` equal the run's, the per-parent counts at every id)."""
    st_ = run.state
    lim = s.limits
    scalars = z3.And(
        lim.max_depth == st_.limits.max_depth,
        lim.max_total == st_.limits.max_total,
        lim.max_per_parent == st_.limits.max_per_parent,
        lim.max_concurrent == st_.limits.max_concurrent,
        s.watch == watch,
        s.total == st_.total,
        s.running == len(st_.running),
        s.tasks == len(st_.tasks),
        s.deepest == run.deepest,
    )
    reads = [s.per_parent[i] == st_.per_parent.get(name, 0) for name, i in ids.items()]
    return scalars, reads


spawn_op = st.tuples(
    st.just("spawn"),
    st.integers(0, 6),  # the parent: an index into the agents so far
    st.sampled_from(["planner", "reviewer"]),
    st.sampled_from(["a", "A  ", "b"]),
    st.sampled_from(OVERRIDES),
    st.booleans(),  # reuse a running agent id (the set absorbs it)
    st.integers(-1, 1),  # offset of the request's parent depth from the real one
)
finish_op = st.tuples(st.just("finish"), st.integers(0, 8))


# Every kind of step at least once: a new id and a reused running one, a known
# task admitted with force and with a rationale, a refused duplicate, a depth
# the parent does not have, the end of a running agent and of an unknown one,
# and a refusal with each limit.
SCRIPT = [
    ("spawn", 0, "planner", "a", OVERRIDES[0], False, 0),
    ("spawn", 0, "planner", "a", OVERRIDES[0], False, 0),  # duplicate: refused
    ("spawn", 0, "planner", "A  ", OVERRIDES[1], True, 0),  # forced, reused id
    ("spawn", 1, "planner", "a", OVERRIDES[3], False, 0),  # rationale, new id
    ("spawn", 1, "reviewer", "b", OVERRIDES[0], False, 1),  # parent's depth + 1
    ("finish", 1),
    ("finish", 7),
    ("spawn", 2, "reviewer", "b", OVERRIDES[2], False, -1),  # blank rationale
    ("finish", 2),
    ("spawn", 1, "reviewer", "a", OVERRIDES[0], True, 0),
    ("spawn", 0, "planner", "b", OVERRIDES[0], False, 0),
    ("spawn", 3, "planner", "b", OVERRIDES[1], False, 0),
]


@given(
    st.builds(GuardLimits, *[st.integers(0, 3) for _ in range(4)]),
    st.lists(st.one_of(spawn_op, finish_op), max_size=25),
    st.integers(0, 4),
)
@example(GuardLimits(2, 4, 2, 2), SCRIPT, 0)
@example(GuardLimits(3, 3, 3, 3), SCRIPT, 1)
@example(GuardLimits(1, 9, 9, 9), SCRIPT, 0)
@example(GuardLimits(9, 9, 9, 1), SCRIPT, 0)
@example(GuardLimits(9, 9, 1, 9), SCRIPT, 0)
@example(GuardLimits(9, 2, 9, 9), SCRIPT, 0)
def test_ledger_transitions_equal_admit_and_finish(
    limits: GuardLimits, program: list[tuple[object, ...]], watch: int
) -> None:
    """Every Python step (guard_decision, then admit if admitted; finish) is a
    step of `GuardSystem` whose post-state is forced to the Python one; every
    state is within limits (not `bad`) and the first one satisfies `init`."""
    system = GuardSystem()
    agents = [f"a{i}" for i in range(27)]  # the root, 25 spawns at most, and spare ids
    ids = _ids(set(agents))
    run = _Run(GuardState(limits), {"a0": 0})
    s0 = system.state("s0")
    init = z3.Solver()
    scalars, reads = _abstract(run, ids, s0, watch)
    starts = [system.starts_at_zero(s0, _params_for(system, "p", ids[a])) for a in agents]
    init.add(scalars, *reads, *starts)
    assert init.check(z3.Not(system.init(s0))) == z3.unsat
    for n, op in enumerate(program):
        s, p, t = system.state(f"s{n}"), system.params(f"p{n}"), system.state(f"t{n}")
        solver = z3.Solver()
        pre_scalars, pre_reads = _abstract(run, ids, s, watch)
        solver.add(pre_scalars, *pre_reads, system.trans(s, p, t))
        if op[0] == "spawn":
            _, parent_ix, agent, task, override, reuse, off = op
            assert isinstance(parent_ix, int) and isinstance(off, int)
            known_agents = sorted(run.depth_of)
            parent = known_agents[parent_ix % len(known_agents)]
            assert isinstance(override, tuple)
            force, rationale = override
            request = SpawnRequest(
                parent,
                run.depth_of[parent] + off,
                str(agent),
                str(task),
                force=bool(force),
                rationale=str(rationale),
            )
            running = sorted(run.state.running)
            agent_id = running[0] if reuse and running else f"a{run.spawned + 1}"
            solver.add(
                p.spawn,
                p.parent == ids[parent],
                p.parent_depth == request.parent_depth,
                p.known_task == (request.key in run.state.tasks),
                p.override == request.overrides_duplicate,
                p.fresh == (agent_id not in run.state.running),
            )
            decided = guard_decision(run.state, request)
            admitted = solver.check(system.decision(s, p).admitted)
            assert (admitted == z3.sat) == isinstance(decided, Admit), (run.state, request)
            if isinstance(decided, Admit):
                run.state = admit(run.state, request, agent_id)
                run.spawned += 1
                run.depth_of.setdefault(agent_id, request.depth)
                run.deepest = max(run.deepest, request.depth)
        else:
            index = op[1]
            assert isinstance(index, int)
            gone = f"a{index}"
            solver.add(z3.Not(p.spawn), p.was_running == (gone in run.state.running))
            run.state = finish(run.state, gone)
        post_scalars, post_reads = _abstract(run, ids, t, watch)
        # The z3 step is possible, and it forces exactly the Python post-state.
        assert solver.check() == z3.sat, op
        assert solver.check(z3.Not(z3.And(post_scalars, *post_reads))) == z3.unsat, op
        bad = z3.Solver()
        now_scalars, now_reads = _abstract(run, ids, s0, watch)
        bad.add(now_scalars, *now_reads)
        assert bad.check(system.bad(s0)) == z3.unsat, run.state


def _params_for(system: GuardSystem, name: str, parent: int) -> GuardParams:
    return attrs.evolve(system.params(name), parent=z3.IntVal(parent))


# --- the proof --------------------------------------------------------------------


def test_child4_is_proved_with_its_smt2_file(tmp_path: Path) -> None:
    result = prove("CHILD-4", tmp_path)
    assert result.verdict is Verdict.PROVED and result.holds, result
    assert result.method == "smt" and result.k == 1 and result.depth is None
    assert result.smt2 == str(tmp_path / "CHILD-4.smt2")
    path = Path(result.smt2)
    assert expected_answers(path) == ["unsat", "unsat", "unsat"]
    assert cvc5_answers(path, timeout_s=60) == ["unsat", "unsat", "unsat"]
    assert z3_answers(path) == ["unsat", "unsat", "unsat"]
    text = path.read_text()
    assert "forall" not in text and "as const" not in text  # quantifier-free, no K


def test_the_claim_holds_for_unbounded_integers_not_just_non_negative() -> None:
    g = SymGuard.fresh("any.")
    solver = z3.Solver()
    solver.add(z3.Not(guard_claim(g, guard_z3(g))))
    assert solver.check() == z3.unsat


def test_the_ledger_closes_by_1_induction_even_with_the_default_limits() -> None:
    proof = check_guard(limits=GuardLimits())
    assert (proof.claim, proof.system, proof.k) == ("unsat", "proved", 1)


def test_the_ledger_is_not_vacuous_every_limit_and_code_is_reachable() -> None:
    """With limits (2, 3, 2, 1), BMC from init reaches every count at its limit
    and a refusal with each code: the proof is about reachable states."""
    limits = GuardLimits(2, 3, 2, 1)
    system = GuardSystem(limits=limits)
    solver = z3.Solver()
    states = [system.state("r0")]
    params: list[GuardParams] = []
    solver.add(system.init(states[0]))
    for k in range(6):
        p, t = system.params(f"r{k}"), system.state(f"r{k + 1}")
        solver.add(system.trans(states[-1], p, t), system.starts_at_zero(states[0], p))
        params.append(p)
        states.append(t)
    last = states[-1]
    at_limit = [
        last.deepest == limits.max_depth,
        last.total == limits.max_total,
        last.per_parent[last.watch] == limits.max_per_parent,
        last.running == limits.max_concurrent,
    ]
    for goal in at_limit:
        assert solver.check(goal) == z3.sat, goal
    for code in RefusalCode:
        refused = [
            z3.And(p.spawn, z3.Not(d.admitted), d.code == CODE[code])
            for s, p in zip(states, params, strict=False)
            for d in [system.decision(s, p)]
        ]
        assert solver.check(z3.Or(refused)) == z3.sat, code


def test_unknown_is_never_proved(monkeypatch: pytest.MonkeyPatch) -> None:
    # every answer unknown: the claim's (`_guard`) and the ledger's (`_guard_induction`)
    monkeypatch.setattr(_guard, "_answer", lambda r: "unknown")
    monkeypatch.setattr(_guard_induction, "_answer", lambda r: "unknown")
    result = prove_spawn_guard(CHILD_4, None)
    assert result.verdict is Verdict.UNKNOWN and not result.holds
    tiny = prove_spawn_guard(CHILD_4, None, timeout_s=0.001)
    assert tiny.verdict in (Verdict.PROVED, Verdict.UNKNOWN)


# --- mutations: every weakened guard is refuted -----------------------------------


@pytest.mark.parametrize("name", list(GUARD_ABLATIONS))
def test_every_weakened_guard_is_refuted(name: str, tmp_path: Path) -> None:
    ablation = GUARD_ABLATIONS[name]
    result = prove_spawn_guard(CHILD_4, tmp_path, ablation=name)
    assert result.verdict is Verdict.REFUTED and not result.holds, result
    assert result.witness and "guard_decision" in result.witness
    assert result.smt2 is not None
    # The evidence file says the same thing to both solvers.
    path = Path(result.smt2)
    assert cvc5_answers(path, timeout_s=60) == expected_answers(path) == z3_answers(path)
    proof = check_guard(name)
    # The claim's counterexample is an input where the weakened guard and the
    # Python model disagree, and the model's answer is the spec's.
    assert proof.claim == "sat" and proof.claim_witness is not None
    state, request, weakened = proof.claim_witness
    assert weakened == concrete_decision(state, request, name)
    assert weakened != _python(state, request) == concrete_decision(state, request)
    assert state.total >= 0 and len(state.running) >= 0 and request.parent_depth >= 0
    if not ablation.breaks_limits:  # an order or duplicate slip: the counts still hold
        assert proof.system == "proved"
        return
    # A slip that lets a count past its limit: a path from the empty ledger.
    assert proof.system == "refuted" and proof.path is not None
    _replay_breaks_a_limit(proof.path)


def _replay_breaks_a_limit(path: tuple[GuardPathStep, ...]) -> None:
    """Replaying the weakened guard's choices through `admit`/`finish` breaks a
    limit at the last step, which the real `guard_decision` refuses."""
    assert path, "an empty path cannot break a limit"
    *before, last = path
    for step in before:  # up to the last step the real guard agrees
        if step.request is not None:
            assert step.admitted == isinstance(step.model, Admit), step
    assert last.request is not None and last.agent_id is not None
    assert last.admitted and isinstance(last.model, Refusal), last
    after = admit(last.before, last.request, last.agent_id)
    lim = after.limits
    assert (
        last.request.depth > lim.max_depth
        or after.total > lim.max_total
        or any(n > lim.max_per_parent for n in after.per_parent.values())
        or len(after.running) > lim.max_concurrent
    ), after


def test_a_late_concurrency_check_is_refuted_with_the_default_limits() -> None:
    """With the seed limits (4 running at once), a guard that checks one too
    late is caught by a 5-spawn path: four children running, and a fifth."""
    proof = check_guard("lenient-concurrency-limit", limits=GuardLimits())
    assert proof.system == "refuted" and proof.path is not None and proof.depth == 5
    assert all(s.request is not None for s in proof.path)
    last = proof.path[-1]
    assert isinstance(last.model, Refusal)
    assert last.model.code is RefusalCode.CONCURRENCY_LIMIT
    assert len(last.before.running) == 4
    _replay_breaks_a_limit(proof.path)


def test_unknown_ablation_names_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown guard ablation"):
        check_guard("nope")
