"""Runtime bugs a trace alone cannot see, caught by the witness.

Each fault is a small patch applied to a temporary copy of `metis_runtime`
(never the shipped one), put first on PYTHONPATH for the run. The witness
itself starts with `python -I`, so it never loads the patched copy. In every
case the trace conforms to the model; the witness shows the effect."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

import pytest

from tests._metis_cli import ROOT
from tests._metis_cli import env
from tests._metis_cli import metis
from tests.runtime.test_loop_support import write_scenario

# (file in metis_runtime, text, replacement): each one realistic, and invisible in the trace.
BACKUP_BEFORE_OVERWRITE = (
    "tools/_fs.py",
    '            with ctx.roots.parent(path, tool="write", create=True) as dir_fd:\n'
    "                write_at(dir_fd, path.name, data)",
    '            with ctx.roots.parent(path, tool="write", create=True) as dir_fd:\n'
    "                if existed:  # FAULT: an unlogged backup beside the file\n"
    "                    write_at(dir_fd, path.name + '.orig', path.read_bytes())\n"
    "                write_at(dir_fd, path.name, data)",
)
DENIED_STILL_RUNS = (
    "_loop.py",
    "        if not admitted:\n            why = ",
    "        if not admitted:\n"
    "            if tool is not None:  # FAULT: the effect of a denied call still runs\n"
    "                await tool.run(block.input, self.ctx)\n"
    "            why = ",
)
RESUME_RERUNS_COMMITTED = (
    "_loop.py",
    "            if c.result is None and c.committed:\n",
    "            if c.result is None and c.committed:\n"
    "                for ev in self.trace.events:  # FAULT: re-run the committed effect\n"
    "                    for cc in getattr(ev, 'calls', ()):\n"
    "                        if cc.occ == c.occ:\n"
    "                            await self._by_name[c.tool].run(dict(cc.input), self.ctx)\n",
)


def _patched(tmp: Path, fault: tuple[str, str, str]) -> Path:
    """A copy of the runtime with `fault` applied; the folder to put on PYTHONPATH."""
    where, old, new = fault
    pkg = tmp / "patched"
    shutil.copytree(ROOT / "metis_runtime", pkg / "metis_runtime")
    target = pkg / "metis_runtime" / where
    text = target.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"the fault no longer applies to {where}"
    target.write_text(text.replace(old, new), encoding="utf-8")
    return pkg


def _conform(tmp: Path, trace: Path) -> dict[str, object]:
    """`metis conform --json` of a faulty run: it fails, and only on what the witness saw."""
    done = metis("conform", str(trace), "--json", cwd=tmp)
    assert done.returncode == 1, done.stdout
    out = json.loads(done.stdout)
    assert out["verdict"] == "violates"
    violations = out["violations"]
    assert violations and all(v.get("witnessed") for v in violations), (
        "the trace alone must conform: this is a fault only the witness sees"
    )
    return {"violations": violations}


def _first(witness: dict[str, object]) -> dict[str, object]:
    violations = witness["violations"]
    assert isinstance(violations, list) and violations
    v = violations[0]
    assert v["witnessed"] is True and isinstance(v["witness_line"], int)
    return v  # type: ignore[no-any-return]


def test_an_unlogged_backup_write_is_witnessed_as_auth_1(tmp_path: Path) -> None:
    pkg = _patched(tmp_path, BACKUP_BEFORE_OVERWRITE)
    trace = tmp_path / "run" / "trace.jsonl"
    scenario = write_scenario(
        tmp_path / "s.yaml",
        [
            [{"tool": "write", "id": "w1", "input": {"path": "a.txt", "content": "new"}}],
            [{"text": "done"}],
        ],
        files={"a.txt": "old"},
    )
    args = ["--scenario", str(scenario), "--workspace", "ws", "--mode", "acceptEdits"]
    done = metis(
        "run", *args, "--headless", "--trace", str(trace), "-q", "--witness",
        cwd=tmp_path, environ=env([pkg]),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "ws" / "a.txt.orig").exists()  # the fault really ran
    v = _first(_conform(tmp_path, trace))
    assert v["invariant"] == "AUTH-1" and "a.txt.orig" in str(v["message"])


def test_the_effect_of_a_rejected_ask_is_witnessed_as_auth_1(tmp_path: Path) -> None:
    pkg = _patched(tmp_path, DENIED_STILL_RUNS)
    trace = tmp_path / "run" / "trace.jsonl"
    args = ["--workspace", "ws", "--mode", "default", "--headless", "--trace", str(trace)]
    done = metis(
        "run", "Fix the greeting format", *args, "-q", "--witness",
        cwd=tmp_path, environ=env([pkg]),
    )  # fmt: skip
    assert "Hello, " in (tmp_path / "ws" / "src" / "greeter.py").read_text()  # it ran
    assert done.returncode in (0, 1), done.stderr
    witness = _conform(tmp_path, trace)
    messages = [str(v["message"]) for v in witness["violations"]]  # type: ignore[union-attr]
    assert any("greeter.py" in m and "denied call" in m for m in messages), messages


@pytest.mark.slow
def test_a_committed_effect_run_again_on_resume_is_witnessed_as_retry_1(tmp_path: Path) -> None:
    pkg = _patched(tmp_path, RESUME_RERUNS_COMMITTED)
    scenario = write_scenario(
        tmp_path / "kill.yaml",
        [
            [
                {"tool": "bash", "id": "t1", "input": {"command": "echo ran >> count.txt"}},
                {"tool": "write", "id": "t2", "input": {"path": "w.txt", "content": "w"}},
            ],
            [{"text": "All done."}],
        ],
    )
    trace = tmp_path / "run" / "trace.jsonl"
    common = ["--workspace", "ws", "--trace", str(trace), "--mode", "bypassPermissions"]
    killed = metis(
        "run", *common, "--scenario", str(scenario), "-q", "--witness",
        cwd=tmp_path, environ=env([pkg], METIS_FAILPOINT="journal:commit:1.0"),
    )  # fmt: skip
    assert killed.returncode == 128 + signal.SIGKILL, killed.stderr
    resumed = metis(
        "run", "--resume", "--trace", str(trace), "-q", "--witness",
        cwd=tmp_path, environ=env([pkg]),
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert (tmp_path / "ws" / "count.txt").read_text() == "ran\nran\n"  # it ran twice
    witness = _conform(tmp_path, trace)
    violations = witness["violations"]
    assert isinstance(violations, list)
    retry = [v for v in violations if v["invariant"] == "RETRY-1"]
    # the re-run `bash -c` is matched by its command; its write to count.txt is
    # unexplained (AUTH-1): a bash call's footprint is anything, so the path alone
    # does not say which committed effect ran again
    assert retry and "1.0" in retry[0]["message"] and "echo ran" in retry[0]["message"]
    assert {v["invariant"] for v in violations} <= {"RETRY-1", "AUTH-1"}
