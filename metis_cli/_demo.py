"""`metis demo`: the whole story in one table.

1. a replay-provider task through the runtime (`metis run`, a real subprocess);
2. conformance of the trace it recorded, the witness's record of its effects
   (specs/witness.md), and a coordinator tree of agents;
3. the proofs (z3: SMT for all inputs, k-induction and BMC for the loop);
4. the fault matrix against the real runtime;
5. the transcripts of another runtime (the bundled Claude Code sessions);
6. the differential permission oracle, per route;
7. the child-boundary ablation (2x2);
8. the model's own evidence: simulated runs, and broken traces per invariant;
9. the conformance channel: the sweep of `metis explore` through the real
   runtime (`_demo_channel`; `--no-explore` leaves it out).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import click

from metis_model import INVARIANTS
from metis_runtime._input import read_trace_path
from metis_trace import InputError

from ._evidence import EvidenceTable
from ._evidence import gather_model_evidence
from ._output import EXIT_OK
from ._output import EXIT_VIOLATION
from ._output import count_option
from ._output import emit_json
from ._output import table
from ._params import writable_dir

ROOT = Path(__file__).resolve().parent.parent
DEMO_TASK = "Fix the greeting format in src/greeter.py and record what changed in notes.txt."


@attrs.frozen
class Row:
    part: str
    check: str
    ok: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


def _run_headless(
    lead: Sequence[str], workspace: Path, *rest: str
) -> subprocess.CompletedProcess[str]:
    """`metis run LEAD` in `workspace`, headless in acceptEdits, then REST."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "metis_cli",
            "run",
            *lead,
            "--workspace",
            str(workspace),
            "--mode",
            "acceptEdits",
            "--headless",
            *rest,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )


def runtime_rows(folder: Path) -> list[Row]:
    """Run the shipped replay scenario through the runtime, then conform its trace."""
    workspace = folder / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    trace = folder / "run.jsonl"
    trace.unlink(missing_ok=True)
    witness = folder / "run.jsonl.witness"
    witness.unlink(missing_ok=True)
    done = _run_headless(
        [DEMO_TASK],
        workspace,
        "--trace",
        str(trace),
        "--quiet",
        "--no-settings-hierarchy",  # the demo does not depend on this machine's settings
        "--witness",
    )
    first = (done.stderr.strip().splitlines() or [""])[-1]
    rows = [
        Row(
            "runtime",
            "replay scenario edit_files through the runtime",
            done.returncode == 0,
            f"exit {done.returncode}" + (f": {first}" if first else ""),
        )
    ]
    if not trace.exists():
        return [*rows, Row("conformance", "the run's trace against the model", False, "no trace")]
    try:
        header, events, line_of = read_trace_path(trace)
    except InputError as exc:
        return [*rows, Row("conformance", "the run's trace", False, str(exc))]
    from metis_check import check_trace

    report = check_trace(events, header, source=str(trace), line_of=line_of)
    calls = sum(len(e.calls) for e in events if e.kind == "assistant")
    detail = f"{report.events} events, {calls} calls" if report.ok else report.first.one_line()  # type: ignore[union-attr]
    changed = (workspace / "notes.txt").exists()
    rows.append(
        Row(
            "runtime",
            "the scenario's edits landed in the workspace",
            changed,
            "notes.txt written" if changed else "notes.txt missing",
        )
    )
    rows.append(Row("conformance", "the run's trace replayed against the model", report.ok, detail))
    rows.append(_witness_row(trace, header, events))
    return rows


def _witness_row(trace: Path, header: Any, events: Any) -> Row:
    """The run's effects as the witness saw them, outside the runtime (specs/witness.md)."""
    from metis_check import WitnessedTrace
    from metis_check import check_witness
    from metis_trace import InputError
    from metis_trace import read_witness

    check = "the witness (outside the runtime) against the trace"
    path = trace.with_name(trace.name + ".witness")
    try:
        with path.open(encoding="utf-8") as fh:
            sessions = read_witness(fh.read().split("\n"))
    except (OSError, InputError) as exc:
        return Row("witness", check, False, str(exc))
    report = check_witness(sessions, [WitnessedTrace(str(trace), header, events)])
    if not report.ok:
        return Row("witness", check, False, report.violations[0].one_line())
    seen = "; exec not observed" if any("exec" in u for u in report.unobserved) else ""
    checked = report.checks.get("AUTH-1", 0)
    detail = f"{report.changes} changes, {report.execs} executions, {checked} judged{seen}"
    return Row("witness", check, True, detail)


def run_coordinator(workspace: Path) -> subprocess.CompletedProcess[str]:
    """`metis run --scenario coordinator` in `workspace`, headless and quiet."""
    return _run_headless(["--scenario", "coordinator"], workspace, "--quiet")


def agents_rows(folder: Path) -> list[Row]:
    """The coordinator scenario: a planner and an implementer in branch
    worktrees, a refused duplicate; then the whole tree of traces conforms."""
    from metis_check import check_trace_tree

    workspace = folder / "coordinator"
    workspace.mkdir(parents=True, exist_ok=True)
    done = run_coordinator(workspace)
    rows = [
        Row(
            "agents",
            "coordinator scenario spawns a planner and an implementer",
            done.returncode == 0,
            f"exit {done.returncode}",
        )
    ]
    runs = sorted((workspace / ".metis" / "runs").glob("*/trace.jsonl"))
    if not runs:
        return [*rows, Row("agents", "the tree of traces conforms", False, "no trace")]
    run_dir = runs[-1].parent
    traces = {}
    for path in sorted(run_dir.rglob("trace.jsonl")):
        header, events, _ = read_trace_path(path)
        traces[str(path.relative_to(run_dir))] = (header, events)
    root_events = traces["trace.jsonl"][1]
    refused = any("DUPLICATE_TASK_WARNING" in getattr(e, "content", "") for e in root_events)
    rows.append(
        Row(
            "agents",
            "the duplicate spawn is refused",
            refused,
            "DUPLICATE_TASK_WARNING" if refused else "not refused",
        )
    )
    report = check_trace_tree(traces, source=str(run_dir))
    detail = f"{len(traces)} traces" if report.ok else report.first.one_line()  # type: ignore[union-attr]
    rows.append(Row("agents", "the whole tree of traces conforms (CHILD-1..6)", report.ok, detail))
    return rows


def bundled_transcripts() -> list[Path]:
    """The bundled Claude Code sessions, and the shared corpus when it is there."""
    bundled = ROOT / "tests" / "data" / "transcripts" / "claude-code"
    shared = ROOT.parent / "shared" / "corpora" / "claude-code"
    sessions = {p.name: p for folder in (bundled, shared) for p in sorted(folder.glob("*.jsonl"))}
    return list(sessions.values())


def transcript_rows() -> list[Row]:
    """Every bundled Claude Code session (and the shared corpus when present)."""
    from ._transcripts import check_transcript_file

    rows = []
    for path in bundled_transcripts():
        report = check_transcript_file(path, "claude-code")
        detail = f"{report.events} lines" if report.ok else report.first.one_line()  # type: ignore[union-attr]
        rows.append(Row("transcripts", f"claude-code {path.name}", report.ok, detail))
    return rows


def model_rows(runs: int, folder: Path) -> list[Row]:
    ev = EvidenceTable()
    gather_model_evidence(ev, runs, 3, out_dir=folder)
    rows = []
    for inv in INVARIANTS:
        e = ev.rows[inv.id]
        if not (e.traces or e.caught or e.missed):
            continue
        broken = f", broken {e.caught}/{e.caught + e.missed} caught" if e.caught + e.missed else ""
        rows.append(Row("model", inv.id, e.holds, f"{e.traces} traces, {e.checks} checks{broken}"))
    rows += [Row("model", "simulated run conforms", False, f) for f in ev.failures]
    return rows


def fault_rows(folder: Path) -> list[Row]:
    """The fault matrix against the real runtime, under the four-class dispatcher."""
    from metis_studies.faults import run_fault_matrix

    return [
        Row("faults", row.case, row.holds, f"{row.observed_closure}; {row.observed_effects}")
        for row in run_fault_matrix(folder / "faults", "four-class")
    ]


def oracle_rows(examples: int) -> list[Row]:
    """The differential permission oracle: runtime gate against model, per route."""
    try:
        from metis_studies.oracle import run_oracle
    except ModuleNotFoundError as exc:  # Hypothesis is in the test extra, not a runtime dependency
        if exc.name != "hypothesis":
            raise
        from ._output import bad_input

        bad_input("metis demo draws its oracle cases with Hypothesis: pip install 'metis[test]'")

    return [
        Row(
            "oracle",
            f"gate = model on route {route.value}",
            agreed == decided,
            f"{agreed}/{decided} calls agree (decision, stage, facts, settlement)",
        )
        for route, (decided, agreed) in run_oracle(examples).items()
    ]


def ablation_rows() -> list[Row]:
    """The child-boundary 2x2: cloned gate x filtered registry."""
    from metis_studies.child_boundary import ESCAPE_TOOLS
    from metis_studies.child_boundary import run_child_boundary

    rows = []
    for cell in run_child_boundary((0, 1)):
        j = cell.to_json()
        name = (
            f"cloned gate {'on' if cell.cloned_gate else 'off'}, "
            f"filtered registry {'on' if cell.filtered_registry else 'off'}"
        )
        exposed = "/".join(str(e) for e in sorted(set(j["exposed"])))
        rows.append(
            Row(
                "ablation",
                name,
                cell.ok,
                f"effect admitted {j['effect_admitted']}/{j['seeds']}, "
                f"{exposed}/{len(ESCAPE_TOOLS)} escape tools exposed",
            )
        )
    return rows


def proof_rows(folder: Path) -> list[Row]:
    """Every z3 proof and bounded model check, with its SMT-LIB2 file."""
    from metis_proofs import LoopSession
    from metis_proofs import prove_all

    rows = []
    session = LoopSession(depth=20)
    for r in prove_all(folder / "proofs", depth=20, session=session):
        method = r.method + (f", k={r.k}" if r.k is not None else "")
        depth = f", depth {r.depth}" if r.depth is not None else ""
        rows.append(
            Row(
                "proofs",
                f"{r.prop_id}: {r.invariant}",
                r.holds,
                f"{r.scope} by {method}{depth}, {r.seconds:.2f}s",
            )
        )
    shared = ", ".join(f"{name} {s:.2f}s" for name, s in session.shared_seconds.items())
    rows.append(Row("proofs", "work shared by the loop rows", True, shared))
    return rows


def channel_rows(folder: Path) -> list[Row]:
    from ._demo_channel import explore_rows

    return [Row(*fields) for fields in explore_rows(folder)]


PLAN_REQUEST = "Summarize my notes into Reports/notes-summary.md"


def plan_rows(folder: Path) -> list[Row]:
    """The plan path's keyless scenario through `metis plan` (specs/plan.md)."""
    import json

    ws = folder / "plan"
    if ws.exists():
        import shutil

        shutil.rmtree(ws)
    ws.mkdir(parents=True)

    def metis(*args: str) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-m", "metis_cli", *args, "--workspace", str(ws)],
            capture_output=True,
            text=True,
            check=False,
        )
        try:
            out: dict[str, Any] = json.loads(done.stdout)
        except json.JSONDecodeError:
            out = {"state": f"exit {done.returncode}: {done.stderr.strip()[-200:]}"}
        return out

    def turn(request: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
        first = metis("plan", "run", PLAN_REQUEST, "--owner", "demo", "--json")
        then = metis("plan", "resume", "last", "--owner", "demo", "--approve", "--json")
        return first, then

    rows = []
    a, b = turn()
    ok = (a.get("state"), a.get("path"), b.get("state")) == ("paused", "engine", "completed")
    rows.append(
        Row("plan path", "planned, paused for consent, resumed", ok, b.get("answer", "")[:60])
    )
    a, b = turn()
    ok = (a.get("state"), a.get("path"), b.get("state")) == ("paused", "L0", "completed")
    rows.append(
        Row("plan path", "repeated: served from L0, consent asked again", ok, str(a.get("path")))
    )
    manifest = ws / ".metis" / "executors" / "read_notes.yaml"
    manifest.write_text(manifest.read_text().replace("version: 1", "version: 2"))
    subprocess.run(
        [sys.executable, "-m", "metis_cli", "plan", "digest", str(manifest), "--write"],
        capture_output=True,
        check=False,
    )
    a, b = turn()
    ok = (a.get("path"), b.get("state")) == ("engine", "completed")
    rows.append(
        Row("plan path", "manifest changed: L0 miss, planned again", ok, str(a.get("path")))
    )
    done = subprocess.run(
        [sys.executable, "-m", "metis_cli", "conform", str(ws / ".metis" / "plan" / "turns")],
        capture_output=True,
        text=True,
        check=False,
    )
    rows.append(
        Row(
            "plan path",
            "every turn log and trace conforms",
            done.returncode == 0,
            done.stdout.strip()[-80:],
        )
    )
    return rows


SECTIONS: list[tuple[str, Callable[[Path, int], list[Row]]]] = [
    ("runtime task and its conformance", lambda folder, runs: runtime_rows(folder)),
    ("sub-agents", lambda folder, runs: agents_rows(folder)),
    ("the plan path", lambda folder, runs: plan_rows(folder)),
    ("proofs", lambda folder, runs: proof_rows(folder)),
    ("fault matrix", lambda folder, runs: fault_rows(folder)),
    ("transcripts of another runtime", lambda folder, runs: transcript_rows()),
    ("permission oracle", lambda folder, runs: oracle_rows(max(10, runs // 4))),
    ("child-boundary ablation", lambda folder, runs: ablation_rows()),
    ("model evidence", lambda folder, runs: model_rows(runs, folder)),
]
CHANNEL = "conformance channel: the explore sweep"


@click.command()
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where to keep the run, its trace and the recorded model traces "
    "(default: a temporary folder).",
)
@count_option("--runs", 1, 100_000, 100, "Simulated model runs to record and check.")
@click.option(
    "--no-explore",
    is_flag=True,
    help="Leave out the explore sweep (a minute or more).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def demo(out: Path | None, runs: int, no_explore: bool, as_json: bool) -> None:
    """Run the whole story and print one table; exit 1 if any row fails."""
    if out is not None:
        writable_dir(out)  # before the work, not a traceback half-way
    with tempfile.TemporaryDirectory(prefix="metis-demo-") as tmp:
        folder = (out or Path(tmp)).absolute()  # `make demo` gives a relative --out
        folder.mkdir(parents=True, exist_ok=True)
        rows: list[Row] = []
        for title, section in SECTIONS:
            if not as_json:
                click.echo(f"== {title} ...", err=True)
            rows += section(folder, runs)
        if not no_explore:
            if not as_json:
                click.echo(f"== {CHANNEL} ...", err=True)
            rows += channel_rows(folder)
    ok = all(r.ok for r in rows)
    if as_json:
        emit_json({"ok": ok, "rows": [r.to_json() for r in rows]})
    else:
        click.echo(
            table(
                ["part", "check", "result", "detail"],
                [(r.part, r.check, "ok" if r.ok else "FAIL", r.detail) for r in rows],
            )
        )
        click.echo(
            f"\n{sum(r.ok for r in rows)}/{len(rows)} checks hold" + ("" if ok else " — SOME FAIL")
        )
    sys.exit(EXIT_OK if ok else EXIT_VIOLATION)
