"""What a `proofs/<file>.py` script runs: one property, one SMT-LIB2 file."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ._properties import DEFAULT_DEPTH, get_property, prove


def run_proof_script(prop_id: str, argv: Sequence[str] | None = None) -> int:
    """`python proofs/<file>.py [--out DIR] [--depth K]`: exit 0 if the property
    holds (proved or bounded), 1 if refuted, 3 if unknown."""
    prop = get_property(prop_id)
    parser = argparse.ArgumentParser(description=f"{prop.id}: {prop.title}")
    parser.add_argument("--out", default="out/proofs", help="where the .smt2 file goes")
    parser.add_argument("--depth", type=int, default=DEFAULT_DEPTH, help="BMC depth")
    args = parser.parse_args(argv)
    result = prove(prop.id, Path(args.out), depth=args.depth)
    print(
        f"{result.prop_id}: {result.label} by {result.method} in {result.seconds:.2f}s"
        f" -> {result.smt2}"
    )
    if result.detail:
        print(f"  {result.detail}")
    if result.verdict.value == "refuted":
        return 1
    return 0 if result.holds else 3


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run_proof_script(sys.argv[1], sys.argv[2:]))
