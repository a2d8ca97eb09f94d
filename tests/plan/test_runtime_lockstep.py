"""The runtime's plan rules (`metis_runtime.plan._rules`) against the model's
(`metis_model.plan`), on generated inputs: two implementations, one answer.

Validation verdicts, resolution (arguments, origins, refusals, missing
fillers, empty collections), batches, signatures, grounding, the canonical
request and the action an approval is bound to must agree; `metis conform`
compares them again on every real turn log.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_check._plan_generate import TOY_CATALOG
from metis_model import plan as model
from metis_model.plan._schema import type_errors
from metis_runtime.plan import _rules as runtime
from metis_trace import Framework
from metis_trace import canonical_digest

from ._strategies import frameworks
from ._strategies import json_value

CATALOG = {e.name: e for e in TOY_CATALOG}
outputs = st.dictionaries(
    st.integers(1, 10), json_value | st.lists(st.text("ab/", max_size=4), max_size=3), max_size=6
)
origins = st.sampled_from(["local", "phone", "request"])


@settings(max_examples=60)
@given(fw=frameworks(max_steps=12), cap=st.integers(-1, 20))
def test_validation_agrees(fw: Framework, cap: int) -> None:
    assert bool(runtime.validate(fw, CATALOG, cap)) == bool(model.validate(fw, CATALOG, cap))


@settings(max_examples=80)
@given(
    fw=frameworks(max_steps=8),
    done=outputs,
    hosts=st.dictionaries(st.integers(1, 10), origins),
    fillers=st.dictionaries(st.sampled_from(["title", "other"]), st.text(max_size=4)),
    targets=st.dictionaries(st.sampled_from(["path", "items", "to"]), st.text("ab/.", max_size=6)),
)
def test_resolution_agrees(
    fw: Framework,
    done: dict[int, Any],
    hosts: dict[int, str],
    fillers: dict[str, str],
    targets: dict[str, str],
) -> None:
    runtime_values = {"owner": "alice", "turn_id": "t1", "now": "2025-01-01T00:00:00"}
    for n, step in enumerate(fw.steps, start=1):
        info = CATALOG.get(step.tool)
        if info is None:
            continue
        m = model.resolve_step(
            step,
            n,
            info,
            model.ResolveContext(
                outputs=done,
                origins={k: hosts.get(k, "local") for k in done},
                runtime=runtime_values,
                fillers=fillers,
                targets=targets,
            ),
        )
        r = runtime.resolve(
            step,
            n,
            info,
            {k: runtime.Done(v, hosts.get(k, "local")) for k, v in done.items()},
            runtime=runtime_values,
            fillers=fillers,
            targets=targets,
        )
        assert (m.args, m.missing, m.failure is None) == (r.args, r.missing, r.refused is None), (
            step
        )
        assert m.refs == r.refs
        if m.args is not None:
            assert (m.origins, m.consumed, m.empty) == (r.origins, r.consumed, r.empty)
            assert model.condition_holds(step, done) == runtime.condition_met(
                step, {k: runtime.Done(v, "local") for k, v in done.items()}
            )


@given(fw=frameworks(max_steps=14))
def test_batches_agree(fw: Framework) -> None:
    assert [list(b) for b in model.batches(fw)] == runtime.batches(fw)


@given(
    fw=frameworks(max_steps=6),
    request=st.text("Reports/a.md notes x", max_size=30),
    targets=st.dictionaries(st.sampled_from(["path"]), st.sampled_from(["Reports/a.md", "x"])),
    epoch=st.integers(1, 3),
)
def test_reuse_checks_agree(
    fw: Framework, request: str, targets: dict[str, str], epoch: int
) -> None:
    assert model.current_signatures(fw, CATALOG, epoch) == runtime.signatures(fw, CATALOG, epoch)
    assert list(model.ungrounded(fw, CATALOG, request, targets)) == runtime.ungrounded(
        fw, CATALOG, request, targets
    )


@given(text=st.text(max_size=40))
def test_canonical_requests_agree(text: str) -> None:
    assert model.canonical_request(text) == runtime.canonical_request(text)


@given(args=st.dictionaries(st.sampled_from(["path", "to", "text"]), json_value, max_size=3))
def test_consent_binding_agrees(args: dict[str, Any]) -> None:
    for info in TOY_CATALOG:
        assert model.action_for("alice", "t1", info, args) == runtime.action(
            "alice", "t1", info, args
        )
        assert runtime.action("alice", "t1", info, args).args_digest == canonical_digest(args)


type_name = st.sampled_from(
    ["string", "integer", "number", "boolean", "array", "object", "null", "date"]
)
property_schemas = st.recursive(
    st.one_of(
        st.builds(lambda t: {"type": t}, type_name),
        st.builds(lambda ts: {"type": ts}, st.lists(type_name, min_size=1, max_size=3)),
        st.builds(
            lambda e: {"enum": e},
            st.lists(st.integers(0, 3) | st.sampled_from(["a", "b"]), min_size=1, max_size=3),
        ),
        st.just({"$ref": "#/$defs/Thing"}),
        st.just({"title": "Anything"}),
    ),
    lambda inner: st.builds(
        lambda key, branches: {key: branches},
        st.sampled_from(["anyOf", "oneOf"]),
        st.lists(inner, max_size=3),
    ),
    max_leaves=6,
)


@given(
    prop=property_schemas,
    value=json_value | st.floats(allow_nan=False) | st.sampled_from([1.5, 3, "a", None, True]),
    closed=st.booleans(),
    name=st.sampled_from(["a", "b"]),
)
def test_argument_types_agree(prop: dict[str, Any], value: Any, closed: bool, name: str) -> None:
    # Optional and union arguments as pydantic writes them (anyOf with a null
    # branch) included: the model's check and the runtime's give one verdict.
    schema = {"type": "object", "properties": {"a": prop}, "additionalProperties": not closed}
    fits_model = type_errors(schema, {name: value}) == []
    fits_runtime = runtime.schema_problem("t", schema, {name: value}) is None
    assert fits_model == fits_runtime, (schema, value)
