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
import sys
from pathlib import Path

from ._run import MutantError, MutantResult, mutants, run_mutant

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
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) and 2
    if args.budget <= 0:
        print(f"mutate: error: --budget {args.budget:g}: must be positive", file=sys.stderr)
        return 2
    try:
        found = mutants(args.mutants)
    except MutantError as exc:
        print(f"mutate: error: {exc}", file=sys.stderr)
        return 2
    chosen = [m for m in found if not args.only or any(o in m.label for o in args.only)]
    if not chosen:
        print(f"mutate: error: no mutant in {args.mutants} matches {args.only}", file=sys.stderr)
        return 2
    results: list[MutantResult] = []
    baseline_clean = True
    if args.baseline:
        base = run_mutant(REPO, None, budget=args.budget, seed=args.seed, keep=args.keep)
        baseline_clean = not base.ids and not any("RUN" in c.ids for c in base.caught)
        print(_row(base), flush=True)
        results.append(base)
    for mutant in chosen:
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


if __name__ == "__main__":
    sys.exit(main())
