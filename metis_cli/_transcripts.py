"""`metis conform --format ...` for transcripts of other runtimes."""

from __future__ import annotations

from pathlib import Path

from metis_model import Report

from ._output import bad_input


def check_transcript_file(path: Path, fmt: str) -> Report:
    bad_input(f"{path}: --format {fmt} is not available yet")
