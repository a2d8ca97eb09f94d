"""`metis conform --format ...` for transcripts of other runtimes."""

from __future__ import annotations

from pathlib import Path

from metis_model import Report
from metis_model.trace import InputError
from metis_model.transcripts import check_claude_code_tree, check_transcript
from metis_runtime._input import read_input_text

from ._output import bad_input


def _read(path: Path) -> str:
    try:
        return read_input_text(path)
    except InputError as exc:
        bad_input(exc.describe(str(path)))


def check_transcript_file(path: Path, fmt: str) -> Report:
    """Check one transcript; a Claude Code session brings its subagent files
    (`<session>/subagents/agent-*.jsonl`) along."""
    text = _read(path)
    try:
        if fmt == "claude-code":
            folder = path.with_suffix("") / "subagents"
            subagents = {
                str(p.relative_to(path.parent)): _read(p)
                for p in sorted(folder.glob("agent-*.jsonl"))
            }
            return check_claude_code_tree(text, subagents, source=str(path))
        return check_transcript(text, fmt, source=str(path))  # type: ignore[arg-type]
    except InputError as exc:
        bad_input(exc.describe(str(path)))
