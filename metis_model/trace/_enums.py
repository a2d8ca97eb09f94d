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


class EffectOutcome(StrEnum):
    OK = "ok"
    ERROR = "error"
    CANCELLED = "cancelled"


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
