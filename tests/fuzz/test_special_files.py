"""Every CLI reader against what is not a regular file, and against hostile
sizes: a FIFO (which would block), `/dev/zero` through a symlink (which would
be read without end), a directory, an oversized file; one line each, exit 2,
within bounds. A few run in a real subprocess under `RLIMIT_AS`."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from metis_check import simulate
from metis_trace import dumps_trace

from ._harness import Hung
from ._harness import assert_clean
from ._harness import bounded_run

ROOT = Path(__file__).resolve().parents[2]

Kind = Callable[[Path], None]


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _directory(path: Path) -> None:
    path.mkdir()


KINDS: dict[str, tuple[Kind, str]] = {
    "fifo": (_fifo, "not a regular file (a FIFO)"),
    "dev-zero": (_zero, "not a regular file (a character device)"),
    "directory": (_directory, "not a regular file (a directory)"),
}


def _readers(tmp: Path, bad: Path) -> dict[str, list[str]]:
    """argv for each reader, with `bad` where its input goes."""
    ws = tmp / "ws"
    ws.mkdir(exist_ok=True)
    return {
        "conform-claude-code": ["conform", "--format", "claude-code", str(bad)],
        "conform-anthropic": ["conform", "--format", "anthropic", str(bad)],
        "permissions-settings": ["permissions", "check", "--settings", str(bad), "--tool", "bash"],
        "run-scenario": [
            "run",
            "--workspace",
            str(ws),
            "--scenario",
            str(bad),
            "-q",
            "--provider",
            "replay",
        ],
        "run-settings": [
            "run",
            "--workspace",
            str(ws),
            "--settings",
            str(bad),
            "-q",
            "--provider",
            "replay",
        ],
    }


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize(
    "reader",
    [
        "conform-claude-code",
        "conform-anthropic",
        "permissions-settings",
        "run-scenario",
        "run-settings",
    ],
)
def test_a_reader_refuses_what_is_not_a_regular_file(
    tmp_path: Path, reader: str, kind: str
) -> None:
    make, message = KINDS[kind]
    bad = tmp_path / "input.bin"
    make(bad)
    outcome = bounded_run(_readers(tmp_path, bad)[reader], seconds=20).outcome
    assert_clean(outcome, str(bad))
    assert outcome.code == 2
    if kind == "directory" and reader.startswith("conform"):
        message = "no *.jsonl or *.json file below it"  # a folder of transcripts is read as such
    assert message in outcome.error_lines[0], outcome.error_lines


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_conform_trace_refuses_special_files(tmp_path: Path, kind: str) -> None:
    make, message = KINDS[kind]
    bad = tmp_path / "trace.jsonl"
    make(bad)
    outcome = bounded_run(["conform", str(bad)]).outcome
    assert outcome.code == 2 and message in outcome.error_lines[0]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_run_directory_with_a_special_trace(tmp_path: Path, kind: str) -> None:
    make, _ = KINDS[kind]
    run = tmp_path / "run"
    (run / "agents" / "a1").mkdir(parents=True)
    (run / "trace.jsonl").write_text(dumps_trace(*simulate(1)))
    make(run / "agents" / "a1" / "trace.jsonl")
    outcome = bounded_run(["conform", str(run)]).outcome
    if kind == "directory":  # a folder named trace.jsonl holds no trace: the tree is the root's
        assert_clean(outcome, str(run))
    else:
        assert outcome.code == 2, outcome
        assert "a1/trace.jsonl: not a regular file" in outcome.error_lines[0]


def test_agents_list_reports_a_special_definition_file_and_goes_on(tmp_path: Path) -> None:
    folder = tmp_path / ".metis" / "agents"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "fifo.md")
    (folder / "zero.md").symlink_to("/dev/zero")
    (folder / "good.md").write_text("---\nname: good\ndescription: fine\n---\nbody\n")
    outcome = bounded_run(
        ["agents", "list", "--project", str(tmp_path), "--user-dir", str(tmp_path / "none")]
    ).outcome
    assert_clean(outcome, str(tmp_path))
    text = outcome.stdout + outcome.stderr
    assert "good" in text
    assert "fifo.md: file: not a regular file (a FIFO)" in text
    assert "zero.md: file: not a regular file (a character device)" in text


def test_resume_refuses_a_journal_that_is_a_fifo(tmp_path: Path) -> None:
    trace = tmp_path / "run" / "trace.jsonl"
    trace.parent.mkdir()
    trace.write_text(dumps_trace(*simulate(1)))
    os.mkfifo(trace.parent / "trace.jsonl.journal")
    outcome = bounded_run(["run", "--resume", "--trace", str(trace)]).outcome
    assert_clean(outcome, str(trace.parent))
    assert outcome.code == 2
    assert "trace.jsonl.journal: not a regular file (a FIFO)" in outcome.error_lines[0]


def test_the_size_limit_applies_and_names_its_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from metis_runtime._input import configure_input_limits

    big = tmp_path / "session.jsonl"
    big.write_bytes(b'{"type": "summary"}\n' * 2000)
    monkeypatch.setenv("METIS_MAX_INPUT_BYTES", "10000")
    configure_input_limits()
    try:
        outcome = bounded_run(["conform", "--format", "claude-code", str(big)]).outcome
    finally:
        monkeypatch.delenv("METIS_MAX_INPUT_BYTES")
        configure_input_limits()
    assert outcome.code == 2
    assert outcome.error_lines == [
        f"metis: error: {big}: larger than the input limit of 10000 bytes (set METIS_MAX_INPUT_BYTES)"
    ]


def _limited(
    argv: list[str], env: dict[str, str], address_space: int
) -> subprocess.CompletedProcess[str]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (address_space, address_space))

    return subprocess.run(
        [sys.executable, "-m", "metis_cli", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        preexec_fn=limit,
    )


def test_in_a_real_process_under_rlimit_as(tmp_path: Path) -> None:
    """The kernel's bound, not the harness's: 1 GiB of address space, a
    /dev/zero symlink and a file over a small input limit."""
    zero = tmp_path / "zero.jsonl"
    zero.symlink_to("/dev/zero")
    done = _limited(["conform", str(zero)], {}, 1 << 30)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == f"metis: error: {zero}: not a regular file (a character device)"
    big = tmp_path / "big.jsonl"
    with big.open("wb") as fh:
        fh.truncate(64 << 20)  # 64 MiB of NUL bytes, sparse on disk
    done = _limited(["conform", str(big)], {"METIS_MAX_INPUT_BYTES": str(8 << 20)}, 1 << 30)
    assert done.returncode == 2
    assert "larger than the input limit of 8388608 bytes" in done.stderr
    bad_env = _limited(["conform", str(big)], {"METIS_MAX_JSON_DEPTH": "nan"}, 1 << 30)
    assert bad_env.returncode == 2
    assert bad_env.stderr.strip() == (
        "metis: error: environment: METIS_MAX_JSON_DEPTH='nan': expected a positive integer"
    )


def test_the_harness_catches_a_hang_and_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from metis_runtime import _input

    monkeypatch.setattr(_input, "read_input_bytes", lambda *a, **k: time.sleep(60))
    with pytest.raises(Hung):
        bounded_run(["conform", "--format", "claude-code", "x.jsonl"], seconds=0.5)
    from tests.input._cli import Outcome

    with pytest.raises(AssertionError):
        assert_clean(Outcome(1, "", "Traceback (most recent call last):\n"))
    with pytest.raises(AssertionError):
        assert_clean(Outcome(2, "", "metis: error: somewhere else\n"), "x.jsonl")
