"""Child processes for real: sanitised environment, process groups, timeouts,
kill, messages, waiting; and no orphan left when the root is killed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from metis_runtime.agents import AgentDefinition
from metis_runtime.agents import GuardLimits
from metis_runtime.agents import live_groups
from metis_runtime.agents import sanitized_env
from metis_runtime.providers import ModelRequest
from metis_runtime.providers import TextBlock
from metis_runtime.providers import ToolUseBlock
from metis_trace import Mode
from tests._procs import live_processes
from tests._procs import proc_file

from ._support import REPO
from ._support import child_env
from ._support import git
from ._support import make_root
from ._support import spawn
from ._support import tree_report

pytestmark = pytest.mark.slow


def test_the_environment_drops_injection_variables() -> None:
    env = sanitized_env(
        {
            "PATH": "/bin",
            "LD_PRELOAD": "x.so",
            "LD_LIBRARY_PATH": "/l",
            "LD_AUDIT": "a",
            "DYLD_INSERT_LIBRARIES": "d",
            "SUDO_USER": "root",
            "ANTHROPIC_API_KEY": "sk-keep",
        },
        {"NODE_ENV": "test", "LD_PRELOAD": "from-a-definition.so"},
    )
    assert env == {"PATH": "/bin", "ANTHROPIC_API_KEY": "sk-keep", "NODE_ENV": "test"}


def _definition(name: str, tools: tuple[str, ...], **env: str) -> AgentDefinition:
    return AgentDefinition(name=name, description=name, tools=tools, env=env, system_prompt=name)


def _spawned_id(content: Sequence[Any]) -> str:
    """The agent id an async spawn's result (the first block of `content`) names."""
    return str(content[0].content.split()[2])


def _results_text(content: Sequence[Any]) -> TextBlock:
    """A final answer quoting every tool result in `content`."""
    return TextBlock("\n".join(b.content for b in content if hasattr(b, "content")))


def test_a_child_process_sees_the_sanitised_environment(tmp_path: Path) -> None:
    def script(request: ModelRequest, n: int) -> list[Any]:
        if n == 0:
            return [spawn("c1", "envprobe", "print env")]
        return [TextBlock(request.messages[-1].content[0].content)]  # type: ignore[union-attr]

    root = make_root(
        tmp_path,
        script,
        mode=Mode.BYPASS,
        extra_definitions=[_definition("envprobe", ("bash",), PROBE_VAR="from-definition")],
    )
    dirty = {
        "LD_AUDIT": "",
        "DYLD_INSERT_LIBRARIES": "evil",
        "SUDO_USER": "root",
        "METIS_KEEP_ME": "yes",
    }
    root.supervisor.env = {**child_env(), **dirty}
    result = root.run("probe")
    assert result.status.value == "completed"
    lines = set(result.text.splitlines())
    assert "PROBE_VAR=from-definition" in lines and "METIS_KEEP_ME=yes" in lines
    assert not [line for line in lines if line.startswith(("LD_AUDIT=", "DYLD_", "SUDO_"))]
    # The child process has the key (its provider may need it); its tools do not.
    assert not [line for line in lines if line.startswith("SOME_API_KEY=")]


def test_async_children_are_waited_for_messaged_and_listed(tmp_path: Path) -> None:
    ids: list[str] = []

    def script(request: ModelRequest, n: int) -> list[Any]:
        last = request.messages[-1].content
        if n == 0:
            return [spawn("c1", "listener", "listen", mode="async", worktree="temp")]
        if n == 1:
            ids.append(_spawned_id(last))
            return [
                ToolUseBlock("c2", "message_agent", {"agent_id": ids[0], "message": "use tabs"}),
                ToolUseBlock("c3", "list_agents", {}),
            ]
        if n == 2:
            return [ToolUseBlock("c4", "wait_agent", {"agent_ids": [ids[0]], "timeout_s": 60})]
        return [_results_text(last)]

    root = make_root(
        tmp_path, script, mode=Mode.BYPASS, extra_definitions=[_definition("listener", ("bash",))]
    )
    result = root.run("listen")
    assert result.status.value == "completed"
    assert "[message from root] use tabs" in result.text
    assert f"agent {ids[0]} (listener) completed" in result.text
    listing = json.loads(root.provider.requests[2].messages[-1].content[1].content)  # type: ignore[union-attr]
    (child,) = listing["children"]
    assert (
        child["agent_id"] == ids[0] and child["status"] == "running" and child["worktree"] == "temp"
    )
    assert listing["tree"]["limits"]["max_depth"] == 5
    assert {"coordinator", "listener"} <= {d["name"] for d in listing["definitions"]}
    assert tree_report(root.run_dir).ok


def test_a_timed_out_child_is_killed_and_its_worktree_removed(tmp_path: Path) -> None:
    def script(request: ModelRequest, n: int) -> list[Any]:
        if n == 0:
            return [spawn("c1", "slow", "take forever", worktree="branch")]
        return [TextBlock(request.messages[-1].content[0].content)]  # type: ignore[union-attr]

    root = make_root(
        tmp_path,
        script,
        limits=GuardLimits(timeout_s=3.0),
        extra_definitions=[_definition("slow", ("read",))],
    )
    started = time.monotonic()
    result = root.run("wait")
    assert time.monotonic() - started < 30
    assert "timed_out" in result.text and "killed after the 3 s timeout" in result.text
    (child,) = root.supervisor.children.values()
    assert child.status == "timed_out" and not child.workspace.path.exists()
    assert git(["worktree", "list"], root.workspace).count("\n") == 1
    assert root.supervisor.ledger.snapshot().running == ()
    assert child.pid not in live_groups()
    assert tree_report(root.run_dir).ok  # the killed child's trace is cut short, still valid


def test_kill_agent_stops_the_group_and_a_failed_child_is_reported(tmp_path: Path) -> None:
    ids: list[str] = []

    def script(request: ModelRequest, n: int) -> list[Any]:
        last = request.messages[-1].content
        if n == 0:
            return [
                spawn("c1", "sleeper", "sleep", mode="async", worktree="temp"),
                spawn("c2", "broken", "fail", worktree="branch"),
            ]
        if n == 1:
            ids.append(_spawned_id(last))
            time.sleep(1.0)  # let the sleeper start its own sleep
            return [ToolUseBlock("c3", "kill_agent", {"agent_id": ids[0]})]
        return [_results_text(last)]

    sleeper = _definition("sleeper", ("bash", "spawn_agent"))
    root = make_root(
        tmp_path,
        script,
        mode=Mode.BYPASS,
        limits=GuardLimits(max_depth=1),
        extra_definitions=[sleeper, _definition("broken", ("read",))],
    )
    result = root.run("kill")
    assert result.text == f"agent {ids[0]}: killed"
    records = {r.agent: r for r in root.supervisor.children.values()}
    assert records["sleeper"].status == "killed" and not records["sleeper"].workspace.path.exists()
    broken = records["broken"]
    assert broken.status == "failed" and "cannot be built" in broken.error
    assert not broken.workspace.path.exists()
    assert live_groups() == ()


def test_a_cancelled_parent_call_kills_the_child_and_removes_its_worktree(tmp_path: Path) -> None:
    def script(request: ModelRequest, n: int) -> list[Any]:
        if n == 0:
            return [spawn("c1", "slow", "forever", worktree="branch")]
        return [TextBlock("unreachable")]

    root = make_root(tmp_path, script, extra_definitions=[_definition("slow", ("read",))])

    async def main() -> Any:
        run = asyncio.ensure_future(root.loop.run("go"))
        while not any(r.status == "running" for r in root.supervisor.children.values()):
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)
        root.loop.cancel("the user stopped it")
        try:
            return await run
        finally:
            await root.supervisor.close()
            root.trace.close()

    result = asyncio.run(main())
    assert result.status.value == "cancelled"
    (child,) = root.supervisor.children.values()
    assert child.status == "cancelled" and not child.workspace.path.exists()
    assert git(["worktree", "list"], root.workspace).count("\n") == 1
    assert live_groups() == ()
    assert tree_report(root.run_dir).ok


# --- no orphans ------------------------------------------------------------------

_ROOT = """
import sys
from pathlib import Path
from metis_trace import Mode
from metis_runtime.agents import AgentDefinition, GuardLimits
from metis_runtime.providers import TextBlock, ToolUseBlock
from tests.agents._support import make_root

def script(request, n):
    if n == 0:
        calls = [ToolUseBlock("r1", "spawn_agent", {"agent": "sleeper", "task": "sleep", "mode": "async"})]
        if sys.argv[2] == "with-bash":
            calls.append(ToolUseBlock("r2", "bash", {"command": "sleep 300"}))
        else:
            calls.append(ToolUseBlock("r2", "wait_agent", {}))
        return calls
    return [TextBlock("done")]

sleeper = AgentDefinition(name="sleeper", description="s", tools=("bash", "spawn_agent"))
tmp = Path(sys.argv[1])
(tmp / "ws").mkdir()
(tmp / "ws" / ".metis" / "agents").mkdir(parents=True)
(tmp / "ws" / ".metis" / "agents" / "sleeper.md").write_text(
    "---\\nname: sleeper\\ndescription: s\\ntools: [bash, spawn_agent]\\n---\\ns\\n")
root = make_root(tmp, script, workspace=tmp / "ws", mode=Mode.BYPASS, limits=GuardLimits(max_depth=2))
print("ready", flush=True)
root.run("sleep")
"""


def _marked(marker: str) -> list[int]:
    """Live processes (not zombies) whose environment carries the marker."""
    mark = f"METIS_ORPHAN_MARK={marker}".encode()
    return [pid for pid, _ in live_processes() if mark in proc_file(pid, "environ").split(b"\0")]


@pytest.fixture
def marker() -> Iterator[str]:
    mark = uuid.uuid4().hex
    yield mark
    for pid in _marked(mark):  # whatever a failing test left behind
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _wait_for(predicate: Any, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize(
    ("sig", "root_runs_bash"),
    [
        (signal.SIGTERM, True),  # handlers run: every child group goes, tools' too
        # SIGKILL: no handler runs; the agents go by PR_SET_PDEATHSIG. The root's
        # own tool processes are not agents and have no parent-death signal, so
        # here the root waits on its child instead of sleeping in bash.
        (signal.SIGKILL, False),
    ],
)
def test_killing_the_root_leaves_no_orphan(
    tmp_path: Path, marker: str, sig: int, root_runs_bash: bool
) -> None:
    env = {**child_env(), "METIS_ORPHAN_MARK": marker}
    mode = "with-bash" if root_runs_bash else "waiting"
    proc = subprocess.Popen(
        [sys.executable, "-c", _ROOT, str(tmp_path), mode],
        env=env,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    expected = 6 if root_runs_bash else 5
    try:
        # root (+ its sleep), child + its sleep, grandchild + its sleep (depth 2 may not spawn).
        assert _wait_for(lambda: len(_marked(marker)) >= expected, 60), (
            _marked(marker),
            proc.poll(),
        )
        assert len(list(tmp_path.rglob("agents/*/trace.jsonl"))) == 2
        proc.send_signal(sig)
        proc.wait(timeout=30)
        assert _wait_for(lambda: not _marked(marker), 20), _marked(marker)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
