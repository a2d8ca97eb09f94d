"""Every process of an agent tree dies with its root, even on SIGKILL: kill
the root `metis run` while its bash calls have started `setsid`, `nohup`, a
double fork, a `&` job and a Background job; after 5 s, none survives."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest

from metis_runtime.agents import guard_tree
from metis_runtime.agents._shepherd import kill_tree
from tests._procs import live_processes
from tests._procs import proc_file
from tests.runtime.test_loop_support import metis_run_argv
from tests.runtime.test_loop_support import write_scenario

pytestmark = pytest.mark.slow


def _holding(marker: str) -> list[int]:
    return [pid for pid, _ in live_processes() if marker.encode() in proc_file(pid, "cmdline")]


def test_killing_the_root_leaves_no_process_behind(tmp_path: Path) -> None:
    marker = f"{random.randint(100000, 999999)}.5"  # `sleep 900<marker>`: ours alone
    sleep = f"sleep 900{marker}"
    ws = tmp_path / "ws"
    turns = [
        [
            {
                "tool": "bash",
                "id": "a",
                "input": {"command": f"setsid {sleep} </dev/null >/dev/null 2>&1 &"},
            },
            {"tool": "bash", "id": "b", "input": {"command": f"nohup {sleep} >/dev/null 2>&1 &"}},
            {
                "tool": "bash",
                "id": "c",
                "input": {"command": f"( ( {sleep} >/dev/null 2>&1 & ) & ); true"},
            },
            {"tool": "bash", "id": "d", "input": {"command": sleep, "background": True}},
        ],
        [
            {
                "tool": "bash",
                "id": "e",
                "input": {"command": f"{sleep} & touch started.marker; wait"},
            }
        ],
        [{"text": "never reached"}],
    ]
    scenario = write_scenario(tmp_path / "s.yaml", turns)
    proc = subprocess.Popen(
        metis_run_argv(
            "--workspace",
            str(ws),
            "--scenario",
            str(scenario),
            "--headless",
            "--mode",
            "bypassPermissions",
            "-q",
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while not (ws / "started.marker").exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the calls never started"
            time.sleep(0.05)
        time.sleep(0.3)
        before = _holding(f"900{marker}")
        # What a foreground call leaves in its group dies when it ends (nohup,
        # the double fork); what escaped it lives on: setsid's, the job's, the last call's.
        assert len(before) >= 3, before
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        # The shepherd kills them once it sees the root die: poll, since a
        # loaded machine can take longer than a fixed wait.
        deadline = time.monotonic() + 30
        survivors = _holding(f"900{marker}")
        while survivors and time.monotonic() < deadline:
            time.sleep(0.2)
            survivors = _holding(f"900{marker}")
    finally:
        for pid in _holding(f"900{marker}"):
            os.kill(pid, signal.SIGKILL)  # never leave them to the next test
        if proc.poll() is None:
            proc.kill()
    assert survivors == [], f"{len(survivors)} of {len(before)} processes survived"


def test_the_shepherd_kills_a_marked_process_that_left_every_group() -> None:
    token = os.urandom(6).hex()
    env = {**os.environ, "METIS_TREE": token}
    out = subprocess.run(
        ["sh", "-c", "setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(out.stdout)
    try:
        assert kill_tree(token, "") >= 1
        deadline = time.monotonic() + 5
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert (
            not Path(f"/proc/{pid}").exists()
            or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]
        )
    finally:
        with __import__("contextlib").suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_a_child_agent_does_not_start_a_shepherd_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from metis_runtime.agents import _process

    monkeypatch.setenv("METIS_TREE", "parent-token")
    monkeypatch.setattr(_process, "_guard", [])  # whatever this process did before
    became: list[bool] = []  # the test process itself must not turn subreaper
    monkeypatch.setattr(_process, "become_subreaper", lambda: became.append(True) or True)
    assert guard_tree() is None
    assert _process._guard == [] and became == [True]  # its orphans are its own to kill
