"""The shared vocabulary of the model, the runtime and the trace format.

These enums are the one place where the names of modes, stages, classes and
statuses are spelled. The model, the z3 encodings and the runtime all import
them from here, so the three can never disagree on a name.
"""

from __future__ import annotations

from enum import StrEnum


class Mode(StrEnum):
    """The five permission modes (Claude Code's public set)."""

    DEFAULT = "default"
    ACCEPT_EDITS = "acceptEdits"
    PLAN = "plan"
    DONT_ASK = "dontAsk"
    BYPASS = "bypassPermissions"


class Decision(StrEnum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


class Stage(StrEnum):
    """The stages of permission resolution, in the order they are consulted."""

    TRANSITION = "transition"
    PLAN = "plan"
    DENY_RULE = "deny_rule"
    ASK_RULE = "ask_rule"
    BYPASS_IMMUNE = "bypass_immune"
    ALLOW_RULE = "allow_rule"
    SCOPE = "scope"
    MODE = "mode"


class ToolKind(StrEnum):
    """What a tool does to the world, as far as permissions care."""

    READ_ONLY = "read_only"
    EDIT = "edit"
    EXEC = "exec"
    PLAN_CONTROL = "plan_control"


class RuleBehavior(StrEnum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


class Source(StrEnum):
    """Where a rule came from; higher authority first in `AUTHORITY`."""

    POLICY = "policy"
    CLI = "cli"
    SESSION = "session"
    PROJECT = "project"
    PERSISTED = "persisted"


class Route(StrEnum):
    """How a call reached the gate; all routes reach the same gate."""

    INTERACTIVE = "interactive"
    PROTOCOL = "protocol"
    HEADLESS = "headless"
    CHILD = "child"
    BACKGROUND = "background"


class CallClass(StrEnum):
    """The four interference classes of the scheduler."""

    SAFE = "safe"
    QUEUE = "queue"
    EXCLUSIVE = "exclusive"
    BACKGROUND = "background"


class ResultStatus(StrEnum):
    """The terminal status of one call occurrence."""

    OK = "ok"
    ERROR = "error"
    DENIED = "denied"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"
    INTERRUPTED = "interrupted"
    # A repair stub for a call whose effect may have happened: it started and
    # nothing in the trace shows that it did not change the world (issue 13).
    UNKNOWN = "unknown"


class EffectOutcome(StrEnum):
    OK = "ok"
    ERROR = "error"
    CANCELLED = "cancelled"
    # The process running the effect died: whether and how it ended is not
    # known (recorded by the resuming process, after the interrupt).
    UNKNOWN = "unknown"
    # A Background job left running on purpose when its run ended (a
    # `job_done` only, with the job's process group as `pid`: SCHED-4).
    DETACHED = "detached"


class CancelCause(StrEnum):
    """Why a batch (or part of it) was cancelled. A sibling's failure is never
    a cause: there is no member for it (SCHED-5)."""

    USER = "user"  # someone asked the run to stop (a UI, a signal, an API call)
    PARENT = "parent"  # the parent agent stopped this child
    TIMEOUT = "timeout"  # a call ran past its time limit: covers only the calls it names
    SINK_FAILURE = "sink_failure"  # the journal could not be written: the batch stops


class RunStatus(StrEnum):
    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    FAILED = "failed"
    CANCELLED = "cancelled"


# Highest authority first. Index = rank (0 is the most authoritative).
AUTHORITY: tuple[Source, ...] = (
    Source.POLICY,
    Source.CLI,
    Source.SESSION,
    Source.PROJECT,
    Source.PERSISTED,
)

MUTATING_KINDS: frozenset[ToolKind] = frozenset({ToolKind.EDIT, ToolKind.EXEC})
