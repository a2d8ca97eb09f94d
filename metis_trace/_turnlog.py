"""The plan path's records: frameworks, catalog entries and the turn log.

Specified in `specs/plan.md`. A *framework* is the typed plan a proposer
returns (steps, fillers, a terminal); the *turn log* is a JSON Lines file per
plan turn (a header, then one record per line) that the runtime appends to,
across processes when a turn pauses and resumes, and that `metis conform`
replays against the plan model. This module is the schema only: parsing and
the canonical digest the runtime and the model both compute. What is valid is
decided in `metis_model.plan`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from enum import StrEnum
from typing import Annotated
from typing import Any
from typing import Literal

from pydantic import BaseModel
from pydantic import Field
from pydantic import TypeAdapter
from pydantic import model_validator

from ._enums import Decision
from ._enums import Mode
from ._enums import Route
from ._enums import ToolKind
from ._errors import InputError
from ._errors import TraceFormatError
from ._facts import _Record
from ._jsonl import jsonl_schema
from ._jsonl import union_kinds
from ._strict_json import decode_json
from ._strict_json import json_lines
from ._validate import model_strict
from ._validate import validate_strict
from ._validate import value_strict

TURNLOG_FORMAT = "metis-turnlog"
TURNLOG_VERSION = 1
TERMINAL_TOOL = "final_answer"
DEFAULT_STEP_CAP = 8
HARD_STEP_MAX = 16


class PlanPath(StrEnum):
    """Where a turn's framework came from, in the order they are tried."""

    ROUTE = "route"
    L0 = "L0"
    L1 = "L1"
    ENGINE = "engine"
    RECOVERY = "recovery"  # the one alternative after a structural failure


class ProbeOutcome(StrEnum):
    HIT = "hit"  # a valid entry: its framework is used
    MISS = "miss"  # an entry exists but is not valid now (`reason`)
    ABSENT = "absent"  # no entry for this key
    USED = "used"  # a deterministic route or the engine produced the framework


class MissReason(StrEnum):
    """Why a cached entry is not used, in the order the checks are made."""

    EXECUTOR_REMOVED = "executor_removed"
    EXECUTOR_CHANGED = "executor_changed"
    NEW_ALTERNATIVE = "new_alternative"
    EPOCH_CHANGED = "epoch_changed"
    NOT_GROUNDED = "not_grounded"
    NOT_CHAMPION = "not_champion"  # an L1 shadow is never served


class ErrorClass(StrEnum):
    """Structural classes (recoverable once, before any commit) and operational."""

    WRONG_TOOL = "wrong_tool"
    WRONG_ARGS = "wrong_args"
    MISSING_INPUT = "missing_input"
    OUT_OF_SCOPE = "out_of_scope"
    OPERATIONAL = "operational"  # network, timeout, rate limit, unavailable


STRUCTURAL: frozenset[ErrorClass] = frozenset(set(ErrorClass) - {ErrorClass.OPERATIONAL})


class StepStatus(StrEnum):
    OK = "ok"
    ERROR = "error"  # it ran and failed (`error_class`)
    DENIED = "denied"  # the gate denied it, or its ask was rejected
    REFUSED = "refused"  # resolution refused it before the gate (`error_class`)
    SKIPPED_EMPTY = "skipped_empty"  # a mutation that would consume an empty collection
    SKIPPED_CONDITION = "skipped_condition"  # its `when` condition was false


class PauseKind(StrEnum):
    ASK = "ask"  # consent for the pending action
    NEEDS_INPUTS = "needs_inputs"  # filler values the turn cannot invent


class ResumeAnswer(StrEnum):
    APPROVE = "approve"
    REJECT = "reject"
    INPUT = "input"


class FinalState(StrEnum):
    COMPLETED = "completed"
    FAILED = "failed"
    PAUSED = "paused"
    REJECTED = "rejected"  # the owner rejected the pending action
    REFUSED = "refused"  # no valid framework (or an ambiguous request)


class ModelRole(StrEnum):
    """Configurable model roles (the Metnos page, section 4)."""

    FAST = "fast"
    MIDDLE = "middle"
    WISE = "wise"
    CREATIVE = "creative"
    FRONTIER = "frontier"


# --- frameworks -------------------------------------------------------------------


class Condition(_Record):
    """`{"nonempty": N}`: run only if step N produced a non-empty collection;
    `{"empty": N}`: only if it produced an empty one."""

    nonempty: int | None = None
    empty: int | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Condition:
        if (self.nonempty is None) == (self.empty is None):
            raise ValueError("a condition names exactly one of 'nonempty' or 'empty'")
        return self

    @property
    def step(self) -> int:
        value = self.nonempty if self.nonempty is not None else self.empty
        assert value is not None
        return value


class FrameworkStep(_Record):
    tool: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)
    when: Condition | None = None


class Filler(_Record):
    """A short value the plan may leave open: asked of the user or a model role."""

    prompt: str
    default: str | None = None
    role: ModelRole = ModelRole.FAST


class Framework(_Record):
    """A finite list of steps ending in the terminal (`final_answer`), plus fillers.

    Steps are numbered from 1 as references name them (`${step1.field}`)."""

    steps: tuple[FrameworkStep, ...] = Field(min_length=1)
    fillers: dict[str, Filler] = Field(default_factory=dict)


# --- the catalog as a turn saw it -----------------------------------------------------


class ExecutorInfo(_Record):
    """One executor of the catalog: what validation and the checker need.

    `consumes`: the argument a `from_step` collection is bound to. `paths`:
    arguments that are paths on `host`. `destination`: the argument naming
    where the effect lands (part of what an approval is bound to).
    `preserves_origin`: a filter whose output keeps its input's origin."""

    name: str
    digest: str
    effect: ToolKind
    family: str
    host: str = "local"
    produces: Literal["collection", "object", "text", "none"] = "object"
    consumes: str | None = None
    preserves_origin: bool = False
    args_schema: dict[str, Any] = Field(default_factory=dict)
    requires_one_of: tuple[tuple[str, ...], ...] = ()
    paths: tuple[str, ...] = ()
    destination: str | None = None


# --- turn log records -----------------------------------------------------------------


class TaskRef(_Record):
    """The scheduled task a turn fires for, with the authority it was created with."""

    id: str
    owner: str
    channel: str
    mode: Mode


class TurnHeader(_Record):
    kind: Literal["header"] = "header"
    format: Literal["metis-turnlog"] = "metis-turnlog"
    version: int = TURNLOG_VERSION
    turn_id: str
    owner: str
    actor: str
    channel: str
    conversation: str
    request: str
    canonical: str  # the canonical request (the L0 key)
    targets: dict[str, str] = Field(default_factory=dict)  # explicit user targets
    runtime: dict[str, str] = Field(default_factory=dict)  # ${RUNTIME:key} values
    mode: Mode
    route: Route
    cap: int
    hard_max: int = HARD_STEP_MAX
    epoch: int
    task: TaskRef | None = None
    trace: str | None = None  # this segment's trace, relative to the turn log
    producer: str = "unknown"


class CatalogRecord(_Record):
    kind: Literal["catalog"] = "catalog"
    segment: int
    executors: tuple[ExecutorInfo, ...]


class Signatures(_Record):
    executors: str | None  # None: an executor of the plan is not in the catalog
    families: str
    epoch: int


class PathRecord(_Record):
    kind: Literal["path"] = "path"
    path: PlanPath
    outcome: ProbeOutcome
    reason: MissReason | None = None
    entry: str | None = None  # the cache key probed
    stored: Signatures | None = None
    current: Signatures | None = None
    grounded: bool | None = None
    champion: bool | None = None  # L1: whether the entry is a champion
    framework_digest: str | None = None  # the stored framework's canonical digest
    registered_by: str | None = None  # the turn that stored the entry
    seconds: float = 0.0


class CacheRecord(_Record):
    """The turn stored (or updated) a cache entry for its framework."""

    kind: Literal["cache"] = "cache"
    path: PlanPath  # L0 or L1
    entry: str
    signatures: Signatures
    framework_digest: str
    champion: bool = False  # L1: a champion (confirmed by feedback) or a shadow


class ValidationFailure(_Record):
    cls: ErrorClass
    step: int | None
    message: str


class FrameworkRecord(_Record):
    kind: Literal["framework"] = "framework"
    source: PlanPath
    attempt: int  # 0: the turn's framework, 1: the recovery
    framework: Framework
    valid: bool
    failures: tuple[ValidationFailure, ...] = ()
    seconds: float = 0.0


class Action(_Record):
    """What an approval is bound to: who, which turn, which executor with which
    arguments, and where the effect lands."""

    owner: str
    turn: str
    tool: str
    executor_digest: str
    args_digest: str
    destination: str


class StepRecord(_Record):
    kind: Literal["step"] = "step"
    attempt: int
    index: int
    tool: str
    segment: int
    raw_args: dict[str, Any]
    resolved_args: dict[str, Any] | None = None  # None when resolution refused it
    refs: tuple[int, ...] = ()  # the steps its arguments and condition read
    origins: dict[str, str] = Field(default_factory=dict)  # argument -> host of its data
    fillers: dict[str, str] = Field(default_factory=dict)  # filler values it used
    effect: ToolKind
    occ: str | None = None  # its call occurrence in the segment's trace
    decision: Decision | None = None
    approved: bool | None = None
    approval: Action | None = None  # the approval that settled its ask
    approval_dialog: str | None = None
    status: StepStatus
    committed: bool = False
    error_class: ErrorClass | None = None
    error: str = ""
    output: Any = None
    consumed: int | None = None  # size of the collection bound to its `consumes` argument
    produced: int | None = None  # size of the collection it produced
    t: float = 0.0
    seconds: float | None = None


class PauseRecord(_Record):
    kind: Literal["pause"] = "pause"
    dialog: str
    reason: PauseKind
    attempt: int
    step: int
    pending: Action | None = None  # for `ask`
    missing: tuple[str, ...] = ()  # for `needs_inputs`: filler names
    callback: str = "plan.resume"


class ResumeRecord(_Record):
    kind: Literal["resume"] = "resume"
    dialog: str
    answer: ResumeAnswer
    inputs: dict[str, str] = Field(default_factory=dict)
    owner: str
    actor: str
    channel: str
    segment: int
    done: tuple[int, ...] = ()  # steps rebuilt as done state, not run again
    committed: tuple[int, ...] = ()  # of those, mutations that had committed
    trace: str | None = None


class RecoveryRecord(_Record):
    kind: Literal["recovery"] = "recovery"
    after_step: int | None  # None: the framework failed validation
    error_class: ErrorClass
    committed_before: int


class EffectCounts(_Record):
    committed: int = 0  # committed effects of the turn
    mutations: int = 0  # mutating steps that ran and committed
    by_tool: dict[str, int] = Field(default_factory=dict)


class FinalRecord(_Record):
    kind: Literal["final"] = "final"
    state: FinalState
    answer: str
    claims: tuple[int, ...] = ()  # steps (of the last attempt) the answer reports as done
    effects: EffectCounts = EffectCounts()
    seconds: float = 0.0


TurnRecord = Annotated[
    CatalogRecord
    | PathRecord
    | CacheRecord
    | FrameworkRecord
    | StepRecord
    | PauseRecord
    | ResumeRecord
    | RecoveryRecord
    | FinalRecord,
    Field(discriminator="kind"),
]

TURN_RECORD_KINDS: tuple[str, ...] = union_kinds(TurnRecord)

_RECORD: TypeAdapter[TurnRecord] = TypeAdapter(TurnRecord)


def parse_framework(obj: Any, *, source: str = "") -> Framework:
    """A decoded JSON/YAML object as a Framework, with JSON's strictness (no
    coercion: `"2"` is no step number); ValueError naming the field."""
    try:
        return value_strict(Framework, obj, source=source)
    except InputError as exc:
        raise ValueError(_dotted(exc.message)) from exc


def _dotted(message: str) -> str:
    """`steps.2.args: ...` as `steps[2].args: ...`."""
    where, sep, what = message.partition(": ")
    if not sep:
        return message
    parts: list[str] = []
    for p in where.split("."):
        parts.append(f"[{p}]" if p.isdigit() else ("." if parts else "") + p)
    return "".join(parts) + ": " + what


def read_turn_log(
    lines: Iterable[str],
) -> tuple[TurnHeader, list[TurnRecord], list[int]]:
    """A whole turn log: its header, records and their 1-based file lines.
    Strict JSON, strict types; errors name the line and field."""
    header: TurnHeader | None = None
    records: list[TurnRecord] = []
    line_of: list[int] = []
    for number, text in json_lines(lines):
        obj = decode_json(text, line=number)
        if header is None:
            header = _header(obj, number, text)
            continue
        try:
            records.append(validate_strict(_RECORD, text, line=number))
        except InputError as exc:
            raise TraceFormatError(number, _dotted(exc.message)) from exc
        line_of.append(number)
    if header is None:
        raise TraceFormatError(1, "empty turn log: no header line")
    return header, records, line_of


def _header(obj: Any, line: int, text: str) -> TurnHeader:
    if not isinstance(obj, dict) or obj.get("kind") != "header":
        raise TraceFormatError(line, "first line must be the turn log header (kind 'header')")
    if obj.get("format") != TURNLOG_FORMAT:
        raise TraceFormatError(line, f"format must be {TURNLOG_FORMAT!r}")
    if obj.get("version") != TURNLOG_VERSION:
        raise TraceFormatError(
            line, f"unsupported turn log version {obj.get('version')!r} (expected 1)"
        )
    try:
        return model_strict(TurnHeader, text, line=line)
    except InputError as exc:
        raise TraceFormatError(line, _dotted(exc.message)) from exc


def dumps_turn_log(header: TurnHeader, records: Iterable[BaseModel]) -> str:
    lines = [header.model_dump_json(), *(r.model_dump_json() for r in records)]
    return "".join(line + "\n" for line in lines)


def canonical_json(value: Any) -> str:
    """The one canonical text of a JSON value: sorted keys, no spaces, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_digest(value: Any) -> str:
    """`sha256:<hex>` of `canonical_json(value)`: arguments, manifests, signatures."""
    return "sha256:" + hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def framework_digest(framework: Framework) -> str:
    return canonical_digest(framework.model_dump(mode="json"))


def turn_log_json_schema() -> dict[str, Any]:
    return jsonl_schema(
        "metis turn log (JSON Lines)",
        TURNLOG_VERSION,
        TurnHeader,
        record=_RECORD.json_schema(),
        framework=Framework.model_json_schema(),
    )
