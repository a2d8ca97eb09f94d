"""TRACE-4: recorded signals against the witness's deliveries (specs/witness.md).

A real `metis run --witness` interrupted with SIGINT while a bash call runs
records the signal (with its pid) and the witness, through strace, the
delivery: the two agree. The same trace edited as a runtime that invented
its stop's source would write it (a SIGTERM nobody sent) is a TRACE-4
violation, and so is the real trace against a witness file without the
delivery; the trace alone conforms either way. Simulated runs with made-up
deliveries (`metis_check._witness_signal_cases`) hold the property both ways
under Hypothesis; strace's signal lines are parsed; a session that did not
trace signals, and a stop request, are reported as not observed.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_check import WitnessedTrace
from metis_check import check_witness
from metis_check._witness_signal_cases import break_signal
from metis_check._witness_signal_cases import signal_case
from metis_trace import SignalDelivered
from metis_trace import SignalReceived
from metis_trace import read_trace
from metis_witness._exec import SIGNALS
from metis_witness._exec import STRACE_ARGS
from metis_witness._exec import ExecParser
from tests._metis_cli import env
from tests._metis_cli import metis
from tests._metis_cli import metis_argv
from tests.runtime.test_loop_support import sigint_when
from tests.runtime.test_loop_support import write_scenario

from ._support import agrees_and_broken_is
from ._support import blind_to
from ._support import require_strace
from ._support import sessions
from ._support import witnessed_replay


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 100_000))
def test_simulated_runs_agree_and_an_unwitnessed_signal_is_trace_4(seed: int) -> None:
    case, found, _ = agrees_and_broken_is(seed, signal_case, break_signal, "TRACE-4")
    assert found.checks["TRACE-4"] == sum(isinstance(e, SignalReceived) for e in case[1])


def test_a_session_that_did_not_trace_signals_warns_and_passes_nothing() -> None:
    header, events, witness = signal_case(random.Random(3))
    old = blind_to(witness[0], "signals", 2, SignalDelivered)
    found = check_witness([old], [WitnessedTrace("t", header, events)])
    assert found.ok and "TRACE-4" not in found.checks
    assert any("did not observe signals" in u for u in found.unobserved)


def test_strace_signal_lines_are_parsed_and_the_stop_signals_traced() -> None:
    assert "signal=" + ",".join(SIGNALS) in STRACE_ARGS and "SIGINT" in SIGNALS
    parser = ExecParser(0.0, lambda: 9.0)
    lines = (
        "7 1.5 --- SIGINT {si_signo=SIGINT, si_code=SI_USER, si_pid=42, si_uid=0} ---\n"
        "8 1.6 --- SIGTERM {si_signo=SIGTERM, si_code=SI_KERNEL} ---\n"
    )
    got = [(r["kind"], r["pid"], r["signal"], r["code"], r["sender"]) for r in parser.feed(lines)]
    assert got == [
        ("signal", 7, "SIGINT", "SI_USER", 42),
        ("signal", 8, "SIGTERM", "SI_KERNEL", None),
    ]


def _interrupted_run(tmp_path: Path) -> Path:
    scenario = write_scenario(
        tmp_path / "slow.yaml",
        [
            [
                {"text": "A slow command."},
                {"tool": "bash", "id": "t1", "input": {"command": "sleep 30"}},
            ],
            [{"text": "Never reached."}],
        ],
    )
    trace, args = witnessed_replay(tmp_path, scenario)
    # The SIGINT goes to the witness, which relays it to the run.
    sigint_when(
        metis_argv(*args),
        env(),
        tmp_path,
        lambda: trace.exists() and '"effect_start"' in trace.read_text(),
        60,
        "the run never started its call",
    )
    return trace


def _conform(trace: Path, witness: Path, cwd: Path) -> dict[str, object]:
    done = metis("conform", str(trace), "--witness", str(witness), "--json", cwd=cwd)
    out: dict[str, object] = json.loads(done.stdout)
    return out


def test_a_real_interrupt_is_witnessed_and_an_invented_signal_is_trace_4(tmp_path: Path) -> None:
    require_strace()
    trace = _interrupted_run(tmp_path)
    witness = trace.with_name("trace.jsonl.witness")
    _header, events = read_trace(trace.read_text().splitlines())
    (received,) = [e for e in events if isinstance(e, SignalReceived)]
    assert received.name == "SIGINT" and received.pid is not None
    seen = [r for s in sessions(witness) for r in s.records if isinstance(r, SignalDelivered)]
    assert any(d.pid == received.pid and d.signal == "SIGINT" for d in seen)
    good = _conform(trace, witness, tmp_path)
    assert good["ok"], good
    assert good["checks"]["TRACE-4"] == 1  # type: ignore[index]

    # The runtime's word doctored: a SIGTERM nobody sent names the stop.
    lines = trace.read_text().splitlines()
    lines[received.seq + 1] = received.model_copy(
        update={"signum": 15, "name": "SIGTERM"}
    ).model_dump_json()
    doctored = tmp_path / "doctored" / "trace.jsonl"
    doctored.parent.mkdir()
    doctored.write_text("\n".join(lines) + "\n")
    assert metis("conform", str(doctored), cwd=tmp_path).returncode == 0  # alone: conforms
    bad = _conform(doctored, witness, tmp_path)
    (v,) = [v for v in bad["violations"] if v["invariant"] == "TRACE-4"]  # type: ignore[union-attr, index]
    assert "SIGTERM" in v["message"] and "no delivery" in v["message"]

    # The witness never saw the delivery: the real trace is then unexplained.
    kept = [line for line in witness.read_text().splitlines() if '"kind":"signal"' not in line]
    blind = tmp_path / "blind.witness"
    blind.write_text("\n".join(kept) + "\n")
    assert any(v["invariant"] == "TRACE-4" for v in _conform(trace, blind, tmp_path)["violations"])  # type: ignore[union-attr, index]
