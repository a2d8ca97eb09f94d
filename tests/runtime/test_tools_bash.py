"""The bash built-in: classification through the shell analysis, and real
subprocesses (process groups, timeout, cancellation, truncation)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import metis_runtime.shell as shell_pkg
from metis_runtime._errors import ToolError
from metis_runtime._errors import ToolInputError
from metis_runtime.shell import ShellAnalysis
from metis_runtime.shell import SimpleCommand
from metis_runtime.tools import BashTool
from metis_runtime.tools import JobManager
from metis_runtime.tools import ToolContext
from metis_runtime.tools import ToolOutput
from metis_runtime.tools import _bash as bash_module
from metis_trace import CallClass
from metis_trace import ToolKind
from tests._procs import alive
from tests._procs import live_processes
from tests._procs import stat_fields

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses /proc")

BASH = BashTool()


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return Path(os.path.realpath(root))


def _ctx(ws: Path, **env: str) -> ToolContext:
    return ToolContext(workspace=ws, env={"PATH": os.environ["PATH"], **env}, jobs=JobManager())


def _run(input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
    return asyncio.run(BASH.run(input, ctx))


# --- /proc (tests/_procs): an orphaned zombie still counts for kill(pid, 0) here,
# because PID 1 of a container may never reap it, so "dead" means gone or Z.


def _live_members(pgid: int) -> list[int]:
    return [pid for pid, fields in live_processes() if int(fields[2]) == pgid]


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return not _live_members(pgid)


def _eventually(pred: Any, timeout: float = 2.0) -> bool:
    # SIGKILL is delivered asynchronously; a dying process may still show
    # for a moment. Without the kill these processes would live ~30 s.
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return bool(pred())


def _read_pid(path: Path) -> int:
    return int(path.read_text().strip())


# A grandchild that records its pid, ignores SIGTERM (so only SIGKILL ends
# it) and sleeps; the shell records its own pid, which is the group id.
GRANDCHILD = (
    "echo $$ > leader.pid; sh -c \"trap '' TERM; echo \\$\\$ > gc.pid; exec sleep 30\" & wait"
)


# --- classification ------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "cls", "kind"),
    [
        ("ls -la", CallClass.SAFE, ToolKind.READ_ONLY),
        ("grep -r foo . | head -5", CallClass.SAFE, ToolKind.READ_ONLY),
        ("rm -rf build", CallClass.EXCLUSIVE, ToolKind.EXEC),
        ("cat a.txt > b.txt", CallClass.EXCLUSIVE, ToolKind.EXEC),
        ('eval "$CMD"', CallClass.EXCLUSIVE, ToolKind.EXEC),
        ("ls; python x.py", CallClass.EXCLUSIVE, ToolKind.EXEC),
    ],
)
def test_classification_uses_shell_analysis(
    ws: Path, command: str, cls: CallClass, kind: ToolKind
) -> None:
    c = BASH.classify({"command": command}, _ctx(ws))
    assert (c.cls, c.key, c.kind, c.command) == (cls, None, kind, command)
    assert BASH.kind({"command": command}) == kind


def test_background_is_background_class_whatever_the_command(ws: Path) -> None:
    for command in ("ls", "rm -rf x"):
        c = BASH.classify({"command": command, "background": True}, _ctx(ws))
        assert c.cls is CallClass.BACKGROUND and c.key is None


@pytest.fixture
def fake_analysis(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    box: dict[str, Any] = {}

    def fake(command: str) -> ShellAnalysis:
        if "raise" in box:
            raise box["raise"]
        return ShellAnalysis(
            commands=(SimpleCommand(argv=("x",), text="x"),),
            opaque=box["opaque"],
            read_only=box["read_only"],
        )

    # The Bash tool looks analyze_command up in the package at each call, so the
    # fake is what it asks (the real one's cache is not consulted).
    monkeypatch.setattr(shell_pkg, "analyze_command", fake)
    yield box


@pytest.mark.parametrize(
    ("read_only", "opaque", "cls"),
    [
        (True, False, CallClass.SAFE),
        (True, True, CallClass.EXCLUSIVE),
        (False, False, CallClass.EXCLUSIVE),
        (False, True, CallClass.EXCLUSIVE),
    ],
)
def test_safe_iff_read_only_and_not_opaque(
    ws: Path, fake_analysis: dict[str, Any], read_only: bool, opaque: bool, cls: CallClass
) -> None:
    fake_analysis.update(read_only=read_only, opaque=opaque)
    c = BASH.classify({"command": f"cmd {read_only} {opaque}"}, _ctx(ws))
    assert c.cls is cls
    assert c.kind is (ToolKind.READ_ONLY if cls is CallClass.SAFE else ToolKind.EXEC)


def test_failing_analysis_is_exclusive(ws: Path, fake_analysis: dict[str, Any]) -> None:
    fake_analysis["raise"] = RecursionError("deep")
    c = BASH.classify({"command": "weird"}, _ctx(ws))
    assert (c.cls, c.kind, c.paths) == (CallClass.EXCLUSIVE, ToolKind.EXEC, ())


def test_paths_cover_arguments_and_redirections(ws: Path) -> None:
    ctx = _ctx(ws, HOME="/home/someone")
    c = BASH.classify({"command": "cat ~/.ssh/id_rsa ../x --out=o.txt -n > .git/config"}, ctx)
    assert set(c.paths) >= {
        Path("/home/someone/.ssh/id_rsa"),
        Path(os.path.realpath(ws / "../x")),
        ws / "o.txt",
        ws / ".git" / "config",
    }
    assert ws / "-n" not in c.paths


def test_bad_input_is_one_line_error(ws: Path) -> None:
    ctx = _ctx(ws)
    cases: list[tuple[dict[str, Any], str]] = [
        ({}, "bash: missing required field 'command'"),
        ({"command": ""}, "bash: field 'command' must not be empty"),
        ({"command": "ls", "timeout": 0}, "bash: field 'timeout' must be > 0"),
        ({"command": "ls", "timeout": 601}, "bash: field 'timeout' must be <= 600"),
        ({"command": "ls", "timeout": "5"}, "bash: field 'timeout' must be a number, got string"),
        (
            {"command": "ls", "background": 1},
            "bash: field 'background' must be a boolean, got integer",
        ),
    ]
    for input, message in cases:
        with pytest.raises(ToolInputError) as info:
            _run(input, ctx)
        assert str(info.value) == message


# --- running -----------------------------------------------------------------------


def test_output_exit_code_env_and_cwd(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LEAKED_SECRET", "s3cret")
    ctx = _ctx(ws, FOO="bar")
    out = _run({"command": "echo out; echo err >&2; echo $FOO ${LEAKED_SECRET:-clean}; pwd"}, ctx)
    assert out == ToolOutput(f"out\nerr\nbar clean\n{ws}\n[exit code: 0]")
    out = _run({"command": "printf partial; exit 3"}, ctx)
    assert out == ToolOutput("partial\n[exit code: 3]", is_error=True)
    assert _run({"command": "kill -9 $$"}, ctx) == ToolOutput("[killed by SIGKILL]", is_error=True)


def test_runs_in_its_own_process_group(ws: Path) -> None:
    out = _run(
        {"command": "echo $$; ps -o pgid= -p $$ 2>/dev/null || cut -d' ' -f5 /proc/$$/stat"},
        _ctx(ws),
    )
    pid, pgid = out.content.split()[:2]
    assert pid == pgid and int(pgid) != os.getpgrp()


def test_output_is_truncated_with_marker(ws: Path) -> None:
    limit = bash_module.MAX_OUTPUT
    out = _run({"command": "head -c 100000 /dev/zero | tr '\\0' a; echo END"}, _ctx(ws))
    half = limit // 2
    assert out.content == (
        "a" * half
        + f"\n[... {100004 - limit} bytes of output truncated ...]\n"
        + "a" * (half - 4)
        + "END\n[exit code: 0]"
    )


def test_timeout_kills_the_whole_group(ws: Path) -> None:
    start = time.monotonic()
    out = _run({"command": "echo before; " + GRANDCHILD, "timeout": 0.5}, _ctx(ws))
    elapsed = time.monotonic() - start
    assert out.is_error
    assert out.content.startswith("before\n")
    assert out.content.endswith("[timed out after 0.5s; process group killed]")
    assert elapsed < 0.5 + bash_module.TERM_GRACE + 3
    leader, gc = _read_pid(ws / "leader.pid"), _read_pid(ws / "gc.pid")
    assert _eventually(lambda: not alive(gc))  # it ignored SIGTERM: SIGKILL got it
    assert _eventually(lambda: _group_gone(leader))


def test_cancellation_kills_the_group_before_propagating(ws: Path) -> None:
    ctx = _ctx(ws)
    seen: dict[str, int] = {}

    async def main() -> None:
        task = asyncio.create_task(BASH.run({"command": GRANDCHILD}, ctx))
        while not (ws / "gc.pid").exists() or not (ws / "gc.pid").read_text().strip():
            await asyncio.sleep(0.02)
        leader, gc = _read_pid(ws / "leader.pid"), _read_pid(ws / "gc.pid")
        fields = stat_fields(gc)
        assert fields is not None and int(fields[2]) == leader != os.getpgrp()
        seen.update(leader=leader, gc=gc)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # The leader was reaped and SIGKILL sent to the group before we got here.
        assert stat_fields(leader) is None

    asyncio.run(main())
    assert _eventually(lambda: not alive(seen["gc"]))
    assert _eventually(lambda: _group_gone(seen["leader"]))


def test_leftover_background_process_is_killed_when_the_call_ends(ws: Path) -> None:
    start = time.monotonic()
    out = _run({"command": "sleep 30 & echo $! > bg.pid; echo done"}, _ctx(ws))
    assert out == ToolOutput("done\n[exit code: 0]")
    assert time.monotonic() - start < 5  # did not wait for the pipe the sleep holds
    bg = _read_pid(ws / "bg.pid")
    assert _eventually(lambda: not alive(bg))


def test_missing_workspace_is_tool_error(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path / "gone")
    with pytest.raises(ToolError) as info:
        _run({"command": "true"}, ctx)
    assert not isinstance(info.value, ToolInputError)
    assert "bash: " in str(info.value) and "\n" not in str(info.value)
