"""metis_trace: what a runtime needs to write a trace metis can check.

The event-graph format (events, header, enums, JSON schema), the strict reader
and writer, the plan path's turn-log format, the witness file's format, and the
credential detector with its encodings. It is the one place where the model and
the runtime meet: `metis_runtime` imports this package and nothing else of metis.
It imports only the standard library, attrs and pydantic.

Exports load lazily (PEP 562, see `_lazy.py`).
"""

import typing as _typing

from ._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from ._credentials import FAMILIES
    from ._credentials import FAMILY_NAMES
    from ._credentials import MIN_SECRET_LEN
    from ._credentials import NAME_WORDS
    from ._credentials import RULE_NEEDLES
    from ._credentials import SCREEN_NEEDLES
    from ._credentials import CredentialFamily
    from ._credentials import CredentialFinding
    from ._credentials import CredentialScanner
    from ._credentials import encoded_screen
    from ._credentials import find_credentials
    from ._credentials import may_hold_credential
    from ._credentials import redact_credentials
    from ._credentials import replace_spans
    from ._credentials import secret_name
    from ._credentials import secret_values
    from ._enums import AUTHORITY
    from ._enums import MUTATING_KINDS
    from ._enums import CallClass
    from ._enums import CancelCause
    from ._enums import Decision
    from ._enums import EffectOutcome
    from ._enums import Mode
    from ._enums import ResultStatus
    from ._enums import Route
    from ._enums import RuleBehavior
    from ._enums import RunStatus
    from ._enums import Source
    from ._enums import Stage
    from ._enums import ToolKind
    from ._errors import InputError
    from ._errors import MetisModelError
    from ._errors import TraceFormatError
    from ._errors import TranscriptFormatError
    from ._events import CAUSES_VERSION
    from ._events import EVENT_KINDS
    from ._events import FORMAT_NAME
    from ._events import FORMAT_VERSION
    from ._events import NOT_JOURNALED
    from ._events import READ_VERSIONS
    from ._events import AskResolved
    from ._events import Assistant
    from ._events import CallRef
    from ._events import Cancel
    from ._events import Commit
    from ._events import Compaction
    from ._events import DecisionEvent
    from ._events import EffectEnd
    from ._events import EffectStart
    from ._events import Handshake
    from ._events import HookRef
    from ._events import HookRun
    from ._events import Interrupt
    from ._events import JobDone
    from ._events import MessageShape
    from ._events import Repair
    from ._events import Request
    from ._events import Result
    from ._events import ResultsSent
    from ._events import Resume
    from ._events import RunEnd
    from ._events import SignalReceived
    from ._events import SinkError
    from ._events import Spawn
    from ._events import StopRequest
    from ._events import StreamRepair
    from ._events import TraceEvent
    from ._events import TraceHeader
    from ._events import TurnStart
    from ._events import content_digest
    from ._facts import Facts
    from ._facts import RuleRef
    from ._io import dumps_trace
    from ._io import iter_trace_lines
    from ._io import parse_event
    from ._io import parse_event_json
    from ._io import parse_header
    from ._io import read_trace
    from ._io import read_trace_numbered
    from ._io import trace_json_schema
    from ._json_types import json_type_name
    from ._strict_json import JsonLimits
    from ._strict_json import check_json_value
    from ._strict_json import decode_json
    from ._strict_json import json_limits
    from ._strict_json import positive_int_setting
    from ._strict_json import raw_decode_json
    from ._strict_json import set_json_limits
    from ._turnlog import DEFAULT_STEP_CAP
    from ._turnlog import HARD_STEP_MAX
    from ._turnlog import STRUCTURAL
    from ._turnlog import TERMINAL_TOOL
    from ._turnlog import TURN_RECORD_KINDS
    from ._turnlog import TURNLOG_FORMAT
    from ._turnlog import TURNLOG_VERSION
    from ._turnlog import Action
    from ._turnlog import CacheRecord
    from ._turnlog import CatalogRecord
    from ._turnlog import Condition
    from ._turnlog import EffectCounts
    from ._turnlog import ErrorClass
    from ._turnlog import ExecutorInfo
    from ._turnlog import Filler
    from ._turnlog import FinalRecord
    from ._turnlog import FinalState
    from ._turnlog import Framework
    from ._turnlog import FrameworkRecord
    from ._turnlog import FrameworkStep
    from ._turnlog import MissReason
    from ._turnlog import ModelRole
    from ._turnlog import PathRecord
    from ._turnlog import PauseKind
    from ._turnlog import PauseRecord
    from ._turnlog import PlanPath
    from ._turnlog import ProbeOutcome
    from ._turnlog import RecoveryRecord
    from ._turnlog import ResumeAnswer
    from ._turnlog import ResumeRecord
    from ._turnlog import Signatures
    from ._turnlog import StepRecord
    from ._turnlog import StepStatus
    from ._turnlog import TaskRef
    from ._turnlog import TurnHeader
    from ._turnlog import TurnRecord
    from ._turnlog import ValidationFailure
    from ._turnlog import canonical_digest
    from ._turnlog import canonical_json
    from ._turnlog import dumps_turn_log
    from ._turnlog import framework_digest
    from ._turnlog import parse_framework
    from ._turnlog import read_turn_log
    from ._turnlog import turn_log_json_schema
    from ._validate import first_error
    from ._validate import model_strict
    from ._validate import validate_strict
    from ._validate import value_strict
    from ._witness import WITNESS_FORMAT
    from ._witness import WITNESS_KINDS
    from ._witness import WITNESS_READ_VERSIONS
    from ._witness import WITNESS_VERSION
    from ._witness import Change
    from ._witness import End
    from ._witness import Exec
    from ._witness import Lost
    from ._witness import ProcessExit
    from ._witness import Ready
    from ._witness import RunExited
    from ._witness import RunStarted
    from ._witness import SignalDelivered
    from ._witness import Unobserved
    from ._witness import Watched
    from ._witness import WitnessHeader
    from ._witness import WitnessRecord
    from ._witness import WitnessSession
    from ._witness import iter_witness_lines
    from ._witness import read_witness
    from ._witness import witness_json_schema

_EXPORTS: dict[str, tuple[str, ...]] = {
    "._errors": (
        "InputError",
        "MetisModelError",
        "TraceFormatError",
        "TranscriptFormatError",
    ),
    "._credentials": (
        "FAMILIES",
        "FAMILY_NAMES",
        "MIN_SECRET_LEN",
        "NAME_WORDS",
        "RULE_NEEDLES",
        "SCREEN_NEEDLES",
        "CredentialFamily",
        "CredentialFinding",
        "CredentialScanner",
        "encoded_screen",
        "find_credentials",
        "may_hold_credential",
        "redact_credentials",
        "replace_spans",
        "secret_name",
        "secret_values",
        "secret_values",
    ),
    "._enums": (
        "AUTHORITY",
        "MUTATING_KINDS",
        "CallClass",
        "CancelCause",
        "Decision",
        "EffectOutcome",
        "Mode",
        "ResultStatus",
        "Route",
        "RuleBehavior",
        "RunStatus",
        "Source",
        "Stage",
        "ToolKind",
    ),
    "._events": (
        "EVENT_KINDS",
        "FORMAT_NAME",
        "CAUSES_VERSION",
        "FORMAT_VERSION",
        "READ_VERSIONS",
        "NOT_JOURNALED",
        "AskResolved",
        "Assistant",
        "CallRef",
        "Cancel",
        "Commit",
        "Compaction",
        "DecisionEvent",
        "EffectEnd",
        "EffectStart",
        "Handshake",
        "HookRef",
        "HookRun",
        "Interrupt",
        "SignalReceived",
        "SinkError",
        "StopRequest",
        "JobDone",
        "MessageShape",
        "Repair",
        "Request",
        "Result",
        "ResultsSent",
        "Resume",
        "RunEnd",
        "Spawn",
        "StreamRepair",
        "TraceEvent",
        "TraceHeader",
        "TurnStart",
        "content_digest",
    ),
    "._facts": ("Facts", "RuleRef"),
    "._io": (
        "dumps_trace",
        "iter_trace_lines",
        "parse_event",
        "parse_event_json",
        "parse_header",
        "read_trace",
        "read_trace_numbered",
        "trace_json_schema",
    ),
    "._json_types": ("json_type_name",),
    "._strict_json": (
        "JsonLimits",
        "check_json_value",
        "decode_json",
        "json_limits",
        "positive_int_setting",
        "raw_decode_json",
        "set_json_limits",
    ),
    "._turnlog": (
        "DEFAULT_STEP_CAP",
        "HARD_STEP_MAX",
        "STRUCTURAL",
        "TERMINAL_TOOL",
        "TURN_RECORD_KINDS",
        "TURNLOG_FORMAT",
        "TURNLOG_VERSION",
        "Action",
        "CacheRecord",
        "CatalogRecord",
        "Condition",
        "EffectCounts",
        "ErrorClass",
        "ExecutorInfo",
        "Filler",
        "FinalRecord",
        "FinalState",
        "Framework",
        "FrameworkRecord",
        "FrameworkStep",
        "MissReason",
        "ModelRole",
        "PathRecord",
        "PauseKind",
        "PauseRecord",
        "PlanPath",
        "ProbeOutcome",
        "RecoveryRecord",
        "ResumeAnswer",
        "ResumeRecord",
        "Signatures",
        "StepRecord",
        "StepStatus",
        "TaskRef",
        "TurnHeader",
        "TurnRecord",
        "ValidationFailure",
        "canonical_digest",
        "canonical_json",
        "dumps_turn_log",
        "framework_digest",
        "parse_framework",
        "read_turn_log",
        "turn_log_json_schema",
    ),
    "._validate": (
        "first_error",
        "model_strict",
        "validate_strict",
        "value_strict",
    ),
    "._witness": (
        "WITNESS_FORMAT",
        "WITNESS_KINDS",
        "WITNESS_VERSION",
        "WITNESS_READ_VERSIONS",
        "Change",
        "End",
        "Exec",
        "Lost",
        "ProcessExit",
        "Ready",
        "RunExited",
        "RunStarted",
        "SignalDelivered",
        "Unobserved",
        "Watched",
        "WitnessHeader",
        "WitnessRecord",
        "WitnessSession",
        "iter_witness_lines",
        "read_witness",
        "witness_json_schema",
    ),
}

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

__all__ = [
    "AUTHORITY",
    "CAUSES_VERSION",
    "DEFAULT_STEP_CAP",
    "EVENT_KINDS",
    "FAMILIES",
    "FAMILY_NAMES",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "HARD_STEP_MAX",
    "MIN_SECRET_LEN",
    "MUTATING_KINDS",
    "NAME_WORDS",
    "NOT_JOURNALED",
    "READ_VERSIONS",
    "RULE_NEEDLES",
    "SCREEN_NEEDLES",
    "STRUCTURAL",
    "TERMINAL_TOOL",
    "TURNLOG_FORMAT",
    "TURNLOG_VERSION",
    "TURN_RECORD_KINDS",
    "WITNESS_FORMAT",
    "WITNESS_KINDS",
    "WITNESS_READ_VERSIONS",
    "WITNESS_VERSION",
    "Action",
    "AskResolved",
    "Assistant",
    "CacheRecord",
    "CallClass",
    "CallRef",
    "Cancel",
    "CancelCause",
    "CatalogRecord",
    "Change",
    "Commit",
    "Compaction",
    "Condition",
    "CredentialFamily",
    "CredentialFinding",
    "CredentialScanner",
    "Decision",
    "DecisionEvent",
    "EffectCounts",
    "EffectEnd",
    "EffectOutcome",
    "EffectStart",
    "End",
    "ErrorClass",
    "Exec",
    "ExecutorInfo",
    "Facts",
    "Filler",
    "FinalRecord",
    "FinalState",
    "Framework",
    "FrameworkRecord",
    "FrameworkStep",
    "Handshake",
    "HookRef",
    "HookRun",
    "InputError",
    "Interrupt",
    "JobDone",
    "JsonLimits",
    "Lost",
    "MessageShape",
    "MetisModelError",
    "MissReason",
    "Mode",
    "ModelRole",
    "PathRecord",
    "PauseKind",
    "PauseRecord",
    "PlanPath",
    "ProbeOutcome",
    "ProcessExit",
    "Ready",
    "RecoveryRecord",
    "Repair",
    "Request",
    "Result",
    "ResultStatus",
    "ResultsSent",
    "Resume",
    "ResumeAnswer",
    "ResumeRecord",
    "Route",
    "RuleBehavior",
    "RuleRef",
    "RunEnd",
    "RunExited",
    "RunStarted",
    "RunStatus",
    "SignalDelivered",
    "SignalReceived",
    "Signatures",
    "SinkError",
    "Source",
    "Spawn",
    "Stage",
    "StepRecord",
    "StepStatus",
    "StopRequest",
    "StreamRepair",
    "TaskRef",
    "ToolKind",
    "TraceEvent",
    "TraceFormatError",
    "TraceHeader",
    "TranscriptFormatError",
    "TurnHeader",
    "TurnRecord",
    "TurnStart",
    "Unobserved",
    "ValidationFailure",
    "Watched",
    "WitnessHeader",
    "WitnessRecord",
    "WitnessSession",
    "canonical_digest",
    "canonical_json",
    "check_json_value",
    "content_digest",
    "decode_json",
    "dumps_trace",
    "dumps_turn_log",
    "encoded_screen",
    "find_credentials",
    "first_error",
    "framework_digest",
    "iter_trace_lines",
    "iter_witness_lines",
    "json_limits",
    "json_type_name",
    "may_hold_credential",
    "model_strict",
    "parse_event",
    "parse_event_json",
    "parse_framework",
    "parse_header",
    "positive_int_setting",
    "raw_decode_json",
    "read_trace",
    "read_trace_numbered",
    "read_turn_log",
    "read_witness",
    "redact_credentials",
    "replace_spans",
    "secret_name",
    "secret_values",
    "set_json_limits",
    "trace_json_schema",
    "turn_log_json_schema",
    "validate_strict",
    "value_strict",
    "witness_json_schema",
]
