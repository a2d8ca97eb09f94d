"""Fail points (`metis_runtime._failpoints`): a real `metis run` SIGKILLs itself
at the named journal or trace point, and `metis run --resume` continues it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from metis_check import check_trace
from metis_runtime import _failpoints
from metis_trace import read_trace
from tests._metis_cli import env
from tests._metis_cli import metis as _metis

REPO = Path(__file__).resolve().parents[2]


def _run(tmp: Path, point: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    trace = tmp / "run" / "trace.jsonl"
    done = _metis(
        "run",
        "--workspace",
        str(tmp / "ws"),
        "--mode",
        "acceptEdits",
        "--headless",
        "--trace",
        str(trace),
        "--quiet",
        environ=env(METIS_FAILPOINT=point),
    )
    return done, trace


def _journal(trace: Path) -> list[dict[str, object]]:
    lines = trace.with_name(trace.name + ".journal").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _events(trace: Path) -> list[object]:
    with trace.open() as fh:
        return read_trace(fh)[1]


def test_a_kill_after_the_commit_leaves_the_commit_journaled_and_the_trace_without_it(
    tmp_path: Path,
) -> None:
    done, trace = _run(tmp_path, "journal:commit:3.3")
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert _journal(trace)[-1]["type"] == "commit" and _journal(trace)[-1]["occ"] == "3.3"
    last = _events(trace)[-1]
    assert (last.kind, getattr(last, "occ", None)) != ("effect_end", "3.3")  # type: ignore[attr-defined]
    assert not any(e.kind == "effect_end" and e.occ == "3.3" for e in _events(trace))  # type: ignore[attr-defined]
    resumed = _metis("run", "--resume", "--trace", str(trace), "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    with trace.open() as fh:
        header, events = read_trace(fh)
    assert check_trace(events, header).ok
    ends = [e for e in events if e.kind == "effect_end" and e.occ == "3.3"]  # type: ignore[attr-defined]
    assert len(ends) == 1 and ends[0].committed  # type: ignore[attr-defined]
    assert (tmp_path / "ws" / "src" / "greeter.py").read_text().count("Hello, {name}!") == 1


def test_a_trace_point_kills_before_its_event_and_counts_matches(tmp_path: Path) -> None:
    done, trace = _run(tmp_path, "trace:results_sent:2")
    assert done.returncode == -signal.SIGKILL
    kinds = [(e.kind, getattr(e, "turn", None)) for e in _events(trace)]
    assert ("results_sent", 1) in kinds and ("results_sent", 2) not in kinds
    assert kinds[-1][0] == "result"
    # `@N` kills at the N-th match: turn 1 sends one request, so `@2` never comes
    done, _ = _run(tmp_path / "second", "trace:request:1@2")
    assert done.returncode == 0
    done, trace = _run(tmp_path / "first", "trace:request:1@1")
    assert done.returncode == -signal.SIGKILL
    assert [e.kind for e in _events(trace)] == ["turn_start"]


def test_a_malformed_point_is_ignored_with_one_line(tmp_path: Path) -> None:
    done, _ = _run(tmp_path, "nowhere:commit")
    assert done.returncode == 0
    assert done.stderr.strip().splitlines()[0].startswith("metis: ignoring METIS_FAILPOINT=")


def test_the_variable_is_not_inherited_by_what_the_run_starts() -> None:
    code = (
        "import os, metis_runtime, subprocess, sys; "
        "print(subprocess.run([sys.executable, '-c', "
        "'import os; print(os.environ.get(\"METIS_FAILPOINT\"))'], "
        "capture_output=True, text=True).stdout.strip())"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "METIS_FAILPOINT": "journal:commit:1.0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "None", out.stderr


@pytest.mark.parametrize(
    ("raw", "armed"),
    [
        ("journal:commit:1.2", ("journal:commit:1.2", 1)),
        ("trace:result:1.0@3", ("trace:result:1.0", 3)),
        ("journal:end:", ("journal:end:", 1)),
        ("trace:results_sent:2", ("trace:results_sent:2", 1)),
        ("trace::1.0", None),
        ("disk:commit:1.0", None),
        ("journal:commit", None),
        ("journal:commit:1.0@0", None),
        ("journal:commit:1.0@x", None),
    ],
)
def test_points_parse(raw: str, armed: tuple[str, int] | None) -> None:
    assert _failpoints._parse(raw) == armed


def test_keys_name_the_occurrence_else_the_turn_and_role() -> None:
    assert _failpoints.key_of({"occ": "1.2", "turn": 1}) == "1.2"
    assert _failpoints.key_of({"turn": 3, "role": "results"}) == "3.results"
    assert _failpoints.key_of({"turn": 3}) == "3"
    assert _failpoints.key_of({"status": "completed"}) == ""
