"""The files of a run: the trace, its journal beside it, and the agent tree
(`metis_runtime._layout`); what the run writes, which its agents may not change."""

from __future__ import annotations

from pathlib import Path

from .._errors import ConfigError
from .._layout import tree_dir
from ..tools._exits import EXITS
from ._scenario import STDIN_SCENARIO


def journal_path(trace: Path) -> Path:
    """The write-ahead journal beside a trace: `<trace>.journal`."""
    return trace.with_name(trace.name + ".journal")


def owned_files(trace: Path) -> tuple[Path, ...]:
    """What the run itself writes, which its agents may not change: the trace,
    the journal, and the agent tree's ledger, children's traces and offloads
    (not `worktrees/`, where children work)."""
    tree = tree_dir(trace)
    owned = (
        tree / "guard.json",
        tree / "agents",
        tree / "offload",
        tree / EXITS,
        tree / STDIN_SCENARIO,
    )
    return (trace, journal_path(trace), *owned)


def latest_trace(workspace: Path) -> Path:
    """The trace of the workspace's newest run (`--resume --workspace DIR`)."""
    runs = sorted(
        (workspace / ".metis" / "runs").glob("*/trace.jsonl"), key=lambda p: p.stat().st_mtime
    )
    if not runs:
        raise ConfigError(f"{workspace}: no run to resume (give --trace)")
    return runs[-1]
