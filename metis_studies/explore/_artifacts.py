"""What `metis explore` writes for a divergence, in one folder.

- `scenario.yaml` (+ `scenario.agents/`, `scenario.settings.json`): the shrunk
  workload as a replay scenario, runnable with `metis run --scenario` (its
  first lines give the command) and reloadable (`metis explore --replay`);
- `test_explore_<id>.py`: a pytest regression with two tests: the recorded
  trace is rejected with the same invariant ID (the checker keeps seeing the
  bug), and the workload, run again, conforms (fails until the runtime is fixed);
- `cex_<id>.jsonl`, `.itf.json`, `.dot`, `.svg`: the trace that diverged, the
  model's state after each event (ITF), and its event graph with the
  violating step in red, written by the same code as `metis counterexample`;
- `divergence.json`: the finding, what ran, and the workload before shrinking.
"""

from __future__ import annotations

import json
from pathlib import Path

from metis_trace import dumps_trace

from ._explore import Divergence
from ._scenario import write_scenario


def _ident(text: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in text.lower()).strip("_")


def regression_test(d: Divergence, trace_text: str) -> str:
    finding = d.finding
    ident = _ident(finding.invariant)
    workload = json.dumps(d.workload.to_json(), indent=1, sort_keys=True)
    lines = ",\n".join(f"    {line!r}" for line in trace_text.splitlines())
    where = finding.trace or "the run"
    return f'''"""Regression found by `metis explore`: {finding.invariant} in {where}.

{finding.one_line()}

The workload ({len(d.workload.calls)} calls, shrunk from {len(d.first.calls)}) ran {d.execution}.
`test_the_recorded_trace_breaks_{ident}` replays the recorded trace and
expects {finding.invariant}; `test_the_runtime_conforms_on_this_workload` runs
the workload again and fails until the runtime is fixed.
"""

import json
from pathlib import Path

from metis_check import check_trace
from metis_trace import read_trace
from metis_studies.explore import check_outcome, execute, workload_from_json

WORKLOAD = json.loads(
    r"""{workload}"""
)

LINES = [
{lines},
]


def test_the_recorded_trace_breaks_{ident}() -> None:
    header, events = read_trace(LINES)
    report = check_trace(events, header)
    assert report.first is not None, "the checker accepted the divergent trace"
    assert report.first.invariant == {finding.invariant!r}


def test_the_runtime_conforms_on_this_workload(tmp_path: Path) -> None:
    workload = workload_from_json(WORKLOAD)
    verdict = check_outcome(execute(workload, tmp_path / "run", {d.execution!r}))
    assert verdict.ok, [f.one_line() for f in verdict.findings]
'''


def write_divergence(d: Divergence, out: Path) -> list[Path]:
    """Write the folder; return the files written."""
    from metis_proofs import trace_itf
    from metis_proofs import write_trace_files

    out.mkdir(parents=True, exist_ok=True)
    written = write_scenario(d.workload, out / "scenario.yaml")
    finding = d.finding
    name = f"cex_{_ident(finding.invariant)}"
    verdict = d.verdict
    trace_name = finding.trace or next(iter(verdict.traces), "")
    if trace_name in verdict.traces and verdict.report is not None:
        from metis_check import check_trace

        header, events = verdict.traces[trace_name]
        report = check_trace(events, header, source=trace_name)
        itf = trace_itf(header, events, f"metis explore: {trace_name}")
        files = write_trace_files(out, name, header, events, report, itf)
        written += [p for p in (files.trace, files.itf, files.dot, files.svg) if p is not None]
        test = out / f"test_explore_{_ident(finding.invariant)}.py"
        test.write_text(regression_test(d, dumps_trace(header, list(events))))
        written.append(test)
    summary = {
        "invariant": finding.invariant,
        "finding": finding.one_line(),
        "trace": trace_name,
        "line": finding.line,
        "execution": d.execution,
        "steps": list(verdict.outcome.steps),
        "flaky": d.flaky,
        "calls": len(d.workload.calls),
        "calls_before_shrinking": len(d.first.calls),
        "first": d.first.to_json(),
    }
    path = out / "divergence.json"
    path.write_text(json.dumps(summary, indent=1) + "\n")
    written.append(path)
    return written
