"""Validation of a framework against the catalog (specs/plan.md, "Validation").

Checked before anything runs, in this order, each failure a value with its
structural class:

1. shape: at least one step, the terminal (`final_answer`) last and only there
   (`wrong_args`);
2. the step cap: at most `min(cap, HARD_STEP_MAX)` steps before the terminal
   (`out_of_scope`); the cap is the runtime's, never the framework's or a
   cache entry's;
3. per step: the executor is in the catalog (`wrong_tool`); every reference
   is well formed and points to an earlier, non-terminal step (`wrong_args`);
   `from_step` only into an executor that consumes a collection, from one that
   produces one (`wrong_args`); runtime keys are known and fillers declared
   (`wrong_args`, `missing_input`); required arguments are present, a
   placeholder or `from_step` counting as present (`missing_input`); each
   `requires_one_of` group has a member (`missing_input`); literal arguments
   have the schema's types and no unknown argument is given (`wrong_args`); a
   literal path of a local executor stays inside the workspace
   (`out_of_scope`).
"""

from __future__ import annotations

import re
from typing import Any

from metis_trace import HARD_STEP_MAX
from metis_trace import TERMINAL_TOOL
from metis_trace import ErrorClass
from metis_trace import ExecutorInfo
from metis_trace import Framework
from metis_trace import FrameworkStep
from metis_trace import ValidationFailure

from ._catalog import Catalog
from ._refs import RUNTIME_KEYS
from ._refs import Ref
from ._refs import RefKind
from ._refs import placeholders
from ._refs import step_refs
from ._schema import required_args
from ._schema import type_errors

__all__ = ["CHECKS", "effective_cap", "failure_keys", "validate", "validate_tagged"]

# The checks, in order; each failure is tagged with one.
CHECKS = ("shape", "cap", "tool", "reference", "arguments", "scope")

_WHOLE = re.compile(r"\$\{[^{}]*\}")


def effective_cap(cap: int) -> int:
    """The cap in force: the runtime's, never above the hard maximum."""
    return max(0, min(cap, HARD_STEP_MAX))


def _f(cls: ErrorClass, step: int | None, message: str) -> ValidationFailure:
    return ValidationFailure(cls=cls, step=step, message=message)


Tagged = tuple[str, ValidationFailure]


def _shape(framework: Framework, cap: int) -> list[Tagged]:
    steps = framework.steps
    out: list[Tagged] = []
    if steps[-1].tool != TERMINAL_TOOL:
        out.append(
            ("shape", _f(ErrorClass.WRONG_ARGS, None, f"the last step must be {TERMINAL_TOOL}"))
        )
    for i, s in enumerate(steps[:-1], start=1):
        if s.tool == TERMINAL_TOOL:
            out.append(
                (
                    "shape",
                    _f(ErrorClass.WRONG_ARGS, i, f"{TERMINAL_TOOL} may only be the last step"),
                )
            )
    body = len(steps) - (1 if steps[-1].tool == TERMINAL_TOOL else 0)
    limit = effective_cap(cap)
    if body > limit:
        out.append(
            (
                "cap",
                _f(ErrorClass.OUT_OF_SCOPE, None, f"{body} steps exceed the step cap of {limit}"),
            )
        )
    return out


def _reference(
    ref: Ref, index: int, framework: Framework, catalog: Catalog
) -> ValidationFailure | None:
    steps = framework.steps
    if ref.kind is RefKind.MALFORMED:
        return _f(ErrorClass.WRONG_ARGS, index, f"malformed reference {ref.text!r}")
    if ref.kind in (RefKind.STEP, RefKind.FROM_STEP):
        n = ref.step
        assert n is not None
        if not 1 <= n < index:
            return _f(
                ErrorClass.WRONG_ARGS, index, f"{ref.text} refers to step {n}, not an earlier step"
            )
        if steps[n - 1].tool == TERMINAL_TOOL:
            return _f(ErrorClass.WRONG_ARGS, index, f"{ref.text} refers to the terminal")
        if ref.kind is RefKind.FROM_STEP:
            producer = catalog.get(steps[n - 1].tool)
            if producer is not None and producer.produces != "collection":
                return _f(
                    ErrorClass.WRONG_ARGS,
                    index,
                    f"from_step {n}: {producer.name} produces no collection",
                )
    if ref.kind is RefKind.RUNTIME and not (
        ref.key in RUNTIME_KEYS or ref.key.startswith("target.")
    ):
        return _f(ErrorClass.WRONG_ARGS, index, f"{ref.text}: unknown runtime value")
    if ref.kind is RefKind.FILLER and ref.key not in framework.fillers:
        return _f(ErrorClass.MISSING_INPUT, index, f"{ref.text}: no such filler is declared")
    return None


def _literal_paths(step: FrameworkStep, executor: ExecutorInfo) -> list[str]:
    bad = []
    for name in executor.paths:
        value = step.args.get(name)
        if executor.host != "local" or not isinstance(value, str) or "${" in value:
            continue
        parts = value.replace("\\", "/").split("/")
        if value.startswith(("/", "~")) or ".." in parts:
            bad.append(name)
    return bad


def _arguments(index: int, step: FrameworkStep, executor: ExecutorInfo) -> list[Tagged]:
    return [("arguments", f) for f in _argument_failures(index, step, executor)] + [
        ("scope", _f(ErrorClass.OUT_OF_SCOPE, index, f"{step.tool}: {name!r} leaves the workspace"))
        for name in _literal_paths(step, executor)
    ]


def _argument_failures(
    index: int, step: FrameworkStep, executor: ExecutorInfo
) -> list[ValidationFailure]:
    out: list[ValidationFailure] = []
    schema = executor.args_schema
    given: dict[str, Any] = {k: v for k, v in step.args.items() if k != "from_step"}
    if "from_step" in step.args:
        if executor.consumes is None:
            out.append(
                _f(ErrorClass.WRONG_ARGS, index, f"{step.tool} does not consume a collection")
            )
        elif executor.consumes in given:
            out.append(
                _f(
                    ErrorClass.WRONG_ARGS,
                    index,
                    f"{step.tool}: both from_step and {executor.consumes!r} are given",
                )
            )
        else:
            given[executor.consumes] = []
    for name in required_args(schema):
        if name not in given:
            out.append(
                _f(ErrorClass.MISSING_INPUT, index, f"{step.tool}: missing argument {name!r}")
            )
    for group in executor.requires_one_of:
        if not any(name in given for name in group):
            out.append(
                _f(ErrorClass.MISSING_INPUT, index, f"{step.tool}: needs one of {', '.join(group)}")
            )
    props = schema.get("properties", {})
    typed: dict[str, Any] = {}
    for name, value in given.items():
        refs = list(placeholders(value))
        if not refs or name not in props:
            typed[name] = value  # a literal, or an argument the schema may not know
        elif isinstance(value, str) and (
            all(r.kind in (RefKind.RUNTIME, RefKind.FILLER) for r in refs)
            or _WHOLE.fullmatch(value) is None
        ):
            typed[name] = value  # runtime values, fillers and interpolations are strings
        # a whole `${stepN...}` is typed when it is resolved
    if "from_step" in step.args and executor.consumes is not None:
        typed.pop(executor.consumes, None)
    out += [
        _f(ErrorClass.WRONG_ARGS, index, f"{step.tool}: {p}") for p in type_errors(schema, typed)
    ]
    return out


def validate_tagged(framework: Framework, catalog: Catalog, cap: int) -> tuple[Tagged, ...]:
    """Every failure with the check (`CHECKS`) that found it."""
    out = _shape(framework, cap)
    for index, step in enumerate(framework.steps, start=1):
        executor = catalog.get(step.tool)
        if step.tool != TERMINAL_TOOL and executor is None:
            out.append(
                ("tool", _f(ErrorClass.WRONG_TOOL, index, f"{step.tool!r} is not in the catalog"))
            )
            continue
        for ref in step_refs(step):
            if (bad := _reference(ref, index, framework, catalog)) is not None:
                out.append(("reference", bad))
        if executor is not None:
            out += _arguments(index, step, executor)
    return tuple(out)


def validate(framework: Framework, catalog: Catalog, cap: int) -> tuple[ValidationFailure, ...]:
    """Every failure of `framework` against `catalog` under `cap`; () when valid."""
    return tuple(f for _, f in validate_tagged(framework, catalog, cap))


def failure_keys(failures: tuple[ValidationFailure, ...]) -> frozenset[tuple[str, int | None]]:
    """What two validators must agree on: the classes and steps of the failures."""
    return frozenset((f.cls.value, f.step) for f in failures)
