"""The event-graph trace: typed records with a `kind` discriminator.

Specified in `specs/trace-format.md`. Every event has a sequence number `seq`
(its index after the header), a monotonic timestamp `t` in seconds, and
`causes`: the `seq` of earlier events it depends on (the causal edges).
A call *occurrence* is named by `occ` = "<turn>.<index>", unique within a run
even when the provider's `call_id` repeats.
"""

from __future__ import annotations

import hashlib
from typing import Annotated
from typing import Any
from typing import Literal

from pydantic import Field

from ._enums import CallClass
from ._enums import CancelCause
from ._enums import Decision
from ._enums import EffectOutcome
from ._enums import Mode
from ._enums import ResultStatus
from ._enums import Route
from ._enums import RunStatus
from ._facts import Facts
from ._facts import RuleRef
from ._facts import _Record
from ._jsonl import union_kinds

FORMAT_NAME = "metis-trace"
FORMAT_VERSION = 3
# Version 1 lacked the facts several checks need (commit and hook events,
# footprints, the ids a results message held, cancel causes): readers refuse it.
# Version 2 lacks what SCHED-5 reads a cancel's cause from (the `signal`,
# `stop_request` and `sink_error` events, a call's recorded time limit): it is
# read, and SCHED-5 checks its causes as version 2 stated them.
READ_VERSIONS: tuple[int, ...] = (2, 3)
CAUSES_VERSION = 3  # the first version whose cancels follow their recorded sources


# What a resumed process answers for a call the trace shows committed when the
# journal does not hold its output: the process stopped between the trace's
# `commit` and the journal's entry (RETRY-2 allows it only then).
NOT_JOURNALED = (
    "[output not journaled: the process stopped between recording the commit "
    "and journaling the output]"
)


def content_digest(text: str) -> str:
    """The `digest` of a `commit`: SHA-256 (hex) of the output's UTF-8."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class CallRef(_Record):
    occ: str
    call_id: str
    tool: str
    input: dict[str, Any] = Field(default_factory=dict)


class HookRef(_Record):
    """A PreToolUse hook in force: its id and the glob over tool names it covers."""

    id: str
    matcher: str = "*"


class MessageShape(_Record):
    """One message of a transcript as far as provider validity cares: its role
    and its blocks, each `text`, `thinking`, `image`, `call:<id>` or `result:<id>`
    (the provider's call id)."""

    role: Literal["user", "assistant"]
    blocks: tuple[str, ...]


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
    hooks: tuple[HookRef, ...] = ()  # the PreToolUse hooks in force, in the order they run
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
    messages: tuple[MessageShape, ...]  # the transcript the step left (CLOSE-8)


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
    # Footprints (SCHED-6): absolute paths, each covering what is below it;
    # "/" is everything (what an unknown footprint is recorded as).
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()


class HookRun(_Event):
    """A hook of the header ran on a call, before its decision (CHILD-6)."""

    kind: Literal["hook"] = "hook"
    occ: str
    hook: str
    vetoed: bool
    reason: str = ""


class AskResolved(_Event):
    kind: Literal["ask_resolved"] = "ask_resolved"
    occ: str
    approved: bool
    resolver: str = "user"  # user | protocol | headless-default | parent | policy


class EffectStart(_Event):
    """`limit_s`: the call's time limit in seconds, when it has one (a
    `timeout` cancel must state this limit: SCHED-5)."""

    kind: Literal["effect_start"] = "effect_start"
    occ: str
    limit_s: float | None = None


class Commit(_Event):
    """The call's effect changed the world; written before the journal keeps
    its output and before its `effect_end` (RETRY-2). `recovered`: written
    by a resuming process, after the interrupt, from the call's exit record
    (its process finished; the one that ran it died before committing):
    RETRY-4.

    `digest`: `content_digest` of the output as this trace shows it
    (credentials redacted); every later `result` of the occurrence, a resumed
    process's included, carries that content (RETRY-2). Empty: not recorded
    (a recovered commit has none: its output is the exit record's).
    """

    kind: Literal["commit"] = "commit"
    occ: str
    outcome: EffectOutcome
    digest: Annotated[str, Field(pattern=r"^([0-9a-f]{64})?$")] = ""
    recovered: bool = False


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
    """`pid`: the process group a `detached` job left running (and only then)."""

    kind: Literal["job_done"] = "job_done"
    occ: str
    job: str
    outcome: EffectOutcome
    pid: int | None = None


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
    call_ids: tuple[str, ...]  # the ids the results message held, in its order


class Cancel(_Event):
    """`occs` names the calls a cancel covers (a timeout: the calls that ran
    past `limit_s`); empty, it covers the whole batch."""

    kind: Literal["cancel"] = "cancel"
    turn: int
    cause: CancelCause
    occs: tuple[str, ...] = ()
    limit_s: float | None = None
    reason: str = ""


class SignalReceived(_Event):
    """The runtime's process received a signal (`signum`, its number; `name`,
    e.g. SIGINT), at `t`: the source a `user` or `parent` cancel, or an
    interrupt that cancels running effects, names in its `causes` (SCHED-5).
    `pid`: the process that received it, which the witness's record of
    deliveries is searched for (TRACE-4); absent in older traces."""

    kind: Literal["signal"] = "signal"
    signum: Annotated[int, Field(ge=1, le=64)]
    name: str = ""
    pid: int | None = None


class StopRequest(_Event):
    """Someone asked the run to stop through the runtime's API (`via`: which
    entry point, e.g. `AgentLoop.cancel`), at `t`: a source, as a signal is."""

    kind: Literal["stop_request"] = "stop_request"
    via: str = "api"
    reason: str = ""


class SinkError(_Event):
    """Writing the journal (or another sink) failed, at `t`: the source a
    `sink_failure` cancel names in its `causes` (SCHED-5)."""

    kind: Literal["sink_error"] = "sink_error"
    sink: str = "journal"
    error: str = ""


class Interrupt(_Event):
    kind: Literal["interrupt"] = "interrupt"
    reason: str = ""


class Resume(_Event):
    kind: Literal["resume"] = "resume"


class Repair(_Event):
    """`stubbed`: every open occurrence, in call order; those in `unknown` are
    stubbed `unknown` (their effect may have happened), the others
    `interrupted`. `call_ids`: the ids the batch's results message held.
    `recovered`: the occurrences answered from their exit record (their
    commit is `recovered`), in call order: RETRY-4."""

    kind: Literal["repair"] = "repair"
    stubbed: tuple[str, ...] = ()
    unknown: tuple[str, ...] = ()
    call_ids: tuple[str, ...] = ()
    recovered: tuple[str, ...] = ()


class Spawn(_Event):
    kind: Literal["spawn"] = "spawn"
    agent_id: str
    child_mode: Mode
    child_tools: tuple[str, ...]
    parent_mode: Mode
    parent_tools: tuple[str, ...]
    # The mode the child's gate was asked for (the call's permission_mode,
    # else its definition's, else the parent's); None in traces that predate it.
    requested_mode: Mode | None = None


class RunEnd(_Event):
    kind: Literal["run_end"] = "run_end"
    status: RunStatus


TraceEvent = Annotated[
    TurnStart
    | Compaction
    | Request
    | StreamRepair
    | Assistant
    | HookRun
    | DecisionEvent
    | AskResolved
    | EffectStart
    | Commit
    | EffectEnd
    | Handshake
    | JobDone
    | Result
    | ResultsSent
    | Cancel
    | SignalReceived
    | StopRequest
    | SinkError
    | Interrupt
    | Resume
    | Repair
    | Spawn
    | RunEnd,
    Field(discriminator="kind"),
]

EVENT_KINDS: tuple[str, ...] = union_kinds(TraceEvent)
