"""References between steps, and their resolution (specs/plan.md, "References").

The four forms: `from_step: N` (an argument key: the collection step N
produced, bound to the executor's `consumes` argument), `${stepN.field}` (one
field, with dot paths; a number indexes a list), `${RUNTIME:key}` (a
runtime-owned value) and `${FILLER:name}` (a declared filler's value).

Resolution order, per argument, fixed:
1. an explicit user target for the argument wins over a step reference;
2. `from_step` binds the collection of step N to the `consumes` argument;
3. `${stepN...}` placeholders read completed steps' outputs;
4. `${RUNTIME:key}`;
5. `${FILLER:name}`.
It is a single pass over the stored (raw) arguments: substituted data is never
scanned again, so a value that looks like a reference stays data. The stored
plan is never changed: resolution builds new values. A placeholder that is the
whole string keeps its value's type; inside a longer string it is interpolated
(strings as they are, anything else as canonical JSON).

Origins: every resolved argument carries the host its data came from
(`request` for literals, targets, runtime values and fillers). A step's output
has its executor's host, unless the executor preserves origin (a filter): then
it has the origin of what it consumed. A path argument may only hold data of
its own executor's host (or the request's): a path produced on a remote device
does not become a local path because a filter ran locally.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

import attrs

from metis_trace import MUTATING_KINDS
from metis_trace import TERMINAL_TOOL
from metis_trace import ErrorClass
from metis_trace import ExecutorInfo
from metis_trace import Framework
from metis_trace import FrameworkStep
from metis_trace import canonical_json

from ._schema import type_errors

__all__ = [
    "REQUEST_ORIGIN",
    "RUNTIME_KEYS",
    "Ref",
    "RefKind",
    "Resolution",
    "ResolveContext",
    "batches",
    "condition_holds",
    "output_origin",
    "placeholders",
    "resolve_step",
    "step_refs",
    "strings",
]

REQUEST_ORIGIN = "request"
MIXED_ORIGIN = "mixed"
# Runtime-owned values a plan may read; `target.<name>` reads an explicit user target.
RUNTIME_KEYS = frozenset({"turn_id", "owner", "channel", "conversation", "now", "date"})
_PLACEHOLDER = re.compile(r"\$\{([^{}]*)\}")
_STEP = re.compile(r"step([1-9][0-9]*)((?:\.[A-Za-z0-9_-]+)*)")
_RUNTIME = re.compile(r"RUNTIME:([A-Za-z_][A-Za-z0-9_.-]*)")
_FILLER = re.compile(r"FILLER:([A-Za-z_][A-Za-z0-9_]*)")


class RefKind(StrEnum):
    FROM_STEP = "from_step"
    STEP = "step"
    RUNTIME = "runtime"
    FILLER = "filler"
    MALFORMED = "malformed"


@attrs.frozen
class Ref:
    kind: RefKind
    text: str  # the placeholder as written (or "from_step")
    step: int | None = None
    path: tuple[str, ...] = ()
    key: str = ""  # runtime key or filler name


def _parse(inner: str, text: str) -> Ref:
    if m := _STEP.fullmatch(inner):
        path = tuple(p for p in m.group(2).split(".") if p)
        return Ref(RefKind.STEP, text, int(m.group(1)), path)
    if m := _RUNTIME.fullmatch(inner):
        return Ref(RefKind.RUNTIME, text, key=m.group(1))
    if m := _FILLER.fullmatch(inner):
        return Ref(RefKind.FILLER, text, key=m.group(1))
    return Ref(RefKind.MALFORMED, text)


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, depth first, in order."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from strings(v)


def placeholders(value: Any) -> Iterator[Ref]:
    """Every `${...}` in a JSON value, depth first, in order."""
    for text in strings(value):
        if "${" not in text:
            continue
        for m in _PLACEHOLDER.finditer(text):
            yield _parse(m.group(1), m.group(0))
        rest = _PLACEHOLDER.sub("", text)
        if "${" in rest:
            yield Ref(RefKind.MALFORMED, text)


def _from_step(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def step_refs(step: FrameworkStep) -> tuple[Ref, ...]:
    """The references of one step: `from_step`, placeholders, its condition."""
    out: list[Ref] = []
    for name, value in step.args.items():
        if name == "from_step":
            n = _from_step(value)
            out.append(
                Ref(RefKind.FROM_STEP, "from_step", n)
                if n is not None
                else Ref(RefKind.MALFORMED, f"from_step: {canonical_json(value)}")
            )
        else:
            out.extend(placeholders(value))
    if step.when is not None:
        out.append(Ref(RefKind.STEP, "when", step.when.step))
    return tuple(out)


@attrs.frozen
class ResolveContext:
    """What resolution may read: completed steps' outputs and origins (by
    index), runtime values, filler values and the request's explicit targets."""

    outputs: Mapping[int, Any] = attrs.field(factory=dict)
    origins: Mapping[int, str] = attrs.field(factory=dict)
    runtime: Mapping[str, str] = attrs.field(factory=dict)
    fillers: Mapping[str, str] = attrs.field(factory=dict)
    targets: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen
class Resolution:
    """The resolved arguments, or why the step cannot run (`failure`), or the
    fillers it still needs (`missing`). `empty`: a mutating step whose consumed
    collection is empty (it is skipped, never run)."""

    args: dict[str, Any] | None
    origins: dict[str, str]
    refs: tuple[int, ...]
    fillers: dict[str, str]
    missing: tuple[str, ...] = ()
    failure: tuple[ErrorClass, str] | None = None
    consumed: int | None = None
    empty: bool = False


class _Refused(Exception):
    def __init__(self, cls: ErrorClass, message: str) -> None:
        super().__init__(message)
        self.cls = cls
        self.message = message


class _Pass:
    """One resolution pass over the raw arguments of one step."""

    def __init__(self, ctx: ResolveContext, index: int) -> None:
        self.ctx = ctx
        self.index = index
        self.refs: set[int] = set()
        self.hosts: set[str] = set()  # origins read by the current argument
        self.fillers: dict[str, str] = {}
        self.missing: list[str] = []

    def step_value(self, n: int, path: tuple[str, ...], text: str) -> Any:
        if n >= self.index or n not in self.ctx.outputs:
            raise _Refused(ErrorClass.WRONG_ARGS, f"{text}: step {n} has not completed")
        self.refs.add(n)
        self.hosts.add(self.ctx.origins.get(n, REQUEST_ORIGIN))
        value = self.ctx.outputs[n]
        for part in path:
            if isinstance(value, dict) and part in value:
                value = value[part]
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                raise _Refused(ErrorClass.WRONG_ARGS, f"{text}: step {n} has no field {part!r}")
        return value

    def one(self, ref: Ref) -> Any:
        if ref.kind is RefKind.STEP:
            assert ref.step is not None
            return self.step_value(ref.step, ref.path, ref.text)
        if ref.kind is RefKind.RUNTIME:
            key = ref.key
            if key.startswith("target."):
                name = key.removeprefix("target.")
                if name in self.ctx.targets:
                    return self.ctx.targets[name]
                raise _Refused(ErrorClass.MISSING_INPUT, f"{ref.text}: the request names no {name}")
            if key in self.ctx.runtime:
                return self.ctx.runtime[key]
            raise _Refused(ErrorClass.WRONG_ARGS, f"{ref.text}: unknown runtime value")
        if ref.kind is RefKind.FILLER:
            if ref.key in self.ctx.fillers:
                self.fillers[ref.key] = self.ctx.fillers[ref.key]
                return self.ctx.fillers[ref.key]
            if ref.key not in self.missing:
                self.missing.append(ref.key)
            return None
        raise _Refused(ErrorClass.WRONG_ARGS, f"{ref.text}: malformed reference")

    def value(self, raw: Any) -> Any:
        if isinstance(raw, str):
            if "${" not in raw:
                return raw
            refs = list(placeholders(raw))
            whole = _PLACEHOLDER.fullmatch(raw)
            if whole is not None and len(refs) == 1:
                return self.one(refs[0])
            for ref in refs:
                if ref.kind is RefKind.MALFORMED:
                    self.one(ref)

            def sub(m: re.Match[str]) -> str:
                got = self.one(_parse(m.group(1), m.group(0)))
                return got if isinstance(got, str) else canonical_json(got)

            return _PLACEHOLDER.sub(sub, raw)
        if isinstance(raw, dict):
            return {k: self.value(v) for k, v in raw.items()}
        if isinstance(raw, list | tuple):
            return [self.value(v) for v in raw]
        return raw


def _mentions_step(raw: Any) -> bool:
    return any(r.kind is RefKind.STEP for r in placeholders(raw))


def _origin(hosts: set[str]) -> str:
    real = hosts - {REQUEST_ORIGIN}
    if not real:
        return REQUEST_ORIGIN
    return next(iter(real)) if len(real) == 1 else MIXED_ORIGIN


def resolve_step(
    step: FrameworkStep, index: int, executor: ExecutorInfo, ctx: ResolveContext
) -> Resolution:
    """Resolve one step's arguments in the stated order (module docstring)."""
    args: dict[str, Any] = {}
    origins: dict[str, str] = {}
    run = _Pass(ctx, index)
    consumed: int | None = None
    try:
        for name, raw in step.args.items():
            if name == "from_step":
                n = _from_step(raw)
                if n is None:
                    raise _Refused(ErrorClass.WRONG_ARGS, "from_step: must be a step number")
                bound = executor.consumes
                if bound is None:
                    raise _Refused(
                        ErrorClass.WRONG_ARGS, f"{step.tool} does not consume a collection"
                    )
                if bound in ctx.targets:
                    args[bound], origins[bound] = ctx.targets[bound], REQUEST_ORIGIN
                    continue
                run.hosts = set()
                value = run.step_value(n, (), f"from_step {n}")
                if not isinstance(value, list):
                    raise _Refused(ErrorClass.WRONG_ARGS, f"step {n} produced no collection")
                args[bound], origins[bound] = value, _origin(run.hosts)
                continue
            if name in ctx.targets and _mentions_step(raw):
                args[name], origins[name] = ctx.targets[name], REQUEST_ORIGIN
                continue
            run.hosts = set()
            args[name] = run.value(raw)
            origins[name] = _origin(run.hosts)
        if step.when is not None and (step.when.step >= index or step.when.step not in ctx.outputs):
            raise _Refused(ErrorClass.WRONG_ARGS, f"when: step {step.when.step} has not completed")
        if step.when is not None:
            run.refs.add(step.when.step)
        if run.missing:
            return Resolution(
                None, origins, tuple(sorted(run.refs)), run.fillers, tuple(run.missing)
            )
        for name in executor.paths:
            origin = origins.get(name, REQUEST_ORIGIN)
            if origin not in (REQUEST_ORIGIN, executor.host):
                raise _Refused(
                    ErrorClass.OUT_OF_SCOPE,
                    f"argument {name!r} holds data from host {origin!r}; "
                    f"{step.tool} runs on {executor.host!r}",
                )
        problems = type_errors(executor.args_schema, args)
        if problems:
            raise _Refused(ErrorClass.WRONG_ARGS, f"{step.tool}: {problems[0]}")
    except _Refused as exc:
        return Resolution(
            None, origins, tuple(sorted(run.refs)), run.fillers, failure=(exc.cls, exc.message)
        )
    if executor.consumes is not None and isinstance(args.get(executor.consumes), list):
        consumed = len(args[executor.consumes])
    empty = consumed == 0 and executor.effect in MUTATING_KINDS
    return Resolution(
        args, origins, tuple(sorted(run.refs)), run.fillers, consumed=consumed, empty=empty
    )


def output_origin(executor: ExecutorInfo, resolution: Resolution) -> str:
    """The host a step's output belongs to."""
    if executor.preserves_origin and executor.consumes is not None:
        return resolution.origins.get(executor.consumes, REQUEST_ORIGIN)
    return executor.host


def condition_holds(step: FrameworkStep, outputs: Mapping[int, Any]) -> bool:
    """Whether a step's `when` allows it to run (True without a condition)."""
    if step.when is None:
        return True
    value = outputs.get(step.when.step)
    nonempty = isinstance(value, list) and len(value) > 0
    return nonempty if step.when.nonempty is not None else not nonempty


def batches(framework: Framework) -> tuple[tuple[int, ...], ...]:
    """The steps (1-based, the terminal left out) grouped as they are dispatched:
    in order, a step joins the current batch unless it reads a step of it
    (`from_step`, `${stepN...}`, `when`). A batch runs after the one before it
    has finished, so every step it reads has completed."""
    out: list[list[int]] = []
    for index, step in enumerate(framework.steps, start=1):
        if step.tool == TERMINAL_TOOL:
            break
        reads = {r.step for r in step_refs(step) if r.step is not None}
        if not out or reads & set(out[-1]):
            out.append([index])
        else:
            out[-1].append(index)
    return tuple(tuple(b) for b in out)
