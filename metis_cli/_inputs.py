"""What every `metis conform` / `metis draw` input is read with: standard
input's name, the one-line bad-input error, and strict bounded text.

Its own module so that the readers of units (`_transcripts`), of plan turn
logs (`_plan_conform`) and of a run's files (`_run_files`) share it without
importing each other.
"""

from __future__ import annotations

__all__ = ["STDIN", "BadInput", "read_text"]

STDIN = "-"


class BadInput(Exception):
    """Input that cannot be checked: the message names the place, in one line."""


def read_text(path: str) -> str:
    """A regular file (or `-`) as strict UTF-8 text, bounded (`metis_runtime._input`)."""
    from metis_runtime._input import read_input_text
    from metis_trace import InputError

    try:
        return read_input_text(path)
    except InputError as exc:
        raise BadInput(exc.describe(path)) from exc
