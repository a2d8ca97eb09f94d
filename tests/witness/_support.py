"""Running `metis run --witness` for real (`tests._metis_cli`), and reading what it wrote."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest

from metis_check import WitnessedTrace
from metis_check import WitnessReport
from metis_check import check_trace
from metis_check import check_witness
from metis_cli._witnessed import witness_report
from metis_trace import TraceEvent
from metis_trace import TraceHeader
from metis_trace import WitnessSession
from metis_trace import read_witness
from metis_witness._exec import probe

Case = tuple[TraceHeader, list[TraceEvent], list[WitnessSession]]
Breaker = Callable[
    [list[TraceEvent], list[WitnessSession], random.Random],
    tuple[list[TraceEvent], list[WitnessSession]],
]


def witnessed_replay(tmp_path: Path, scenario: Path) -> tuple[Path, list[str]]:
    """The trace, and the `metis` arguments, of a headless bypassPermissions
    replay of `scenario` under the witness (workspace `ws`, trace in `run/`)."""
    trace = tmp_path / "run" / "trace.jsonl"
    args = ["--workspace", "ws", "--trace", str(trace), "--mode", "bypassPermissions"]
    return trace, ["run", "go", *args, "--headless", "--scenario", str(scenario), "--witness"]


def require_strace() -> None:
    """Skip the test where strace cannot trace (the exec observer's tool)."""
    tracer, why = probe()
    if tracer is None:
        pytest.skip(f"strace cannot trace here: {why}")


def sessions(path: Path) -> list[WitnessSession]:
    with path.open(encoding="utf-8") as fh:
        return read_witness(fh)


def witness_check(trace: Path) -> WitnessReport:
    """The witness file beside `trace`, checked as `metis conform` checks it."""
    report = witness_report(trace, None)
    assert report is not None, f"no witness file beside {trace}"
    return report


def agrees_and_broken_is(
    seed: int, make: Callable[[random.Random], Case], breaker: Breaker, invariant: str
) -> tuple[Case, WitnessReport, WitnessReport]:
    """The made-up witnessed run `make` draws from `seed`: its trace conforms
    and its witness agrees; made to disagree by `breaker` (drawing on the same
    generator), the trace alone still conforms and the witness finds
    `invariant` and nothing else. The run, and both witness reports."""
    rng = random.Random(seed)
    case = make(rng)
    header, events, witness = case
    assert check_trace(events, header).ok
    found = check_witness(witness, [WitnessedTrace("t", header, events)])
    assert found.ok, found.violations
    broken_events, broken_witness = breaker(events, witness, rng)
    assert check_trace(broken_events, header).ok  # the trace alone cannot tell
    broken = check_witness(broken_witness, [WitnessedTrace("t", header, broken_events)])
    assert [v.invariant for v in broken.violations] == [invariant]
    return case, found, broken


def blind_to(session: WitnessSession, what: str, version: int, record: type) -> WitnessSession:
    """`session` as a witness of file version `version` that did not watch
    `what` would have written it: without its `record` records."""
    header = session.header.model_copy(
        update={
            "version": version,
            "watched": tuple(w for w in session.header.watched if w.what != what),
        }
    )
    records = tuple(r for r in session.records if not isinstance(r, record))
    return WitnessSession(header, 1, records, tuple(range(2, 2 + len(records))))
