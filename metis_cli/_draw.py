"""`metis draw`: a trace, a run's tree of agents, a plan turn log or another
runtime's transcript as a picture, with its divergence drawn.

The input is read and checked exactly as `metis conform` reads and checks it
(`_transcripts.load` / `check_loaded`), then parsed once more into what the
drawing shows; the figure is built by the model's one drawing module
(`metis_trace.trace_figure`, `tree_figure`, the transcript and turn log
figures) and rendered by graphviz's `dot`, under a time limit. `metis conform
--draw DIR` and `--report` draw through `Drawable` too.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs
import click

from ._inputs import STDIN
from ._inputs import BadInput
from ._output import bad_input
from ._output import count_option
from ._transcripts import FORMATS
from ._transcripts import FileResult
from ._transcripts import Unit
from ._transcripts import check_loaded
from ._transcripts import expand
from ._transcripts import load
from ._transcripts import run_traces

if TYPE_CHECKING:
    from metis_check import Figure
    from metis_check import Report
    from metis_check import Violation

KINDS = ("svg", "png", "html", "dot")
# `dot` on a windowed figure takes well under a second; a minute means it hangs.
DOT_TIMEOUT_S = 60.0
DEFAULT_LIMIT = 150


class DrawError(Exception):
    """A drawing that cannot be made (no `dot`, `dot` failed or took too long)."""


@attrs.frozen
class Drawable:
    """One input, read and checked: `figure(violations)` draws it with those
    violations marked (the first of each trace or file), `figure(())` plain."""

    source: str
    result: FileResult
    figure: Callable[[Sequence[Violation]], Figure]

    @property
    def report(self) -> Report | None:
        return self.result.report


def drawable(
    unit: Unit, fmt: str, limit: int | None = DEFAULT_LIMIT, result: FileResult | None = None
) -> Drawable:
    """Read, check (unless `result` holds its check already) and parse one
    unit for drawing; `BadInput` when it cannot be read."""
    from metis_trace import InputError

    loaded = load(unit)
    if loaded.error:
        raise BadInput(loaded.error)
    if result is None:
        result = check_loaded(loaded, fmt)
    if result.report is None:
        raise BadInput(result.error)
    if fmt == "auto":
        fmt = result.detected.split(",", 1)[0]
    try:
        build = _builder(unit, loaded.text, dict(loaded.companions), fmt, limit)
    except InputError as exc:
        raise BadInput(exc.describe(unit.path)) from exc
    return Drawable(unit.path, result, build)


def _builder(
    unit: Unit, text: str, companions: dict[str, str], fmt: str, limit: int | None
) -> Callable[[Sequence[Violation]], Figure]:
    source = unit.path
    if fmt == "trace" and os.path.isdir(source):
        return _tree_builder(Path(source), limit)
    if fmt == "trace":
        from metis_check import trace_figure
        from metis_trace import read_trace_numbered

        from ._plan_conform import looks_like_turn_log

        if looks_like_turn_log(text.lstrip()[:4096].split("\n", 1)[0]):
            return _turn_log_builder(text, source, limit)
        header, events, _ = read_trace_numbered(text.split("\n"))
        return lambda vs: trace_figure(
            header, events, vs[0] if vs else None, name=source, limit=limit
        )
    from metis_check.transcripts._figure import claude_code_figure
    from metis_check.transcripts._figure import transcript_figure

    if fmt == "claude-code":
        return lambda vs: claude_code_figure(text, companions, vs, name=source, limit=limit)
    return lambda vs: transcript_figure(
        text,
        fmt,  # type: ignore[arg-type]
        vs[0] if vs else None,
        name=source,
        limit=limit,
    )


def _tree_builder(run_dir: Path, limit: int | None) -> Callable[[Sequence[Violation]], Figure]:
    from metis_check import tree_figure

    from ._plan_conform import turn_logs_in

    if turn_logs_in(run_dir):
        raise BadInput(f"{run_dir}: a folder of plan turn logs; draw one turn log at a time")
    traces = run_traces(run_dir)
    return lambda vs: tree_figure(traces, vs, name=str(run_dir), limit=limit)


def _turn_log_builder(
    text: str, source: str, limit: int | None
) -> Callable[[Sequence[Violation]], Figure]:
    from metis_check import turn_log_figure

    from ._plan_conform import _turn_log

    header, records, _ = _turn_log(text, source)

    def build(vs: Sequence[Violation]) -> Figure:
        # The turn log's own violations (PLAN-*) name its records; a segment
        # trace's violations name that trace's events, not records here.
        own = [v for v in vs if v.invariant.startswith("PLAN")]
        return turn_log_figure(header, records, own[0] if own else None, name=source, limit=limit)

    return build


def render(figure: Figure, kind: str, *, id_prefix: str = "") -> bytes:
    """The figure as `kind` (svg, png, dot, or a self-contained html page)."""
    from metis_check import figure_graph

    graph = figure_graph(figure, id_prefix=id_prefix)
    source: str = graph.source
    if kind == "dot":
        return source.encode()
    if kind == "html":
        from ._html import drawing_page

        return drawing_page(figure.title, run_dot(source, "svg").decode()).encode()
    return run_dot(source, kind)


def run_dot(source: str, kind: str) -> bytes:
    """`dot -T<kind>` on DOT text, with a time limit."""
    try:
        done = subprocess.run(
            ["dot", f"-T{kind}"],
            input=source.encode(),
            capture_output=True,
            timeout=DOT_TIMEOUT_S,
            check=False,
        )
    except FileNotFoundError as exc:
        raise DrawError(
            "graphviz's `dot` is not installed (Debian: apt-get install graphviz)"
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise DrawError(
            f"`dot` took longer than {DOT_TIMEOUT_S:g} s; try a smaller --limit"
        ) from exc
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        raise DrawError(f"`dot` failed: {why[-1] if why else f'exit {done.returncode}'}")
    return done.stdout


def kind_of(out: str | None, given: str | None) -> str:
    """The output kind: --format when given, else the --out suffix, else svg."""
    if given is not None:
        return given
    suffix = Path(out).suffix.lower().lstrip(".") if out else ""
    if out and suffix not in KINDS:
        bad_input(f"--out {out}: expected a .svg, .png, .html or .dot file, or --format KIND")
    return suffix or "svg"


def file_name(source: str, n: int, invariant: str) -> str:
    """A drawing's file name under --draw DIR: the input's path flattened, the
    violation's number and invariant (`runs_a_trace.jsonl-1-SCHED-1`)."""
    flat = re.sub(r"[^A-Za-z0-9._-]+", "_", source.strip("/")).strip("._") or "input"
    return f"{flat[-120:]}-{n}-{invariant}"


@click.command()
@click.argument("input_path", metavar="TRACE|RUN_DIR|TRANSCRIPT")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    default="auto",
    show_default=True,
    help="What the input is (as `metis conform --format`); auto detects it. "
    "A directory is a run (a tree of agents) unless a transcript format is given.",
)
@click.option(
    "--kind",
    type=click.Choice(KINDS),
    help="Output kind (default: from the --out suffix, else svg).",
)
@click.option("--out", metavar="FILE", help="Write here (.svg, .png, .html, .dot); default stdout.")
@count_option(
    "--limit",
    10,
    5000,
    DEFAULT_LIMIT,
    "Most events drawn per trace or file: a larger one is cut to a window "
    "around the divergence (the slice is always kept).",
)
def draw(input_path: str, fmt: str, kind: str | None, out: str | None, limit: int) -> None:
    """Draw a trace, a run directory's tree of agents, a plan turn log or
    another runtime's transcript, with its first divergence highlighted.

    Events are nodes grouped per turn and batch, causal edges are arrows,
    execution intervals are bars along each call's lane (rows are time, so
    overlaps show), and a legend says what each shape and colour means. The
    violating event is filled red, the slice that explains it outlined red,
    each slice event's label holding the facts its invariant reads. Exit 0
    when the input conforms, 1 when it was drawn with a divergence, 2 when it
    cannot be read or drawn.
    """
    from ._params import write_named

    what = kind_of(out, kind)
    if fmt == "auto" and os.path.isdir(input_path):
        fmt = "trace"
    try:
        units = expand([input_path], fmt)
        if len(units) != 1:
            raise BadInput(f"{input_path}: {len(units)} transcripts; draw one at a time")
        picture = drawable(units[0], fmt, limit)
    except BadInput as exc:
        bad_input(str(exc))
    report = picture.report
    assert report is not None
    try:
        data = render(picture.figure(report.violations), what)
    except DrawError as exc:
        bad_input(f"{input_path}: {exc}")
    if out is None or out == STDIN:
        if what == "png" and sys.stdout.isatty():
            bad_input("--kind png to a terminal: give --out FILE.png")
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    else:
        write_named(Path(out), data, "--out")
        click.echo(f"{report.source}: {report.verdict}; drew {out}", err=True)
    sys.exit(0 if report.ok else 1)
