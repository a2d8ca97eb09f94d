"""`metis prove` and `metis counterexample`: the z3 proofs from the command line.

Exit codes. prove: 0 every property holds (proved or bounded), 1 a property
is refuted, 2 bad usage, 3 none refuted but some unknown (a solver timeout;
never reported as a pass). counterexample: 1 a counterexample was found and
written (the weakened protocol breaks its invariant), 0 none within the
depth, 2 bad usage (e.g. an unknown ablation name).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import NoReturn

import click

from metis_proofs import ABLATIONS
from metis_proofs import DEFAULT_DEPTH
from metis_proofs import PROPERTIES
from metis_proofs import Counterexample
from metis_proofs import CounterexampleFiles
from metis_proofs import LoopConfig
from metis_proofs import LoopSession
from metis_proofs import ProofResult
from metis_proofs import Verdict
from metis_proofs import find_counterexample
from metis_proofs import prove_all
from metis_proofs._context import prove_context
from metis_proofs._plan import PLAN_ABLATIONS
from metis_proofs._plan import PLAN_PROPERTIES
from metis_proofs._plan import prove_plan
from metis_proofs._plan_cex import PlanCounterexample
from metis_proofs._plan_cex import find_plan_counterexample

from ._output import EXIT_OK
from ._output import EXIT_VIOLATION
from ._output import bad_input
from ._output import count_option
from ._output import emit_json
from ._output import table
from ._params import FiniteFloat
from ._params import StagedOutput
from ._params import widths_timeout_option
from ._params import writable_dir

EXIT_UNKNOWN = 3


def context_scope(max_len: int) -> str:
    """CLOSE-8's context-control check: every valid transcript up to a length."""
    return f"bounded to transcripts of \u2264 {max_len} messages"


ALL_ABLATIONS = (*ABLATIONS, *PLAN_ABLATIONS)


def _ablation(name: str | None) -> str | None:
    if name is not None and name not in ALL_ABLATIONS:
        bad_input(f"--ablate: unknown ablation {name!r} (valid: {', '.join(ALL_ABLATIONS)})")
    return name


@click.command("prove")
@count_option("--depth", 1, 200, DEFAULT_DEPTH, "BMC depth for the loop properties.")
@click.option(
    "--out",
    "out_dir",
    default="out/proofs",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Where the .smt2 files go.",
)
@click.option(
    "--timeout",
    default=120.0,
    show_default=True,
    type=FiniteFloat(min=0, min_open=True),
    help="Seconds per solver call; a timeout makes the result unknown.",
)
@widths_timeout_option()
@click.option(
    "--ablate",
    default=None,
    metavar="NAME",
    help="Prove a weakened protocol instead (expect refutations).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def prove(
    depth: int,
    out_dir: str,
    timeout: float,
    widths_timeout: float,
    ablate: str | None,
    as_json: bool,
) -> None:
    """Prove every property (PERM by SMT, the loop by BMC + k-induction, and
    context control's CLOSE-8 bounded to 6 messages)."""
    ablate = _ablation(ablate)
    if ablate is not None and ablate in PLAN_ABLATIONS:
        _prove_plan_ablation(ablate, Path(out_dir), timeout, as_json)
    config = LoopConfig(ablations=frozenset({ablate} if ablate else ()))
    total = len(PROPERTIES)
    done: list[ProofResult] = []
    start = time.perf_counter()
    tty = sys.stderr.isatty()

    def on_depth(k: int) -> None:
        msg = f"  bmc depth {k}/{depth} ({time.perf_counter() - start:.1f}s)"
        click.echo(("\r" + msg) if tty else msg, err=True, nl=not tty)

    def on_result(r: ProofResult) -> None:
        if tty and r.method != "smt" and len(done) == sum(p.method == "smt" for p in PROPERTIES):
            click.echo("", err=True)
        done.append(r)
        click.echo(
            f"[{len(done):2}/{total}] {r.prop_id:8} {r.label:12} {r.seconds:7.2f}s  {r.scope}",
            err=True,
        )

    session = LoopSession(config, depth, timeout, on_depth, widths_timeout_s=widths_timeout)
    with StagedOutput(Path(out_dir)) as stage:  # the .smt2 files, renamed in at the end
        results = prove_all(
            stage,
            depth=depth,
            timeout_s=timeout,
            config=config,
            on_result=on_result,
            session=session,
        )
    shared = session.shared_seconds
    # CLOSE-8: every context-control step, on every valid transcript up to
    # prove_context's default length, as `metis check` runs it (the cut rule's
    # ablations are refuted on purpose).
    context = [p for p in prove_context(timeout_s=timeout) if p.expected_to_hold]
    for p in context:
        click.echo(f"[ctx] {p.invariant:8} {p.label:12} {p.seconds:7.2f}s  {p.name}", err=True)
    if as_json:
        emit_json(
            {
                "depth": depth,
                "ablation": ablate,
                "seconds": round(time.perf_counter() - start, 3),
                # shared by every loop row; each row's `seconds` is its own
                "shared_seconds": shared,
                "results": [r.to_json() for r in results],
                "context": [
                    {
                        "invariant": p.invariant,
                        "step": p.name,
                        "result": p.label,
                        "scope": context_scope(p.max_len),
                        "messages": p.max_len,
                        "seconds": p.seconds,
                        "counterexample": p.counterexample,
                    }
                    for p in context
                ],
            }
        )
    else:
        rows = [
            (
                r.invariant,
                r.method if r.k is None else f"{r.method} (k={r.k})",
                r.scope,
                "-" if r.depth is None else r.depth,
                f"{r.seconds:.2f}",
            )
            for r in results
        ]
        rows += [
            (
                p.invariant,
                f"bmc, {p.name}",
                context_scope(p.max_len) if p.verdict == "bounded" else p.label,
                p.max_len,
                f"{p.seconds:.2f}",
            )
            for p in context
        ]
        click.echo(table(["invariant", "method", "result", "depth", "seconds"], rows))
        click.echo(
            "shared by the loop rows: "
            + ", ".join(f"{name} {s:.2f}s" for name, s in shared.items())
            + " (each row's seconds are its own)"
        )
        click.echo(f"smt2 files: {out_dir}")
        for r in results:
            if r.verdict is Verdict.REFUTED and r.witness:
                click.echo(f"{r.invariant} refuted: counterexample trace {r.witness}")
        for p in context:
            if p.verdict == "refuted":
                click.echo(f"{p.invariant} refuted ({p.name}): {p.counterexample}")
    if any(r.verdict is Verdict.REFUTED for r in results) or any(
        p.verdict == "refuted" for p in context
    ):
        sys.exit(EXIT_VIOLATION)
    if not all(r.holds for r in results) or any(p.verdict == "unknown" for p in context):
        sys.exit(EXIT_UNKNOWN)
    sys.exit(EXIT_OK)


def _prove_plan_ablation(ablation: str, out_dir: Path, timeout: float, as_json: bool) -> None:
    """`metis prove --ablate` for a plan ablation: the plan proofs under it."""
    results = [
        prove_plan(p.invariant, out_dir, timeout, ablation=ablation) for p in PLAN_PROPERTIES
    ]
    if as_json:
        emit_json({"ablation": ablation, "results": [r.to_json() for r in results]})
    else:
        rows = [(r.invariant, r.method, r.label, f"{r.seconds:.2f}") for r in results]
        click.echo(table(["invariant", "method", "result", "seconds"], rows))
    if any(r.verdict is Verdict.REFUTED for r in results):
        sys.exit(EXIT_VIOLATION)
    sys.exit(EXIT_OK if all(r.holds for r in results) else EXIT_UNKNOWN)


@click.command("counterexample")
@click.option(
    "--ablate",
    required=True,
    metavar="NAME",
    help=f"The weakened protocol: one of {', '.join(ALL_ABLATIONS)}.",
)
@click.option(
    "--out",
    "out_dir",
    required=True,
    type=click.Path(file_okay=False),
    help="Directory for the trace, ITF, DOT/SVG and pytest files.",
)
@count_option("--max-depth", 1, 200, DEFAULT_DEPTH, "Deepest path to search.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def counterexample(ablate: str, out_dir: str, max_depth: int, as_json: bool) -> None:
    """Find the shortest trace a weakened protocol allows that the checker rejects.

    Exits 1 when a counterexample was found and written (the expected outcome
    for every listed ablation), 0 when none exists within --max-depth.
    """
    name = _ablation(ablate)
    assert name is not None
    writable_dir(Path(out_dir))  # before the search, not after it
    depth = max_depth
    if name in PLAN_ABLATIONS:
        _plan_counterexample(name, Path(out_dir), depth, as_json)
    cex = find_counterexample(name, depth)
    if cex is None:
        _no_counterexample(name, depth, as_json)
    _report_counterexample(
        cex,
        _written(cex, Path(out_dir)),
        f"a {cex.depth}-event trace",
        "check_trace",
        as_json,
    )


def _plan_counterexample(name: str, out_dir: Path, depth: int, as_json: bool) -> None:
    """A plan ablation's smallest turn log the checker rejects (and its files)."""
    cex = find_plan_counterexample(name, depth)
    if cex is None:
        _no_counterexample(name, depth, as_json)
    what = f"a {len(cex.records)}-record turn log"
    _report_counterexample(cex, _written(cex, out_dir), what, "check_turn_log", as_json)


def _written(cex: Counterexample | PlanCounterexample, out_dir: Path) -> CounterexampleFiles:
    """`cex.write` through a stage renamed into `out_dir`: whole files or none."""
    out = StagedOutput(out_dir)
    with out as stage:
        files = cex.write(stage)
    return CounterexampleFiles(
        trace=out.final(files.trace),
        itf=out.final(files.itf),
        dot=out.final(files.dot),
        svg=None if files.svg is None else out.final(files.svg),
        test=None if files.test is None else out.final(files.test),
    )


def _no_counterexample(name: str, depth: int, as_json: bool) -> NoReturn:
    if as_json:
        emit_json({"ablation": name, "found": False, "max_depth": depth})
    else:
        click.echo(f"{name}: no counterexample within {depth} steps")
    sys.exit(EXIT_OK)


def _report_counterexample(
    cex: Counterexample | PlanCounterexample,
    files: CounterexampleFiles,
    what: str,
    checker: str,
    as_json: bool,
) -> NoReturn:
    """What was written, and what the checker says about it; exit 1."""
    written = [files.trace, files.itf, files.dot, files.svg, files.test]
    if as_json:
        emit_json(
            {**cex.to_json(), "found": True, "files": [str(f) for f in written if f is not None]}
        )
    else:
        first = cex.report.first
        click.echo(f"{cex.ablation}: {cex.invariant} broken by {what}")
        if first is not None:
            click.echo(f"  {checker}: {first.one_line()}")
        if not cex.confirmed:
            click.echo(f"  WARNING: {checker} does not report the same invariant", err=True)
        for f in written:
            if f is not None:
                click.echo(f"  wrote {f}")
        if files.svg is None:
            click.echo("  (no SVG: graphviz's `dot` is not installed)")
    sys.exit(EXIT_VIOLATION)
