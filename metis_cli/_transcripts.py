"""`metis conform --format ...` for transcripts of other runtimes."""

from __future__ import annotations

from pathlib import Path

from metis_model import Report
from metis_model.transcripts import TranscriptFormatError, check_claude_code_tree, check_transcript

from ._output import bad_input


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        bad_input(f"{path}: cannot read ({exc.strerror or exc})")
    except UnicodeDecodeError:
        bad_input(f"{path}: not UTF-8 text")


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
    except TranscriptFormatError as exc:
        where = exc.source or str(path)
        bad_input(f"{where}: line {exc.line}: {exc.message}")
