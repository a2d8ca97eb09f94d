"""TRACE-2 in `metis conform`: which files a run wrote, read and scanned.

`run_files(path)` lists them for a run directory or a trace file;
`scan_files(paths, canaries, source)` reads each (bounded, regular files only)
and checks it with the pure `metis_model.check_run_files`; `merged` joins that
report to the trace's. Nothing here exits: unreadable input raises
`BadInput`, as everything a `metis conform` unit does.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import attrs

from metis_model import Report

# Below a run directory, where its agents work: their files are the work, not the run's.
WORKSPACES = "worktrees"


def run_files(path: Path) -> list[Path]:
    """The files a run wrote. For a run directory: every regular file below it
    but its agents' workspaces (`worktrees/`). For a trace: the trace, its
    journal and witness file, and its agent tree (`guard.json`, `agents/`,
    `offload/`, in the trace's folder for a `trace.jsonl`, else in
    `<trace>.agents/`), as `metis run` lays them out."""
    if path.is_dir():
        found = [p for p in path.rglob("*") if WORKSPACES not in p.relative_to(path).parts]
    else:
        found = [path, *(path.with_name(path.name + s) for s in (".journal", ".witness"))]
        tree = path.parent if path.name == "trace.jsonl" else path.with_name(path.name + ".agents")
        for part in ("guard.json", "agents", "offload"):
            below = tree / part
            found += [below, *below.rglob("*")] if below.is_dir() else [below]
    return sorted({p for p in found if p.is_file() and not p.is_symlink()})


def read_canaries(path: Path) -> list[str]:
    """Values a workload planted: a JSON list of strings, or one per line."""
    from metis_model.trace import InputError, decode_json
    from metis_runtime._input import input_lines, read_input_text

    from ._transcripts import BadInput

    try:
        text = read_input_text(path)
        if text.lstrip().startswith("["):
            values = decode_json(text, source=str(path))
            if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
                raise BadInput(f"{path}: the canaries must be a JSON list of strings")
            return [v for v in values if v]
        return [line for line in input_lines(text) if line]
    except InputError as exc:
        raise BadInput(exc.describe(str(path))) from exc


def scan_files(paths: Sequence[Path], canaries: Sequence[str], source: str) -> Report:
    """TRACE-2 over files, read bounded; bytes that are not UTF-8 are replaced
    (every credential family is ASCII)."""
    from metis_model import check_run_files
    from metis_model.trace import InputError
    from metis_runtime._input import read_input_bytes

    from ._transcripts import BadInput

    def texts() -> Iterator[tuple[str, str]]:
        for p in paths:
            try:
                data = read_input_bytes(p)
            except InputError as exc:
                raise BadInput(exc.describe(str(p))) from exc
            yield str(p), data.decode("utf-8", "replace")

    return check_run_files(texts(), canaries, source=source)


def merged(first: Report, second: Report) -> Report:
    """One report: the first's violations, then the second's; checks added up."""
    checks = dict(first.checks)
    for k, n in second.checks.items():
        checks[k] = checks.get(k, 0) + n
    return attrs.evolve(
        first,
        violations=first.violations + second.violations,
        checks=checks,
        events=first.events + second.events,
    )
