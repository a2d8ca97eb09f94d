"""The tool interface: spec, classification, context, output, and the `Tool` ABC."""

from __future__ import annotations

import abc
import math
import operator
import os
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar

from attrs import field
from attrs import frozen

from metis_trace import CallClass
from metis_trace import ToolKind
from metis_trace import json_type_name

from .._errors import ToolInputError
from ._contain import Roots

if TYPE_CHECKING:
    from ._files import FileTransaction
    from ._jobs import JobManager

ToolInput = Mapping[str, Any]
"""A call's arguments as the provider sent them (a decoded JSON object)."""


@frozen
class ToolOutput:
    """What a call returns to the model."""

    content: str
    is_error: bool = False


EVERYTHING: tuple[Path, ...] = (Path("/"),)
"""The footprint of a call whose paths are not known: every path lies below `/`."""


@frozen
class Classification:
    """The input-sensitive facts the scheduler and the permission gate need.

    `cls`/`key`: the interference class and resource key (Queue calls sharing
    a key are serialized). `paths`: resolved (realpath) paths the call may
    touch, for scope and protected-path checks. `command`: the shell text.
    `reads`/`writes`: the footprint (SCHED-6), each path covering what is
    below it; None derives it from the class (see `footprint`).
    """

    cls: CallClass
    key: str | None
    kind: ToolKind
    paths: tuple[Path, ...] = ()
    command: str | None = None
    reads: tuple[Path, ...] | None = None
    writes: tuple[Path, ...] | None = None

    def footprint(self) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
        """(reads, writes). Derived: a Safe call reads its paths; a Queue call
        writes its paths; an Exclusive call may write anything; a Background
        call's detached work is outside its batch (nothing)."""
        cls = self.cls
        reads = self.reads
        if reads is None:
            reads = self.paths if cls is CallClass.SAFE else ()
        writes = self.writes
        if writes is None:
            if cls is CallClass.QUEUE:
                writes = self.paths
            else:
                writes = EVERYTHING if cls is CallClass.EXCLUSIVE else ()
        return reads, writes


def _workspace(value: str | os.PathLike[str]) -> Path:
    # Resolved once here so every tool compares realpaths against realpaths.
    return Path(os.path.realpath(value))


def _dirs(values: Sequence[str | os.PathLike[str]]) -> tuple[Path, ...]:
    return tuple(_workspace(v) for v in values)


@frozen
class ToolContext:
    """Everything a tool may use besides its input.

    `env` is the (already sanitized) environment of subprocesses. When
    `transaction` is set, mutating tools snapshot each file before changing it
    so the caller can roll the whole call back. The file tools open only what
    lies in `workspace` or `extra_roots` (the gate's additional directories),
    through `roots` (race-free: `_contain.py`).
    """

    workspace: Path = field(converter=_workspace)
    env: Mapping[str, str]
    jobs: JobManager
    transaction: FileTransaction | None = None
    extra_roots: tuple[Path, ...] = field(default=(), converter=_dirs)
    # Where a foreground exec call leaves its exit record (`_exits.py`), and
    # the occurrence a call is classified and runs as (set per call by the loop
    # and the dispatcher: the file tools' checked names are per call); None: none.
    exit_dir: Path | None = None
    call_occ: str | None = None
    # Background jobs may be detached at the run's end (`metis run --detach-jobs`):
    # bash then runs them under the keeper (`_keeper.py`).
    detach_jobs: bool = False
    # The paths the search tools (grep, glob, ls) leave out of their results
    # and never read: those a Read would not be allowed without asking (the
    # loop sets the gate's `hides`; None: hide nothing).
    hidden: Callable[[Path], bool] | None = None
    roots: Roots = field(init=False, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "roots", Roots((self.workspace, *self.extra_roots)))


# --- input validation --------------------------------------------------------

_JSON_TYPES: dict[str, tuple[str, Callable[[object], bool]]] = {
    "string": ("a string", lambda v: isinstance(v, str)),
    "integer": ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    "number": (
        "a number",
        lambda v: isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v),
    ),
    "boolean": ("a boolean", lambda v: isinstance(v, bool)),
    "array": ("an array", lambda v: isinstance(v, list | tuple)),
    "object": ("an object", lambda v: isinstance(v, Mapping)),
    "null": ("null", lambda v: v is None),
}


_Check = Callable[[str, str, object], None]


def _field_checks(prop: Mapping[str, Any]) -> tuple[_Check, ...]:
    checks: list[_Check] = []
    types = prop.get("type")
    if types is not None:
        names = (types,) if isinstance(types, str) else tuple(types)
        known = [_JSON_TYPES[n] for n in names if n in _JSON_TYPES]
        if known:
            want = " or ".join(label for label, _ in known)
            preds = tuple(pred for _, pred in known)

            def check_type(tool: str, name: str, v: object) -> None:
                if not any(p(v) for p in preds):
                    raise ToolInputError(
                        f"{tool}: field '{name}' must be {want}, got {json_type_name(v)}"
                    )

            checks.append(check_type)
    if "enum" in prop:
        allowed = tuple(prop["enum"])

        def check_enum(tool: str, name: str, v: object) -> None:
            if v not in allowed:
                raise ToolInputError(f"{tool}: field '{name}' must be one of {list(allowed)}")

        checks.append(check_enum)
    if "minLength" in prop:
        min_len = int(prop["minLength"])

        def check_len(tool: str, name: str, v: object) -> None:
            if isinstance(v, str) and len(v) < min_len:
                raise ToolInputError(f"{tool}: field '{name}' must not be empty")

        checks.append(check_len)
    for key, op, text in (
        ("minimum", operator.ge, ">="),
        ("exclusiveMinimum", operator.gt, ">"),
        ("maximum", operator.le, "<="),
    ):
        if key in prop:
            bound = float(prop[key])

            def check_bound(
                tool: str,
                name: str,
                v: object,
                bound: float = bound,
                op: Callable[[float, float], bool] = op,
                text: str = text,
            ) -> None:
                if (
                    isinstance(v, int | float)
                    and not isinstance(v, bool)
                    and not op(float(v), bound)
                ):
                    shown = int(bound) if bound.is_integer() else bound
                    raise ToolInputError(f"{tool}: field '{name}' must be {text} {shown}")

            checks.append(check_bound)
    return tuple(checks)


@frozen
class ToolSpec:
    """A tool as the model sees it: name, description, JSON schema of the input.

    `validate` understands the top level of an object schema: `required`,
    `additionalProperties: false`, and per property `type` (or a list of
    types), `enum`, `minLength`, `minimum`, `exclusiveMinimum`, `maximum`.
    Other keywords are accepted and not checked.
    """

    name: str
    description: str
    input_schema: dict[str, Any]
    _required: tuple[str, ...] = field(init=False, repr=False, eq=False)
    _checks: dict[str, tuple[_Check, ...]] = field(init=False, repr=False, eq=False)
    _closed: bool = field(init=False, repr=False, eq=False)

    def __attrs_post_init__(self) -> None:
        # Compiled once per spec so validation on the call path is a few lookups.
        props: Mapping[str, Any] = self.input_schema.get("properties", {})
        checks = {name: _field_checks(prop) for name, prop in props.items()}
        object.__setattr__(self, "_required", tuple(self.input_schema.get("required", ())))
        object.__setattr__(self, "_checks", checks)
        object.__setattr__(
            self, "_closed", self.input_schema.get("additionalProperties", True) is False
        )

    def validate(self, input: object) -> None:
        """Raise ToolInputError (one line, naming the field) unless `input` fits."""
        tool = self.name
        if not isinstance(input, Mapping):
            raise ToolInputError(f"{tool}: input must be an object, got {json_type_name(input)}")
        for name in self._required:
            if name not in input:
                raise ToolInputError(f"{tool}: missing required field '{name}'")
        checks = self._checks
        for name, value in input.items():
            field_checks = checks.get(name)
            if field_checks is None:
                if self._closed:
                    raise ToolInputError(f"{tool}: unknown field '{name}'")
                continue
            for check in field_checks:
                check(tool, name, value)


def object_schema(
    properties: Mapping[str, Mapping[str, Any]], required: tuple[str, ...]
) -> dict[str, Any]:
    """A closed JSON object schema (unknown fields are rejected)."""
    return {
        "type": "object",
        "properties": {k: dict(v) for k, v in properties.items()},
        "required": list(required),
        "additionalProperties": False,
    }


class Tool(abc.ABC):
    """A tool: its spec, an input-sensitive classifier, and `run`.

    `run` raises ToolInputError for bad input and ToolError for an operation
    that failed; the loop turns both into an error result.

    `out_of_process` says that a call's work runs in another process (a
    subprocess, a worker), so this process is free while it runs: the
    four-class dispatcher starts such Safe calls before the others of their
    segment, so that they overlap the work done here.
    """

    out_of_process: ClassVar[bool] = False

    @property
    @abc.abstractmethod
    def spec(self) -> ToolSpec:
        """The spec the model sees."""

    @property
    def name(self) -> str:
        return self.spec.name

    def validate(self, input: ToolInput) -> None:
        """Check `input` against the spec's schema (ToolInputError if it does not fit)."""
        self.spec.validate(input)

    @abc.abstractmethod
    def kind(self, input: ToolInput) -> ToolKind:
        """The effect kind of this call, as the permission gate sees it."""

    @abc.abstractmethod
    def classify(self, input: ToolInput, ctx: ToolContext) -> Classification:
        """Interference class, resource key, kind, resolved paths, command text."""

    @abc.abstractmethod
    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        """Perform the call."""
