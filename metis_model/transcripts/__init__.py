"""Closure checks for transcripts written by other runtimes.

Four inputs are read: an Anthropic Messages request body, an OpenAI Chat
Completions `messages` list, an OpenAI Responses `input` item list, and a Claude
Code session file (with its subagent files). Each is held to the CLOSE family
of invariants: CLOSE-1 (one result per call), CLOSE-2 (a call is answered
before the next provider request), CLOSE-4 (no result without its call),
CLOSE-6 (a compaction separates no call from its result; Claude Code only) and
CLOSE-7 (call ids unique within an assistant message). CLOSE-3 (result order)
is not checked: real sessions answer parallel calls in completion order.

The readers take text lines and return a `Report`; they never touch files.
"""

from .._errors import MetisModelError, TranscriptFormatError
from ._check import FORMATS, TranscriptFormat, check_claude_code_tree, check_transcript

__all__ = [
    "FORMATS",
    "MetisModelError",
    "TranscriptFormat",
    "TranscriptFormatError",
    "check_claude_code_tree",
    "check_transcript",
]
