"""The one error root of the model package."""

from __future__ import annotations


class MetisModelError(Exception):
    """Root of every error the model package raises."""


class TraceFormatError(MetisModelError, ValueError):
    """A trace line that is not valid JSON or does not follow the schema.

    `line` is 1-based, counting the header as line 1.
    """

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


class TranscriptFormatError(MetisModelError, ValueError):
    """A transcript that cannot be read: not JSON, or not the shape its format needs.

    `line` is 1-based; `source` names the file when one check reads several.
    """

    def __init__(self, line: int, message: str, source: str = "") -> None:
        where = f"{source}: line {line}" if source else f"line {line}"
        super().__init__(f"{where}: {message}")
        self.line = line
        self.message = message
        self.source = source
