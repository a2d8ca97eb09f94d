"""The one error root of the runtime package.

Errors of lower libraries (httpx, json, subprocess, yaml) are mapped at the
boundary: `raise ProviderError(...) from exc`. Misuse errors also subclass the
matching builtin.
"""

from __future__ import annotations


class MetisRuntimeError(Exception):
    """Root of every error the runtime raises."""


class ProviderError(MetisRuntimeError):
    """A provider could not be reached or its stream could not be used."""


class StreamFormatError(ProviderError, ValueError):
    """A provider stream that is malformed beyond normalized repair."""


class ToolError(MetisRuntimeError):
    """A tool failed; it becomes an error result, never a crash of the loop."""


class ToolInputError(ToolError, ValueError):
    """A tool's arguments are missing or of the wrong type."""


class ConfigError(MetisRuntimeError, ValueError):
    """A settings file, rule, agent definition or scenario is malformed.

    The message names the place (file, and field or line).
    """


class JournalError(MetisRuntimeError):
    """The write-ahead journal is unreadable or inconsistent."""
