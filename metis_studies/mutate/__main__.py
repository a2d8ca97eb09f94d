"""`python -m metis_studies.mutate` (`make mutate`): the mutation score.

Every seeded runtime fault in `tests/mutants/` goes through the conformance
channel alone (`_run.run_mutant`); the table says which invariant ID caught
each one, and the score is the share caught by an ID. `--baseline` first runs
the unpatched runtime, which must give nothing. Exit 0 when every fault was
caught by an ID (and the baseline was clean), 1 otherwise, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from metis_trace import InputError

from ._record import check_records
from ._record import git_commit
from ._record import make_record
from ._record import read_blind
from ._record import read_records
from ._record import summary
from ._record import write_record
from ._run import Mutant
from ._run import MutantError
from ._run import MutantResult
from ._run import mutants
from ._run import run_mutant

REPO = Path(__file__).resolve().parents[2]


def _row(r: MutantResult) -> str:
    explore = r.explore
    shrunk = ""
    if "calls" in explore:
        shrunk = f" (explore: {explore.get('calls_before_shrinking')} -> {explore['calls']} calls)"
    parts = ", ".join(f"{c.part}: {'/'.join(c.ids)}" for c in r.caught if c.ids)
    caught = ", ".join(r.ids) if r.ids else "NOT CAUGHT"
    clean = "" if r.clean else f" [not clean: {r.static}]"
    return f"{r.mutant.label:<36} {caught:<22} {parts}{shrunk}{clean}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m metis_studies.mutate", description=__doc__)
    parser.add_argument(
        "--budget", type=float, default=60.0, help="metis explore --budget per fault"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--only", action="append", default=[], help="run the faults whose name has this"
    )
    parser.add_argument("--mutants", type=Path, default=REPO / "tests" / "mutants")
    parser.add_argument(
        "--no-typecheck", action="store_true", help="skip mypy on each patched copy"
    )
    parser.add_argument("--baseline", action="store_true", help="run the unpatched runtime first")
    parser.add_argument("--json", type=Path, help="write the results as JSON here")
    parser.add_argument("--keep", type=Path, help="keep each patched copy and its runs here")
    parser.add_argument(
        "--record",
        type=Path,
        metavar="DIR",
        help="write one JSON record per fault here as it finishes (tests/mutants/record)",
    )
    parser.add_argument(
        "--summary",
        type=Path,
        metavar="DIR",
        help="print the README's mutation block from the records in DIR; run nothing",
    )
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) and 2
    if args.budget <= 0:
        print(f"mutate: error: --budget {args.budget:g}: must be positive", file=sys.stderr)
        return 2
    if args.keep is not None:
        try:
            args.keep.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            print(f"mutate: error: --keep {args.keep}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    try:
        found = mutants(args.mutants)
    except MutantError as exc:
        print(f"mutate: error: {exc}", file=sys.stderr)
        return 2
    if args.summary is not None:
        return _summary(found, args.summary)
    chosen = [m for m in found if not args.only or any(o in m.label for o in args.only)]
    if not chosen:
        print(f"mutate: error: no mutant in {args.mutants} matches {args.only}", file=sys.stderr)
        return 2
    commit = ""
    if args.record is not None:
        commit, dirty = git_commit(REPO)
        if dirty:
            print(
                f"mutate: error: --record: {REPO} has uncommitted changes to tracked files;"
                " a record names the commit it ran on",
                file=sys.stderr,
            )
            return 2

    def record(result: MutantResult, load: float) -> None:
        if args.record is not None:
            done = make_record(
                result,
                commit=commit,
                budget=args.budget,
                seed=args.seed,
                load=(load, os.getloadavg()[0]),
            )
            write_record(args.record, done)

    results: list[MutantResult] = []
    baseline_clean = True
    if args.baseline:
        load = os.getloadavg()[0]
        base = run_mutant(REPO, None, budget=args.budget, seed=args.seed, keep=args.keep)
        record(base, load)
        baseline_clean = not base.ids and not any("RUN" in c.ids for c in base.caught)
        print(_row(base), flush=True)
        results.append(base)
    for mutant in chosen:
        load = os.getloadavg()[0]
        try:
            result = run_mutant(
                REPO,
                mutant,
                budget=args.budget,
                seed=args.seed,
                typecheck=not args.no_typecheck,
                keep=args.keep,
            )
        except MutantError as exc:
            print(f"mutate: error: {exc}", file=sys.stderr)
            return 2
        record(result, load)
        print(_row(result), flush=True)
        results.append(result)
    faults = [r for r in results if r.mutant.name != "unpatched"]
    caught = sum(r.by_id for r in faults)
    clean = sum(r.clean for r in faults)
    print(
        f"mutation score: {caught}/{len(faults)} seeded faults caught by an invariant ID"
        f" ({100 * caught / len(faults):.0f}%); {clean}/{len(faults)} keep ruff and mypy green"
        + ("" if baseline_clean else "; the UNPATCHED runtime diverged too")
    )
    if args.json is not None:
        args.json.write_text(json.dumps([r.to_json() for r in results], indent=1) + "\n")
    ok = caught == len(faults) and clean == len(faults) and baseline_clean
    return 0 if ok else 1


def _summary(found: list[Mutant], folder: Path) -> int:
    """Print the block; exit 1 when a fault has no record or a stale one."""
    if not folder.is_dir():
        print(f"mutate: error: --summary {folder}: not a folder", file=sys.stderr)
        return 2
    try:
        records = read_records(folder)
        blind = read_blind(found[0].patch.parent) if found else frozenset()
    except InputError as exc:
        print(f"mutate: error: {exc}", file=sys.stderr)
        return 2
    print(summary(found, records, blind))
    problems = check_records(found, records)
    for line in problems:
        print(f"mutate: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
