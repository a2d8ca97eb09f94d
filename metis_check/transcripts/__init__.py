"""Closure checks for transcripts written by other runtimes.

The inputs read: Anthropic Messages bodies, OpenAI Chat Completions and
Responses bodies (requests, messages or items, and responses), Claude Code
session files (with their subagent files), Codex CLI rollouts, pydantic-ai
message histories, OpenTelemetry GenAI spans (OTLP JSON) and OpenAI Agents SDK
run items; `detect_format` tells them apart.
Each is held to the CLOSE family of invariants and to its provider's request
rules (`RULES`, each with its own ID and source; specs/closure.md): CLOSE-1
(one result per call), CLOSE-2 (a call is answered before the next provider
request), CLOSE-4 (no result without its call), CLOSE-6 (a compaction
separates no call from its result), CLOSE-7 (call ids unique within an
assistant message) and CLOSE-9 (ids unique across the request, where the
provider wants it). CLOSE-3 (result order) is not checked: real sessions
answer parallel calls in completion order.

A report's verdict is `conforms`, `violates` or `undetermined` (a slice of a
session, or a live one ending on an open call). The readers take text lines
and return a `Report`; they never touch files.
"""

from metis_trace import MetisModelError
from metis_trace import TranscriptFormatError

from ._check import FORMATS
from ._check import RECORD_NAMES
from ._check import TranscriptFormat
from ._check import check_claude_code_tree
from ._check import check_transcript
from ._detect import detect_format
from ._rules import BY_RULE
from ._rules import FORMAT_RULES
from ._rules import RULES
from ._rules import STRICT_RULES
from ._rules import FormatRules
from ._rules import Rule

__all__ = [
    "BY_RULE",
    "FORMATS",
    "FORMAT_RULES",
    "RECORD_NAMES",
    "RULES",
    "STRICT_RULES",
    "FormatRules",
    "MetisModelError",
    "Rule",
    "TranscriptFormat",
    "TranscriptFormatError",
    "check_claude_code_tree",
    "check_transcript",
    "detect_format",
]
