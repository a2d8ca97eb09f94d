"""What a study writes: JSON results, CSV and Markdown tables, figures."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs


@attrs.frozen
class Written:
    """One study's output: the files, whether its expectations held, and a
    one-line summary (what `metis study` prints)."""

    study: str
    files: tuple[Path, ...]
    ok: bool
    summary: str


def _finite(value: Any) -> Any:
    """JSON without NaN/Infinity (strict readers refuse them): as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(_finite(data), indent=1, sort_keys=True, default=str)
    path.write_text(text + "\n", encoding="utf-8")
    return path


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def write_table(stem: Path, headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[Path]:
    """`stem.csv` (raw values) and `stem.md` (a Markdown table)."""
    stem.parent.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = stem.with_suffix(".csv"), stem.with_suffix(".md")
    with csv_path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(headers)
        writer.writerows(rows)
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---" for _ in headers) + "|",
        *("| " + " | ".join(_cell(v).replace("|", "\\|") for v in row) + " |" for row in rows),
    ]
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [csv_path, md_path]


def write_results(
    out: Path, name: str, data: Any, headers: Sequence[str], rows: Sequence[Sequence[Any]]
) -> list[Path]:
    """What every study writes first: `name.json` (its results) and the
    `name` table (`write_table`)."""
    return [write_json(out / f"{name}.json", data), *write_table(out / name, headers, rows)]


def tally(study: str, files: Sequence[Path], held: Sequence[bool], what: str) -> Written:
    """A study whose every result must hold: ok when all do, and the summary
    counts them (`3/4 {what}`)."""
    n = sum(held)
    return Written(study, tuple(files), n == len(held), f"{n}/{len(held)} {what}")
