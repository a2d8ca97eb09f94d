"""The plan path's z3 encoding agrees with the Python model on concrete states,
every PLAN proof holds, every ablation is refuted with a counterexample turn
log that the checker rejects with its ID."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import z3
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_check import check_turn_log
from metis_check._plan_generate import TOY_CATALOG
from metis_model.plan import BINDING_FIELDS
from metis_model.plan import MISS_ORDER
from metis_model.plan import Act
from metis_model.plan import ActKind
from metis_model.plan import ExecState
from metis_model.plan import Failure
from metis_model.plan import Outcome
from metis_model.plan import Slot
from metis_model.plan import SlotStatus
from metis_model.plan import TurnPhase
from metis_model.plan import authorizes
from metis_model.plan import bad
from metis_model.plan import batches
from metis_model.plan import catalog_of
from metis_model.plan import probe
from metis_model.plan import protocol_step
from metis_model.plan import validate_tagged
from metis_proofs import cvc5_answers
from metis_proofs import expected_answers
from metis_proofs._plan import PLAN_ABLATIONS
from metis_proofs._plan import PLAN_PROPERTIES
from metis_proofs._plan import prove_plan
from metis_proofs._plan_cache import MISS
from metis_proofs._plan_cache import PATH
from metis_proofs._plan_cache import SymProbe
from metis_proofs._plan_cache import probe_z3
from metis_proofs._plan_cex import find_plan_counterexample
from metis_proofs._plan_consent import SymAction
from metis_proofs._plan_consent import authorizes_z3
from metis_proofs._plan_refs import REF_SLOTS
from metis_proofs._plan_refs import STEP_SLOTS
from metis_proofs._plan_refs import SymFramework
from metis_proofs._plan_refs import batches_z3
from metis_proofs._plan_refs import framework_z3
from metis_proofs._plan_turn import TurnSystem
from metis_proofs._plan_turn_bmc import concrete_act
from metis_proofs._plan_turn_bmc import concrete_turn_state
from metis_proofs._plan_turn_bmc import decode_turn_state
from metis_trace import TERMINAL_TOOL
from metis_trace import Action
from metis_trace import Framework
from metis_trace import FrameworkStep
from metis_trace import PlanPath
from metis_trace import Signatures
from metis_trace import read_turn_log
from tests.draw._svg import read_svg

CATALOG = catalog_of(TOY_CATALOG)


def _value(expr: z3.ExprRef, facts: list[z3.BoolRef]) -> z3.ExprRef:
    solver = z3.Solver()
    solver.add(*facts)
    assert solver.check() == z3.sat
    return solver.model().eval(expr, model_completion=True)


# --- the cache decision -----------------------------------------------------------------

sig = st.sampled_from(["a", "b"])


@given(
    se=sig,
    ce=st.none() | sig,
    sf=sig,
    cf=sig,
    sp=st.integers(1, 2),
    cp=st.integers(1, 2),
    grounded=st.booleans(),
    path=st.sampled_from([PlanPath.L0, PlanPath.L1]),
    champion=st.booleans(),
    ablation=st.sampled_from([None, "cache-ignores-signature", "cache-ignores-grounding"]),
)
def test_probe_z3_agrees_with_probe(
    se: str,
    ce: str | None,
    sf: str,
    cf: str,
    sp: int,
    cp: int,
    grounded: bool,
    path: PlanPath,
    champion: bool,
    ablation: str | None,
) -> None:
    stored, current = (
        Signatures(executors=se, families=sf, epoch=sp),
        Signatures(executors=ce, families=cf, epoch=cp),
    )
    expected = probe(stored, current, grounded=grounded, path=path, champion=champion)
    if (
        ablation == "cache-ignores-signature"
        and expected is not None
        and expected.value == "executor_changed"
    ):
        rest = probe(
            stored,
            current.model_copy(update={"executors": se}),
            grounded=grounded,
            path=path,
            champion=champion,
        )
        expected = rest
    if (
        ablation == "cache-ignores-grounding"
        and expected is not None
        and expected.value == "not_grounded"
    ):
        expected = probe(stored, current, grounded=True, path=path, champion=champion)
    code = {"a": 1, "b": 2}
    p = SymProbe.fresh("t.")
    facts = [
        p.stored_executors == code[se],
        p.current_executors == code.get(ce or "", 0),
        p.present == (ce is not None),
        p.stored_families == code[sf],
        p.current_families == code[cf],
        p.stored_epoch == sp,
        p.current_epoch == cp,
        p.grounded == grounded,
        p.path == PATH[path],
        p.champion == champion,
    ]
    hit, reason = probe_z3(p, ablation)
    assert z3.is_true(_value(hit, facts)) == (expected is None)
    if expected is not None:
        assert MISS.decode(_value(reason, facts)) is expected


def test_miss_reasons_in_order() -> None:
    assert [r.value for r in MISS_ORDER] == [
        "executor_removed",
        "executor_changed",
        "new_alternative",
        "epoch_changed",
        "not_grounded",
        "not_champion",
    ]


# --- consent -----------------------------------------------------------------------------


@given(
    a=st.lists(st.integers(0, 1), min_size=6, max_size=6),
    b=st.lists(st.integers(0, 1), min_size=6, max_size=6),
    used=st.booleans(),
)
def test_authorizes_z3_agrees_with_authorizes(a: list[int], b: list[int], used: bool) -> None:
    approval = Action(**{f: str(v) for f, v in zip(BINDING_FIELDS, a, strict=True)})
    action = Action(**{f: str(v) for f, v in zip(BINDING_FIELDS, b, strict=True)})
    sa, sb, su = SymAction.fresh("a."), SymAction.fresh("b."), z3.Bool("used")
    facts = (
        [x == v for x, v in zip(sa.fields, a, strict=True)]
        + [x == v for x, v in zip(sb.fields, b, strict=True)]
        + [su == used]
    )
    assert z3.is_true(_value(authorizes_z3(sa, sb, su), facts)) == authorizes(
        approval, action, used=used
    )


# --- frameworks -------------------------------------------------------------------------------


@st.composite
def small_frameworks(draw: st.DrawFn) -> Framework:
    n = draw(st.integers(1, STEP_SLOTS))
    steps = []
    for i in range(1, n + 1):
        if draw(st.integers(0, 6)) == 0 or (i == n and draw(st.booleans())):
            steps.append(FrameworkStep(tool=TERMINAL_TOOL))
            continue
        targets = draw(st.lists(st.integers(0, n + 1), max_size=REF_SLOTS))
        args: dict[str, Any] = {"folder": "n"}
        for j, t in enumerate(targets):
            args[f"r{j}"] = "${step" + str(t) + "}" if t > 0 else "x"
        steps.append(FrameworkStep(tool="find_items", args=args))
    return Framework(steps=tuple(steps))


def _encode(fw: Framework, f: SymFramework) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
    """The framework as a substitution of the symbolic one's variables."""
    pairs: list[tuple[z3.ExprRef, z3.ExprRef]] = [(f.n, z3.IntVal(len(fw.steps)))]
    for i in range(f.slots):
        step = fw.steps[i] if i < len(fw.steps) else None
        pairs.append((f.terminal[i], z3.BoolVal(step is not None and step.tool == TERMINAL_TOOL)))
        refs = (
            [] if step is None else [v for v in step.args.values() if str(v).startswith("${step")]
        )
        for j in range(REF_SLOTS):
            target = int(str(refs[j])[6:-1]) if j < len(refs) else 0
            pairs += [
                (f.present[i][j], z3.BoolVal(j < len(refs))),
                (f.target[i][j], z3.IntVal(target)),
            ]
    return pairs


_F = SymFramework.fresh("f.")
_CAP = z3.Int("f.cap")
_VALID = framework_z3(_F, _CAP)
_BATCH, _DEFS = batches_z3(_F)


@settings(max_examples=60)
@given(fw=small_frameworks(), cap=st.integers(-2, 20))
def test_framework_z3_and_batches_z3_agree_with_validate_and_batches(
    fw: Framework, cap: int
) -> None:
    catalog = dict(CATALOG)
    schema = {"type": "object", "properties": {}, "additionalProperties": True}
    catalog["find_items"] = CATALOG["find_items"].model_copy(
        update={"args_schema": schema, "paths": ()}
    )
    failures = [
        c for c, _ in validate_tagged(fw, catalog, cap) if c in ("shape", "cap", "reference")
    ]
    pairs = _encode(fw, _F)
    valid = z3.simplify(z3.substitute(_VALID, *pairs, (_CAP, z3.IntVal(cap))))
    assert z3.is_true(valid) == (not failures), valid
    if failures:
        return
    numbers = {s: k for k, group in enumerate(batches(fw)) for s in group}
    solver = z3.Solver()
    solver.add(z3.substitute(_DEFS, *pairs))
    solver.add(z3.Or([_BATCH[step] != k for step, k in numbers.items()]))
    assert solver.check() == z3.unsat


# --- the turn system ------------------------------------------------------------------------

slots = st.builds(
    Slot,
    mutating=st.booleans(),
    status=st.sampled_from(list(SlotStatus)),
    committed=st.booleans(),
    runs=st.integers(0, 2),
    repeated=st.booleans(),
)
states = st.builds(
    ExecState,
    slots=st.tuples(slots, slots, slots),
    phase=st.sampled_from(list(TurnPhase)),
    failure=st.sampled_from(list(Failure)),
    committed=st.integers(0, 2),
    recoveries=st.integers(0, 2),
    recovered_after_commit=st.booleans(),
    recovered_after_operational=st.booleans(),
)
acts = st.builds(
    Act,
    kind=st.sampled_from(list(ActKind)),
    slot=st.integers(0, 2),
    outcome=st.sampled_from(list(Outcome)),
    commit=st.booleans(),
)


@given(
    state=states,
    act=acts,
    ablation=st.sampled_from(
        [None, "resume-repeats-mutation", "recovery-after-commit", "recover-operational"]
    ),
)
def test_turn_system_agrees_with_protocol_step_and_bad(
    state: ExecState, act: Act, ablation: str | None
) -> None:
    system = TurnSystem(ablation)
    s, p, t = system.state("s"), system.params("p"), system.state("t")
    solver = z3.Solver()
    solver.add(concrete_turn_state(system, s, state), concrete_act(p, act), system.trans(s, p, t))
    expected = protocol_step(state, act, frozenset({ablation}) if ablation else frozenset())
    if expected is None:
        assert solver.check() == z3.unsat
    else:
        assert solver.check() == z3.sat
        assert decode_turn_state(solver.model(), t, 3) == expected
    for inv in ("PLAN-4", "PLAN-5", "PLAN-6"):
        assert z3.is_true(_value(system.bad(s, inv), [concrete_turn_state(system, s, state)])) == (
            inv in bad(state)
        )


# --- proofs and ablations -------------------------------------------------------------------


@pytest.mark.parametrize("prop", PLAN_PROPERTIES, ids=lambda p: p.invariant)
def test_plan_proofs_hold_and_cvc5_agrees(prop: Any, tmp_path: Path) -> None:
    result = prove_plan(prop.invariant, tmp_path)
    assert result.holds and result.verdict.value == "proved", result
    assert result.smt2 is not None
    assert cvc5_answers(Path(result.smt2), timeout_s=60) == expected_answers(Path(result.smt2))


@pytest.mark.parametrize("ablation", list(PLAN_ABLATIONS))
def test_each_ablation_is_refuted_with_a_counterexample_the_checker_rejects(
    ablation: str, tmp_path: Path
) -> None:
    inv = PLAN_ABLATIONS[ablation]
    assert prove_plan(inv, ablation=ablation).verdict.value == "refuted"
    cex = find_plan_counterexample(ablation)
    assert cex is not None and cex.confirmed, cex.report.first if cex else None
    files = cex.write(tmp_path)
    header, records, lines = read_turn_log(files.trace.read_text().splitlines())
    first = check_turn_log(header, records, line_of=lines).first
    assert first is not None and first.invariant == inv and first.line is not None
    assert "test_" in files.test.name and inv in files.test.read_text()
    if files.svg is not None:  # drawn by the one drawing module: the record, the legend
        picture = read_svg(files.svg.read_text())
        assert [e.id for e in picture.violating] == [f"r{first.index}"]
        assert "turn log record" in picture.legend and "the violating event" in picture.legend
