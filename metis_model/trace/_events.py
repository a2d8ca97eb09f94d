"""The event-graph trace: typed records with a `kind` discriminator.

Specified in `specs/trace-format.md`. Every event has a sequence number `seq`
(its index after the header), a monotonic timestamp `t` in seconds, and
`causes`: the `seq` of earlier events it depends on (the causal edges).
A call *occurrence* is named by `occ` = "<turn>.<index>", unique within a run
even when the provider's `call_id` repeats.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ._enums import (
    CallClass,
    Decision,
    EffectOutcome,
    Mode,
    ResultStatus,
    Route,
    RuleBehavior,
    RunStatus,
    Source,
    ToolKind,
)

FORMAT_NAME = "metis-trace"
FORMAT_VERSION = 1


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RuleRef(_Record):
    """A permission rule as the gate saw it: behaviour, source, text, recency."""

    behavior: RuleBehavior
    source: Source
    pattern: str
    recency: int = 0  # larger = added later; breaks ties within one source


class Facts(_Record):
    """The abstract facts a permission decision is a function of."""

    mode: Mode
    kind: ToolKind
    protected: bool = False
    secret: bool = False
    in_scope: bool = True
    transition: bool = False
    rules: tuple[RuleRef, ...] = ()  # every rule that matched this call


class CallRef(_Record):
    occ: str
    call_id: str
    tool: str
    input: dict[str, Any] = Field(default_factory=dict)


class TraceHeader(_Record):
    kind: Literal["header"] = "header"
    format: Literal["metis-trace"] = "metis-trace"
    version: int = FORMAT_VERSION
    run_id: str
    root_run_id: str
    parent_id: str | None = None
    agent_id: str = "root"
    depth: int = 0
    mode: Mode = Mode.DEFAULT
    route: Route = Route.INTERACTIVE
    headless_default: Decision = Decision.DENY
    tools: tuple[str, ...] = ()
    producer: str = "unknown"
    meta: dict[str, Any] = Field(default_factory=dict)


class _Event(_Record):
    seq: int
    t: float
    causes: tuple[int, ...] = ()


class TurnStart(_Event):
    kind: Literal["turn_start"] = "turn_start"
    turn: int


class Compaction(_Event):
    kind: Literal["compaction"] = "compaction"
    turn: int
    calls_removed: tuple[str, ...] = ()
    results_removed: tuple[str, ...] = ()
    step: str = "compaction"  # prune | snip | offload | collapse | compaction | retry


class Request(_Event):
    kind: Literal["request"] = "request"
    turn: int


class StreamRepair(_Event):
    kind: Literal["stream_repair"] = "stream_repair"
    turn: int
    problem: str
    repair: str


class Assistant(_Event):
    kind: Literal["assistant"] = "assistant"
    turn: int
    message_id: str = ""
    calls: tuple[CallRef, ...] = ()
    stop_reason: str = "end_turn"


class DecisionEvent(_Event):
    kind: Literal["decision"] = "decision"
    occ: str
    decision: Decision
    stage: str
    rule: RuleRef | None = None
    facts: Facts
    route: Route = Route.INTERACTIVE
    cls: CallClass = CallClass.EXCLUSIVE  # the preflight classification of the call
    key: str | None = None  # its resource key (Queue calls)


class AskResolved(_Event):
    kind: Literal["ask_resolved"] = "ask_resolved"
    occ: str
    approved: bool
    resolver: str = "user"  # user | protocol | headless-default | parent | policy


class EffectStart(_Event):
    kind: Literal["effect_start"] = "effect_start"
    occ: str


class EffectEnd(_Event):
    kind: Literal["effect_end"] = "effect_end"
    occ: str
    outcome: EffectOutcome
    committed: bool = False


class Handshake(_Event):
    kind: Literal["handshake"] = "handshake"
    occ: str
    job: str


class JobDone(_Event):
    kind: Literal["job_done"] = "job_done"
    occ: str
    job: str
    outcome: EffectOutcome


class Result(_Event):
    kind: Literal["result"] = "result"
    occ: str
    call_id: str = ""
    status: ResultStatus
    content: str = ""


class ResultsSent(_Event):
    kind: Literal["results_sent"] = "results_sent"
    turn: int
    occs: tuple[str, ...]


class Cancel(_Event):
    kind: Literal["cancel"] = "cancel"
    turn: int
    reason: str = ""


class Interrupt(_Event):
    kind: Literal["interrupt"] = "interrupt"
    reason: str = ""


class Resume(_Event):
    kind: Literal["resume"] = "resume"


class Repair(_Event):
    kind: Literal["repair"] = "repair"
    stubbed: tuple[str, ...] = ()


class Spawn(_Event):
    kind: Literal["spawn"] = "spawn"
    agent_id: str
    child_mode: Mode
    child_tools: tuple[str, ...]
    parent_mode: Mode
    parent_tools: tuple[str, ...]


class RunEnd(_Event):
    kind: Literal["run_end"] = "run_end"
    status: RunStatus


TraceEvent = Annotated[
    TurnStart
    | Compaction
    | Request
    | StreamRepair
    | Assistant
    | DecisionEvent
    | AskResolved
    | EffectStart
    | EffectEnd
    | Handshake
    | JobDone
    | Result
    | ResultsSent
    | Cancel
    | Interrupt
    | Resume
    | Repair
    | Spawn
    | RunEnd,
    Field(discriminator="kind"),
]

EVENT_KINDS: tuple[str, ...] = (
    "turn_start",
    "compaction",
    "request",
    "stream_repair",
    "assistant",
    "decision",
    "ask_resolved",
    "effect_start",
    "effect_end",
    "handshake",
    "job_done",
    "result",
    "results_sent",
    "cancel",
    "interrupt",
    "resume",
    "repair",
    "spawn",
    "run_end",
)
