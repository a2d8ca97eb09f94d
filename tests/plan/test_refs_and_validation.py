"""References, resolution order, origins and validation (specs/plan.md)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_check._plan_generate import TOY_CATALOG
from metis_model.plan import CHECKS
from metis_model.plan import RefKind
from metis_model.plan import ResolveContext
from metis_model.plan import catalog_of
from metis_model.plan import placeholders
from metis_model.plan import resolve_step
from metis_model.plan import step_refs
from metis_model.plan import validate
from metis_model.plan import validate_tagged
from metis_trace import HARD_STEP_MAX
from metis_trace import TERMINAL_TOOL
from metis_trace import ErrorClass
from metis_trace import Framework
from metis_trace import FrameworkStep
from metis_trace import parse_framework

from ._strategies import frameworks
from ._strategies import json_value

CATALOG = catalog_of(TOY_CATALOG)


def _step(tool: str, **args: Any) -> FrameworkStep:
    return FrameworkStep(tool=tool, args=args)


def _fw(*steps: FrameworkStep, fillers: dict[str, Any] | None = None) -> Framework:
    return parse_framework(
        {
            "steps": [s.model_dump() for s in (*steps, _step(TERMINAL_TOOL))],
            "fillers": fillers or {},
        }
    )


# --- references ----------------------------------------------------------------


def test_the_four_forms_are_recognized() -> None:
    step = _step(
        "write_doc",
        from_step=2,
        path="${step1.path}",
        title="${RUNTIME:owner} / ${FILLER:title}",
    )
    kinds = [(r.kind, r.step, r.path, r.key) for r in step_refs(step)]
    assert kinds == [
        (RefKind.FROM_STEP, 2, (), ""),
        (RefKind.STEP, 1, ("path",), ""),
        (RefKind.RUNTIME, None, (), "owner"),
        (RefKind.FILLER, None, (), "title"),
    ]


@pytest.mark.parametrize(
    "text", ["${", "${step}", "${RUNTIME}", "${step0.x}", "${a b}", "x ${step1"]
)
def test_malformed_references_are_found(text: str) -> None:
    assert any(r.kind is RefKind.MALFORMED for r in placeholders(text))


def _ctx(**kw: Any) -> ResolveContext:
    return ResolveContext(**kw)


def test_whole_placeholders_keep_their_type_and_interpolation_is_text() -> None:
    step = _step("send_message", to="${step1.who}", text="n=${step1.n} ${step1.who}")
    ctx = _ctx(outputs={1: {"who": "ann", "n": 3}}, origins={1: "local"})
    res = resolve_step(step, 2, CATALOG["send_message"], ctx)
    assert res.failure is None and res.args == {"to": "ann", "text": "n=3 ann"}
    assert res.refs == (1,)


def test_substituted_data_is_never_read_again_as_a_reference() -> None:
    step = _step("send_message", to="${step1.who}", text="${step1.text}")
    ctx = _ctx(
        outputs={1: {"who": "${RUNTIME:owner}", "text": "hi ${FILLER:title}"}},
        origins={1: "local"},
        runtime={"owner": "alice"},
    )
    res = resolve_step(step, 2, CATALOG["send_message"], ctx)
    assert res.args == {"to": "${RUNTIME:owner}", "text": "hi ${FILLER:title}"}
    assert res.missing == ()


def test_an_explicit_user_target_wins_over_a_step_reference_not_over_a_literal() -> None:
    step = _step("write_doc", from_step=1, path="${step1.0}")
    ctx = _ctx(outputs={1: ["a.md"]}, origins={1: "local"}, targets={"path": "Reports/mine.md"})
    res = resolve_step(step, 2, CATALOG["write_doc"], ctx)
    assert res.args is not None and res.args["path"] == "Reports/mine.md"
    assert res.origins["path"] == "request"
    literal = _step("write_doc", from_step=1, path="Reports/other.md")
    assert resolve_step(literal, 2, CATALOG["write_doc"], ctx).args["path"] == "Reports/other.md"  # type: ignore[index]


def test_from_step_binds_the_collection_and_an_empty_one_skips_a_mutation() -> None:
    ctx = _ctx(outputs={1: []}, origins={1: "local"})
    write = resolve_step(
        _step("write_doc", from_step=1, path="R/x.md"), 2, CATALOG["write_doc"], ctx
    )
    assert write.args == {"sections": [], "path": "R/x.md"} and write.empty and write.consumed == 0
    read = resolve_step(_step("read_items", from_step=1), 2, CATALOG["read_items"], ctx)
    assert not read.empty and read.consumed == 0  # reading nothing is not a mutation


def test_references_to_steps_not_completed_are_refused() -> None:
    step = _step("send_message", to="x", text="${step2.path}")
    res = resolve_step(step, 3, CATALOG["send_message"], _ctx(outputs={1: {}}))
    assert res.failure is not None and res.failure[0] is ErrorClass.WRONG_ARGS
    assert "has not completed" in res.failure[1]


def test_a_missing_filler_is_asked_for_not_invented() -> None:
    step = _step("write_doc", from_step=1, path="R/x.md", title="${FILLER:title}")
    res = resolve_step(step, 2, CATALOG["write_doc"], _ctx(outputs={1: ["s"]}))
    assert res.args is None and res.missing == ("title",)
    filled = resolve_step(
        step, 2, CATALOG["write_doc"], _ctx(outputs={1: ["s"]}, fillers={"title": "T"})
    )
    assert (
        filled.args is not None and filled.args["title"] == "T" and filled.fillers == {"title": "T"}
    )


def test_data_from_another_host_never_becomes_a_local_path() -> None:
    # phone -> filter (keeps its input's origin) -> a local reader: refused.
    ctx = _ctx(
        outputs={1: ["/sdcard/a.jpg"], 2: ["/sdcard/a.jpg"]}, origins={1: "phone", 2: "phone"}
    )
    res = resolve_step(_step("read_items", from_step=2), 3, CATALOG["read_items"], ctx)
    assert res.failure is not None and res.failure[0] is ErrorClass.OUT_OF_SCOPE
    local = _ctx(outputs={1: ["notes/a.md"]}, origins={1: "local"})
    assert (
        resolve_step(_step("read_items", from_step=1), 2, CATALOG["read_items"], local).failure
        is None
    )


def _scribble(value: Any) -> None:
    """Change every list and dict inside `value` in place."""
    if isinstance(value, list):
        for v in value:
            _scribble(v)
        value.append("scribbled")
    elif isinstance(value, dict):
        for v in list(value.values()):
            _scribble(v)
        value["scribbled"] = True


@given(fw=frameworks(), outputs=st.dictionaries(st.integers(1, 10), json_value, max_size=5))
def test_resolution_never_changes_the_stored_plan(fw: Framework, outputs: dict[int, Any]) -> None:
    """Neither resolving nor changing what resolution returned touches the stored plan."""
    before = copy.deepcopy(fw.model_dump())
    ctx = _ctx(
        outputs=outputs,
        origins={k: "local" for k in outputs},
        runtime={"owner": "a"},
        fillers={"title": "T"},
    )
    for i, step in enumerate(fw.steps, start=1):
        executor = CATALOG.get(step.tool)
        if executor is not None:
            res = resolve_step(step, i, executor, ctx)
            if res.args is not None:
                _scribble({k: v for k, v in res.args.items() if k != executor.consumes})
    assert fw.model_dump() == before


# --- validation ------------------------------------------------------------------


def test_a_valid_framework_has_no_failures() -> None:
    fw = _fw(
        _step("find_items", folder="notes"),
        _step("read_items", from_step=1),
        _step("write_doc", from_step=2, path="Reports/a.md", title="${FILLER:title}"),
        fillers={"title": {"prompt": "t"}},
    )
    assert validate(fw, CATALOG, 8) == ()


@pytest.mark.parametrize(
    ("steps", "check", "cls"),
    [
        ([_step("nope")], "tool", ErrorClass.WRONG_TOOL),
        ([_step("read_items", from_step=1)], "reference", ErrorClass.WRONG_ARGS),
        (
            [_step("find_items", folder="n"), _step("read_items", items="${step3.x}")],
            "reference",
            ErrorClass.WRONG_ARGS,
        ),
        ([_step("find_items", folder="${RUNTIME:nope}")], "reference", ErrorClass.WRONG_ARGS),
        ([_step("find_items", folder="${FILLER:nope}")], "reference", ErrorClass.MISSING_INPUT),
        ([_step("find_items")], "arguments", ErrorClass.MISSING_INPUT),
        ([_step("send_message", text="hi")], "arguments", ErrorClass.MISSING_INPUT),
        ([_step("find_items", folder=3)], "arguments", ErrorClass.WRONG_ARGS),
        ([_step("find_items", folder="n", extra=1)], "arguments", ErrorClass.WRONG_ARGS),
        (
            [_step("find_items", folder="n"), _step("send_message", from_step=1, to="x", text="t")],
            "arguments",
            ErrorClass.WRONG_ARGS,
        ),
        (
            [_step("send_message", to="x", text="t"), _step("read_items", from_step=1)],
            "reference",
            ErrorClass.WRONG_ARGS,
        ),
        ([_step("find_items", folder="../../etc")], "scope", ErrorClass.OUT_OF_SCOPE),
        ([_step("find_items", folder="/etc")], "scope", ErrorClass.OUT_OF_SCOPE),
    ],
)
def test_each_check_reports_its_class(
    steps: list[FrameworkStep], check: str, cls: ErrorClass
) -> None:
    tagged = validate_tagged(_fw(*steps), CATALOG, 8)
    assert (check, cls) in [(c, f.cls) for c, f in tagged], tagged
    assert check in CHECKS


def test_the_terminal_must_end_the_framework_and_only_there() -> None:
    bad = parse_framework(
        {"steps": [{"tool": TERMINAL_TOOL}, {"tool": "find_items", "args": {"folder": "n"}}]}
    )
    checks = [c for c, _ in validate_tagged(bad, CATALOG, 8)]
    assert checks.count("shape") == 2


def test_the_cap_is_the_runtimes_and_never_above_the_hard_maximum() -> None:
    many = _fw(*[_step("find_items", folder="n") for _ in range(HARD_STEP_MAX + 1)])
    assert [c for c, _ in validate_tagged(many, CATALOG, 1000)] == ["cap"]
    four = _fw(*[_step("find_items", folder="n") for _ in range(4)])
    assert validate(four, CATALOG, 4) == () and [
        c for c, _ in validate_tagged(four, CATALOG, 3)
    ] == ["cap"]


def test_a_framework_cannot_carry_its_own_cap() -> None:
    with pytest.raises(ValueError, match="max_steps"):
        parse_framework({"steps": [{"tool": TERMINAL_TOOL}], "max_steps": 99})


@settings(max_examples=50)
@given(fw=frameworks(max_steps=18), cap=st.integers(-3, 40))
def test_valid_means_backward_references_and_within_the_cap(fw: Framework, cap: int) -> None:
    if validate(fw, CATALOG, cap):
        return
    body = [s for s in fw.steps if s.tool != TERMINAL_TOOL]
    assert len(body) <= min(cap, HARD_STEP_MAX)
    for i, step in enumerate(fw.steps, start=1):
        for ref in step_refs(step):
            assert ref.kind is not RefKind.MALFORMED
            if ref.step is not None:
                assert 1 <= ref.step < i and fw.steps[ref.step - 1].tool != TERMINAL_TOOL


@pytest.mark.parametrize(
    ("doc", "where"),
    [
        ({"steps": []}, "steps"),
        ({"steps": [{"args": {}}]}, "steps[0].tool"),
        ({"steps": [{"tool": "x", "when": {"nonempty": 1, "empty": 2}}]}, "steps[0].when"),
        ({"steps": [{"tool": "x", "args": []}]}, "steps[0].args"),
        (
            {"steps": [{"tool": "x"}], "fillers": {"f": {"prompt": "p", "role": "genius"}}},
            "fillers.f.role",
        ),
    ],
)
def test_malformed_frameworks_name_the_place(doc: dict[str, Any], where: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_framework(doc)
    assert str(info.value).startswith(where + ":"), info.value
