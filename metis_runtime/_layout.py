"""Where a run's files are: what the runtime writes, for TRACE-2's scan.

`metis run` lays a run out as: the trace, `<trace>.journal` beside it (and a
witness's `<trace>.witness`), and the agent tree in the trace's folder for a
`trace.jsonl`, else in `<trace>.agents/`: `guard.json`, `agents/` (each
child's config, result, trace, journal, stderr), `offload/` (offloaded
results), `exits/` (bash calls' exit records) and `worktrees/` (the
children's workspaces: their work, not the run's files).
"""

from __future__ import annotations

from pathlib import Path

WORKSPACES = "worktrees"


def tree_dir(trace: Path) -> Path:
    """Where a run's agent tree lives: the trace's folder for a `trace.jsonl`,
    else `<trace>.agents/` beside it."""
    return trace.parent if trace.name == "trace.jsonl" else trace.with_name(trace.name + ".agents")


def run_files(path: Path) -> list[Path]:
    """The files a run wrote. For a run directory: every regular file below it
    but its agents' workspaces. For a trace: the trace, its journal and
    witness file, and its agent tree's `guard.json`, `agents/`, `offload/` and `exits/`.
    Symbolic links are not followed."""
    if path.is_dir():
        found = [p for p in path.rglob("*") if WORKSPACES not in p.relative_to(path).parts]
    else:
        found = [path, *(path.with_name(path.name + s) for s in (".journal", ".witness"))]
        tree = tree_dir(path)
        for part in ("guard.json", "agents", "offload", "exits"):
            below = tree / part
            found += [below, *below.rglob("*")] if below.is_dir() else [below]
    return sorted({p for p in found if p.is_file() and not p.is_symlink()})
