"""The committed score record of `make mutate`: one JSON file per seeded fault.

`python -m metis_studies.mutate --record tests/mutants/record` writes, for
each fault it ran, `NN_name.json` (and `00_unpatched.json` for
`--baseline`): the patch's sha256, the commit the run was made on, the IDs
that caught it (an empty list: NOT CAUGHT), where, the budget and seed, the
wall time, the load average and the date. `--summary DIR` prints the
README's mutation block (the score sentence and the table) from the records
alone; `check_records` names every patch without a record and every record
whose hash is not its patch's (a stale record: the patch changed since it ran).
`BLIND` beside the patches lists the faults written blind (issue 23, from the
README, specs/ and the runtime's code alone); the block then says how many of
those with a record an invariant ID caught.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import subprocess
from collections.abc import Collection
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from metis_trace import InputError
from metis_trace import decode_json

from ._run import Mutant
from ._run import MutantResult

FORMAT = 1
UNPATCHED = "00_unpatched"
README_BEGIN = (
    "<!-- mutate-record:begin (python -m metis_studies.mutate --summary tests/mutants/record) -->"
)
README_END = "<!-- mutate-record:end -->"
BLIND = "BLIND"


def patch_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def git_commit(repo: Path) -> tuple[str, bool]:
    """HEAD of `repo` and whether its tracked files differ from it."""
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return head, bool(dirty)


@attrs.frozen
class Record:
    """One fault's (or the baseline's) committed result."""

    mutant: str
    description: str
    patch_sha256: str | None  # None: the unpatched baseline
    commit: str
    caught_by: tuple[str, ...]
    parts: tuple[dict[str, Any], ...]
    clean: bool
    static: str
    explore: dict[str, Any]
    budget: float
    seed: int
    seconds: float
    load: tuple[float, float]  # 1-minute load average at the start and the end
    date: str

    @property
    def number(self) -> str:
        return self.mutant.partition("_")[0]

    def to_json(self) -> dict[str, Any]:
        d = attrs.asdict(self, recurse=False)
        d["caught_by"] = list(self.caught_by)
        d["parts"] = list(self.parts)
        d["load"] = list(self.load)
        return {"record": FORMAT, **d}


def make_record(
    result: MutantResult,
    *,
    commit: str,
    budget: float,
    seed: int,
    load: tuple[float, float],
    date: datetime.datetime | None = None,
) -> Record:
    m = result.mutant
    when = (date or datetime.datetime.now(datetime.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return Record(
        mutant=UNPATCHED if m.name == "unpatched" else m.label,
        description=m.description,
        patch_sha256=None if m.name == "unpatched" else patch_sha256(m.patch),
        commit=commit,
        caught_by=result.ids,
        parts=tuple(
            {"part": c.part, "ids": list(c.ids), "detail": c.detail} for c in result.caught
        ),
        clean=result.clean,
        static=result.static,
        explore=dict(result.explore),
        budget=budget,
        seed=seed,
        seconds=round(result.seconds, 1),
        load=(round(load[0], 2), round(load[1], 2)),
        date=when,
    )


def write_record(folder: Path, record: Record) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{record.mutant}.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record.to_json(), indent=1, sort_keys=False) + "\n")
    os.replace(tmp, path)
    return path


def _field(source: str, data: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    if name not in data:
        raise InputError(None, f"{name}: missing", source)
    value = data[name]
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise InputError(None, f"{name}: wrong type {type(value).__name__}", source)
    return value


def read_record(path: Path) -> Record:
    source = str(path)
    if not path.is_file():
        raise InputError(None, "not a regular file", source)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(None, f"cannot read: {exc}", source) from None
    data = decode_json(text, source=source)
    if not isinstance(data, dict):
        raise InputError(1, "a record is a JSON object", source)
    if data.get("record") != FORMAT:
        raise InputError(None, f"record: must be {FORMAT}", source)
    sha = data.get("patch_sha256")
    if sha is not None and (not isinstance(sha, str) or len(sha) != 64):
        raise InputError(None, "patch_sha256: a 64-digit hex string or null", source)
    caught = _field(source, data, "caught_by", list)
    if not all(isinstance(i, str) for i in caught):
        raise InputError(None, "caught_by: a list of invariant IDs", source)
    parts = _field(source, data, "parts", list)
    if not all(isinstance(p, dict) and isinstance(p.get("ids"), list) for p in parts):
        raise InputError(None, "parts: a list of {part, ids, detail}", source)
    load = _field(source, data, "load", list)
    if len(load) != 2 or not all(isinstance(x, (int, float)) for x in load):
        raise InputError(None, "load: [start, end]", source)
    mutant = _field(source, data, "mutant", str)
    if mutant != path.stem:
        raise InputError(None, f"mutant: {mutant!r} is not the file's name {path.stem!r}", source)
    return Record(
        mutant=mutant,
        description=_field(source, data, "description", str),
        patch_sha256=sha,
        commit=_field(source, data, "commit", str),
        caught_by=tuple(caught),
        parts=tuple(parts),
        clean=_field(source, data, "clean", bool),
        static=_field(source, data, "static", str),
        explore=_field(source, data, "explore", dict),
        budget=float(_field(source, data, "budget", (int, float))),
        seed=_field(source, data, "seed", int),
        seconds=float(_field(source, data, "seconds", (int, float))),
        load=(float(load[0]), float(load[1])),
        date=_field(source, data, "date", str),
    )


def read_blind(folder: Path) -> frozenset[int]:
    """The fault numbers `folder/BLIND` lists, one a line (`#` starts a
    comment); empty without the file. A line that is no number: InputError."""
    path = folder / BLIND
    source = str(path)
    if not path.exists():
        return frozenset()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(None, f"cannot read: {exc}", source) from None
    numbers: set[int] = set()
    for line_no, line in enumerate(text.splitlines(), 1):
        word = line.split("#", 1)[0].strip()
        if not word:
            continue
        if not word.isdigit():
            raise InputError(line_no, f"{word!r}: not a fault number", source)
        numbers.add(int(word))
    return frozenset(numbers)


def read_records(folder: Path) -> dict[str, Record]:
    return {p.stem: read_record(p) for p in sorted(folder.glob("*.json"))}


def check_records(faults: Sequence[Mutant], records: dict[str, Record]) -> list[str]:
    """One line per problem: a fault with no record, a stale record (its
    patch changed since), a record of no fault; and no baseline record."""
    problems: list[str] = []
    labels = {m.label for m in faults}
    for m in faults:
        r = records.get(m.label)
        if r is None:
            problems.append(f"{m.label}: no record (mutate --only {m.label} --record DIR)")
        elif r.patch_sha256 != patch_sha256(m.patch):
            problems.append(
                f"{m.label}: stale record: it ran patch sha256 {str(r.patch_sha256)[:12]}…,"
                f" the patch is now {patch_sha256(m.patch)[:12]}…"
            )
    for name in records:
        if name != UNPATCHED and name not in labels:
            problems.append(f"{name}: a record of no patch in the folder")
    if UNPATCHED not in records:
        problems.append(f"{UNPATCHED}: no baseline record (--baseline --record DIR)")
    return problems


def _where(r: Record) -> str:
    parts = [f"{p['part']}: {'/'.join(dict.fromkeys(p['ids']))}" for p in r.parts if p["ids"]]
    return ", ".join(parts) if parts else "nothing (explore, the studies' traces)"


def _calls(r: Record) -> str:
    e = r.explore
    if "calls" not in e:
        return "—"
    return f"{e.get('calls_before_shrinking', e['calls'])} → {e['calls']}"


def _minutes(r: Record) -> str:
    return f"{r.seconds / 60:.1f} ({r.load[0]:.1f})"


def summary(
    faults: Sequence[Mutant], records: dict[str, Record], blind: Collection[int] | None = None
) -> str:
    """The README's block: the score sentence, the blind faults' score and one
    row per fault, from the records. `blind`: the numbers of the faults written
    blind (None: those `BLIND` beside the faults lists; none: no such line)."""
    if blind is None:
        blind = read_blind(faults[0].patch.parent) if faults else frozenset()
    rows = []
    caught = run = 0
    for m in faults:
        r = records.get(m.label)
        if r is None:
            rows.append(f"| {m.number} | {m.description} | no record | — | — | — | — |")
            continue
        run += 1
        caught += bool(r.caught_by)
        ids = ", ".join(r.caught_by) if r.caught_by else "**NOT CAUGHT**"
        rows.append(
            f"| {m.number} | {m.description} | {ids} | {_where(r)} | {_calls(r)}"
            f" | {_minutes(r)} | {r.commit[:10]} |"
        )
    base = records.get(UNPATCHED)
    if base is None:
        baseline = "no baseline record"
    elif base.caught_by or any("RUN" in p["ids"] for p in base.parts):
        baseline = f"the unpatched runtime at {base.commit[:10]} DIVERGED: {_where(base)}"
    else:
        baseline = f"the unpatched runtime at {base.commit[:10]}: nothing"
    seconds = [records[m.label].seconds for m in faults if m.label in records]
    timing = (
        f"; wall time per fault {min(seconds) / 60:.1f}–{max(seconds) / 60:.1f} min"
        f" (median {sorted(seconds)[len(seconds) // 2] / 60:.1f})"
        if seconds
        else ""
    )
    head = (
        f"**{caught} of the {run} faults with a record were caught by an invariant ID**"
        f" ({len(faults)} faults in tests/mutants/, {len(faults) - run} without a record;"
        f" {baseline}{timing})."
    )
    table = [
        "| # | the seeded fault | caught by"
        " | where (explore; `metis conform` on the studies' traces)"
        " | calls in the counterexample (drawn → shrunk) | minutes (load) | commit |",
        "|---|---|---|---|---|---|---|",
        *rows,
    ]
    if not blind:
        return "\n".join([head, "", *table])
    ran = [records[m.label] for m in faults if int(m.number) in blind and m.label in records]
    line = (
        f"blind faults: {sum(bool(r.caught_by) for r in ran)} of {len(ran)}"
        " with a record caught by an invariant ID"
    )
    return "\n".join([head, "", line, "", *table])


def readme_block(readme: str) -> str:
    """The text between the README's markers (what `summary` must equal)."""
    start = readme.find(README_BEGIN)
    end = readme.find(README_END)
    if start < 0 or end < start:
        raise ValueError(f"README: the markers {README_BEGIN!r} … {README_END!r} are missing")
    return readme[start + len(README_BEGIN) : end].strip("\n")
