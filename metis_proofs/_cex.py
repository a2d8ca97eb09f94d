"""Shortest counterexamples for an ablated protocol, in four file formats."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import attrs
import graphviz
import z3

from metis_check import figure_graph, trace_figure
from metis_check._check import check_trace
from metis_check._report import Report
from metis_trace import TraceEvent, TraceHeader, dumps_trace

from ._convert import Path as ZPath
from ._convert import decode_path, path_to_trace, to_itf
from ._engine import bmc
from ._system import ABLATIONS, EVENT, LoopConfig, LoopSystem, UnknownAblation


@attrs.frozen
class CounterexampleFiles:
    trace: Path
    itf: Path
    dot: Path
    svg: Path | None  # None when graphviz's `dot` is not installed
    test: Path | None


class AblationWitness:
    """What a loop and a plan counterexample share: the ablation it refutes,
    the invariant its z3 path reaches, and whether the checker agrees."""

    ablation: str
    invariant: str
    depth: int
    report: Report

    @property
    def confirmed(self) -> bool:
        first = self.report.first
        return first is not None and first.invariant == self.invariant

    @property
    def name(self) -> str:
        return f"cex_{self.ablation.replace('-', '_')}"

    def summary(self, **lengths: int) -> dict[str, object]:
        """The JSON summary; `lengths` names the witness's length (events, records)."""
        first = self.report.first
        return {
            "ablation": self.ablation,
            "invariant": self.invariant,
            "depth": self.depth,
            **lengths,
            "checker": first.to_json() if first is not None else None,
            "confirmed": self.confirmed,
        }


@attrs.frozen
class Counterexample(AblationWitness):
    """The shortest trace an ablation allows that the checker rejects.

    `invariant` is the ID the z3 path reaches; `report` is what
    `check_trace` says about the converted trace (they agree when
    `confirmed`)."""

    ablation: str
    invariant: str
    depth: int
    header: TraceHeader
    events: tuple[TraceEvent, ...]
    path: ZPath
    report: Report
    slots: int
    jobs: int

    def to_json(self) -> dict[str, object]:
        return self.summary(events=len(self.events))

    def write(self, out_dir: Path) -> CounterexampleFiles:
        """Write the JSONL trace, ITF JSON, DOT + SVG graph and a pytest file."""
        itf = to_itf(self.path, self.slots, self.jobs, self.events, f"ablation {self.ablation}")
        files = write_trace_files(out_dir, self.name, self.header, self.events, self.report, itf)
        test = out_dir / f"test_{self.name}.py"
        test.write_text(regression_test(self, dumps_trace(self.header, list(self.events))))
        return attrs.evolve(files, test=test)


def write_trace_files(
    out_dir: Path,
    name: str,
    header: TraceHeader,
    events: Sequence[TraceEvent],
    report: Report,
    itf: dict[str, object],
) -> CounterexampleFiles:
    """A counterexample's files: `<name>.jsonl` (the trace, which `metis
    conform` rejects), `<name>.itf.json`, `<name>.dot` and `<name>.svg` (the
    event graph, the violating step in red); `test` is left None for the
    caller, whose regression file depends on where the trace came from."""
    graph = event_graph(header, events, report)
    return write_counterexample(out_dir, name, dumps_trace(header, list(events)), itf, graph)


def write_counterexample(
    out_dir: Path,
    name: str,
    jsonl: str,
    itf: dict[str, object],
    graph: graphviz.Digraph,
    test_text: str | None = None,
) -> CounterexampleFiles:
    """The files of any counterexample (a trace, a turn log): the JSON Lines
    file, ITF JSON, DOT and SVG (when graphviz's `dot` is installed), and a
    pytest regression file when `test_text` is given."""
    out_dir.mkdir(parents=True, exist_ok=True)
    trace = out_dir / f"{name}.jsonl"
    trace.write_text(jsonl)
    itf_path = out_dir / f"{name}.itf.json"
    itf_path.write_text(json.dumps(itf, indent=1) + "\n")
    dot = out_dir / f"{name}.dot"
    dot.write_text(graph.source)
    svg: Path | None = out_dir / f"{name}.svg"
    try:
        assert svg is not None
        svg.write_bytes(graph.pipe(format="svg"))
    except graphviz.ExecutableNotFound:
        svg = None
    test = None
    if test_text is not None:
        test = out_dir / f"test_{name}.py"
        test.write_text(test_text)
    return CounterexampleFiles(trace, itf_path, dot, svg, test)


def event_graph(
    header: TraceHeader, events: Sequence[TraceEvent], report: Report
) -> graphviz.Digraph:
    """The trace drawn as `metis draw` draws it (`metis_trace.trace_figure`):
    the violating step filled red, the slice that explains it outlined in red
    with the facts its invariant reads, execution intervals, and the legend."""
    return figure_graph(trace_figure(header, events, report.first, name=header.run_id))


def regression_test(cex: Counterexample, trace_text: str) -> str:
    """A self-contained pytest file that replays the trace through check_trace."""
    first = cex.report.first
    index = first.index if first is not None else -1
    lines = ",\n".join(f"    {line!r}" for line in trace_text.splitlines())
    ident = cex.invariant.replace("-", "_").lower()
    return f'''"""Regression: ablation `{cex.ablation}` admits a trace that breaks {cex.invariant}.

Generated by `metis counterexample --ablate {cex.ablation}` from the shortest
z3 path ({cex.depth} events). Replays the trace through `check_trace` and
expects the checker to reject it with {cex.invariant} at event {index}.
"""

from metis_check import check_trace
from metis_trace import read_trace

LINES = [
{lines},
]


def test_{cex.ablation.replace("-", "_")}_breaks_{ident}() -> None:
    header, events = read_trace(LINES)
    report = check_trace(events, header)
    assert report.first is not None, "the checker accepted the counterexample"
    assert report.first.invariant == {cex.invariant!r}
    assert report.first.index == {index}
'''


def find_counterexample(
    ablation: str,
    max_depth: int = 20,
    *,
    config: LoopConfig | None = None,
    timeout_s: float | None = 120.0,
    minimize: bool = True,
) -> Counterexample | None:
    """The shortest trace the ablated protocol allows whose first violation
    is the ablation's invariant, or None if there is none within `max_depth`.

    Iterative deepening makes it shortest in events; among those, `minimize`
    then asks for the fewest calls (a smaller assistant batch), again through
    assumption literals on the same solver.
    """
    if ablation not in ABLATIONS:
        raise UnknownAblation(f"unknown ablation {ablation!r}; valid: {', '.join(ABLATIONS)}")
    base = config or LoopConfig()
    cfg = attrs.evolve(base, ablations=frozenset({ablation}))
    system = LoopSystem(cfg)
    target = ABLATIONS[ablation]
    run = bmc(system, [target], max_depth, timeout_s=timeout_s, stop_at_first=True)
    if target not in run.found:
        return None
    depth, model = run.found[target]
    path = run.unrolling
    if minimize:
        solver = path.solver
        calls = z3.Sum(
            [z3.If(p["ev"] == EVENT["assistant"], p["n"], 0) for p in path.params[:depth]]
        )
        bad = system.bad(path.states[depth], target)
        best = model.eval(calls, model_completion=True).as_long()
        while best > 1:
            lit = z3.Bool(f"fewer-calls-{best}")
            solver.add(z3.Implies(lit, z3.And(bad, calls < best)))
            if solver.check(lit) != z3.sat:
                break
            model = solver.model()
            best = model.eval(calls, model_completion=True).as_long()
        # Prefer no side events (spawn, stream repair, a stop's recorded source)
        # that do not matter: a sourced interrupt is written as two events.
        quiet = [
            p["ev"] != EVENT[k]
            for p in path.params[: depth - 1]
            for k in (
                "spawn",
                "stream_repair",
                "compaction",
                "signal",
                "stop_request",
                "sink_error",
            )
        ]
        quiet += [
            z3.Implies(p["ev"] == EVENT["interrupt"], z3.Not(p["sourced"]))
            for p in path.params[: depth - 1]
        ]
        lit = z3.Bool("quiet")
        solver.add(z3.Implies(lit, z3.And(bad, calls <= best, *quiet) if quiet else bad))
        if solver.check(lit) == z3.sat:
            model = solver.model()
    zpath = decode_path(model, path, depth)
    header, events = path_to_trace(zpath, cfg.slots, run_id=f"cex-{ablation}")
    report = check_trace(events, header, source=f"counterexample for {ablation}")
    return Counterexample(
        ablation, zpath.violation, depth, header, tuple(events), zpath, report, cfg.slots, cfg.jobs
    )
