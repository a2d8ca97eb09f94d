"""Hypothesis strategies for frameworks, contexts and catalogs (tests/plan)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from metis_check._plan_generate import TOY_CATALOG
from metis_trace import TERMINAL_TOOL
from metis_trace import Filler
from metis_trace import Framework
from metis_trace import FrameworkStep

TOOLS = [e.name for e in TOY_CATALOG]
json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.text(max_size=6),
    st.sampled_from(["${RUNTIME:owner}", "${step1}"]),
)
json_value = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text("abcxyz", max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def references(draw: st.DrawFn, index: int) -> str:
    n = draw(st.integers(1, max(1, index + 1)))
    kind = draw(st.sampled_from(["step", "runtime", "filler", "bad"]))
    if kind == "step":
        path = draw(st.lists(st.sampled_from(["path", "text", "0", "items"]), max_size=2))
        return "${step" + str(n) + "".join("." + p for p in path) + "}"
    if kind == "runtime":
        return (
            "${RUNTIME:" + draw(st.sampled_from(["owner", "turn_id", "nope", "target.path"])) + "}"
        )
    if kind == "filler":
        return "${FILLER:" + draw(st.sampled_from(["title", "other"])) + "}"
    return draw(st.sampled_from(["${", "${step}", "${RUNTIME}", "${x y}"]))


@st.composite
def arg_value(draw: st.DrawFn, index: int) -> Any:
    if draw(st.booleans()):
        ref = draw(references(index))
        return ref if draw(st.booleans()) else f"see {ref} here"
    return draw(json_value)


@st.composite
def frameworks(draw: st.DrawFn, max_steps: int = 10) -> Framework:
    n = draw(st.integers(1, max_steps))
    steps = []
    for i in range(1, n + 1):
        tool = draw(st.sampled_from([*TOOLS, TOOLS[0], "no_such_tool", TERMINAL_TOOL]))
        names = draw(
            st.lists(
                st.sampled_from(
                    [
                        "folder",
                        "items",
                        "path",
                        "title",
                        "to",
                        "text",
                        "pattern",
                        "album",
                        "sections",
                        "extra",
                    ]
                ),
                max_size=3,
                unique=True,
            )
        )
        args: dict[str, Any] = {name: draw(arg_value(i)) for name in names}
        if draw(st.integers(0, 3)) == 0:
            args["from_step"] = draw(st.integers(0, n + 1))
        when = None
        if draw(st.integers(0, 5)) == 0:
            when = {"nonempty": draw(st.integers(1, n))}
        steps.append(FrameworkStep.model_validate({"tool": tool, "args": args, "when": when}))
    if draw(st.booleans()):
        steps.append(FrameworkStep(tool=TERMINAL_TOOL))
    fillers = {"title": Filler(prompt="t", default=draw(st.none() | st.just("T")))}
    return Framework(steps=tuple(steps), fillers=fillers)
