"""Small output helpers: aligned tables, JSON, one-line input errors, and the
commands' one shape of count option."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import NoReturn
from typing import TypeVar

import click

if TYPE_CHECKING:
    from metis_trace import TraceEvent
    from metis_trace import TraceHeader

EXIT_OK = 0
EXIT_VIOLATION = 1
EXIT_BAD_INPUT = 2

_F = TypeVar("_F", bound=Callable[..., Any])


def count_option(
    flag: str, low: int, high: int | None, default: int, help: str
) -> Callable[[_F], _F]:
    """`FLAG N`: a whole number from `low` to `high` (None: no top), its
    default shown in `--help`."""
    return click.option(
        flag, type=click.IntRange(low, high), default=default, show_default=True, help=help
    )


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def emit_json(payload: Any) -> None:
    click.echo(json.dumps(payload, indent=2, sort_keys=False, default=str))


def read_trace_file(path: Path) -> tuple[TraceHeader, list[TraceEvent], list[int]]:
    """A trace file's header, events and event lines; unreadable or malformed
    input is a one-line error naming the file (and line and field), exit 2."""
    from metis_runtime._input import read_trace_path
    from metis_trace import InputError

    try:
        return read_trace_path(path)
    except InputError as exc:
        bad_input(str(exc))


def _one_line(text: str) -> str:
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def bad_input(message: str) -> NoReturn:
    """A one-line error naming the place, and exit 2 (never a traceback).
    Control characters a user's input brought in (a NUL or newline in a file
    name) are shown escaped, so the message stays one printable line."""
    click.echo(f"metis: error: {_one_line(message)}", err=True)
    sys.exit(EXIT_BAD_INPUT)
