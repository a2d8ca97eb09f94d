"""The one error root of the model package."""

from __future__ import annotations


class MetisModelError(Exception):
    """Root of every error the model package raises."""


def _printable(name: str) -> str:
    """`name` as one printable line: a NUL, CR or newline in it shown escaped."""
    if name.isprintable():
        return name
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


class InputError(MetisModelError, ValueError):
    """Input that cannot be read: not a regular file, too large, not UTF-8,
    not strict JSON, or not the shape its reader needs.

    `str()` is the one-line message a command prints: the source (a file name)
    when known, the 1-based line when known, then what is wrong (naming the
    field when one is at fault).
    """

    def __init__(self, line: int | None, message: str, source: str = "") -> None:
        self.line = line
        self.message = message
        self.source = source
        super().__init__(self.describe())

    def describe(self, source: str = "") -> str:
        """The message, naming `source` when the error does not name one itself."""
        where = self.source or source
        parts = [where] if where else []
        if self.line:
            parts.append(f"line {self.line}")
        # One printable line: a file name, or a field name quoted from the
        # input (a JSON key holding a CR), may bring control characters in.
        return _printable(": ".join([*parts, self.message]))


class TraceFormatError(InputError):
    """A trace line that is not valid JSON or does not follow the schema.

    `line` is 1-based, counting the header as line 1.
    """

    def __init__(self, line: int, message: str, source: str = "") -> None:
        super().__init__(line, message, source)


class TranscriptFormatError(InputError):
    """A transcript that cannot be read: not JSON, or not the shape its format needs.

    `line` is 1-based; `source` names the file when one check reads several.
    """

    def __init__(self, line: int, message: str, source: str = "") -> None:
        super().__init__(line, message, source)
