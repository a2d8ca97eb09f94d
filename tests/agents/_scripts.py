"""Scripted providers that child processes build by name (`provider.factory`).

Child processes import this module (`tests.agents._scripts:child_provider`),
so the tests put the repository on PYTHONPATH. Each role plays a short,
fixed script; its final answer quotes the tool results it got, so the
parent's trace (and the test) can see what happened inside the child.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from metis_runtime.providers import ModelRequest
from metis_runtime.providers import ScriptedProvider
from metis_runtime.providers import TextBlock
from metis_runtime.providers import ToolResultBlock
from metis_runtime.providers import ToolUseBlock


def _results(request: ModelRequest) -> list[str]:
    last = request.messages[-1]
    return [b.content for b in last.content if isinstance(b, ToolResultBlock)]


def _answer(request: ModelRequest, prefix: str) -> list[Any]:
    seen = " | ".join(" ".join(r.split())[:300] for r in _results(request))
    return [TextBlock(f"{prefix} [{seen}]")]


def _planner(request: ModelRequest, n: int) -> Sequence[Any]:
    if n == 0:
        # A plan child has no spawn_agent: the call must come back unknown.
        return [
            ToolUseBlock("p1", "read", {"path": "untracked.txt"}),
            ToolUseBlock("p2", "spawn_agent", {"agent": "reviewer", "task": "x"}),
        ]
    return _answer(request, "PLAN: write feature.txt")


def _implementer(request: ModelRequest, n: int) -> Sequence[Any]:
    if n == 0:
        return [
            ToolUseBlock("i1", "write", {"path": "feature.txt", "content": "implemented\n"}),
            ToolUseBlock("i2", "read", {"path": "tracked.txt"}),
        ]
    if n == 1:
        return [ToolUseBlock("i3", "spawn_agent", {"agent": "reviewer", "task": "review it"})]
    return _answer(request, "IMPLEMENTED")


def _sleeper(request: ModelRequest, n: int) -> Sequence[Any]:
    if n == 0:
        # Spawn a grandchild (async) that sleeps too, then sleep: a tree to kill.
        return [
            ToolUseBlock(
                "s1", "spawn_agent", {"agent": "sleeper", "task": "sleep deeper", "mode": "async"}
            ),
            ToolUseBlock("s2", "bash", {"command": "sleep 120"}),
        ]
    return [TextBlock("woke up")]


def _echo(request: ModelRequest, n: int) -> Sequence[Any]:
    if n == 0:
        return [ToolUseBlock("e1", "ls", {})]
    return _answer(request, "ECHO")


async def _slow(request: ModelRequest, n: int) -> Sequence[Any]:
    await asyncio.sleep(60)
    return [TextBlock("too late")]


def _hooked(depth: int):  # type: ignore[no-untyped-def]
    def script(request: ModelRequest, n: int) -> Sequence[Any]:
        if n == 0:
            calls: list[Any] = [ToolUseBlock("h1", "bash", {"command": "rm -f victim.txt"})]
            if depth < 2:
                calls.append(
                    ToolUseBlock(
                        "h2",
                        "spawn_agent",
                        {"agent": "hooked", "task": f"delete at depth {depth + 1}"},
                    )
                )
            return calls
        return _answer(request, f"HOOKED {depth}")

    return script


def _listener(request: ModelRequest, n: int) -> Sequence[Any]:
    if n == 0:
        return [ToolUseBlock("l1", "bash", {"command": "sleep 2"})]
    # Quote every user text: a queued message joins the user message of its turn.
    texts = [
        b.text
        for m in request.messages
        if m.role == "user"
        for b in m.content
        if isinstance(b, TextBlock)
    ]
    return [TextBlock("HEARD: " + " | ".join(texts))]


def _envprobe(request: ModelRequest, n: int) -> Sequence[Any]:
    if n == 0:
        return [ToolUseBlock("v1", "bash", {"command": "env"})]
    return [TextBlock("ENV\n" + "\n".join(_results(request)))]


def _writer(request: ModelRequest, n: int) -> Sequence[Any]:
    if n == 0:
        return [
            ToolUseBlock("w1", "write", {"path": "feature.txt", "content": "from the child\n"}),
            ToolUseBlock(
                "w2",
                "edit",
                {"path": "tracked.txt", "old": "changed but not committed", "new": "by the child"},
            ),
        ]
    return _answer(request, "WROTE")


def _lead(request: ModelRequest, n: int) -> Sequence[Any]:
    """Tries to spawn an agent its `tools: Agent(reviewer)` does not allow."""
    if n == 0:
        return [ToolUseBlock("d1", "spawn_agent", {"agent": "planner", "task": "plan"})]
    return _answer(request, "LEAD")


def _generator(task: str):  # type: ignore[no-untyped-def]
    """Writes the files its task names (space-separated) through a script it
    runs, as a build step would: its own gate sees `python3 gen.py`, not the
    paths. The script removes itself."""
    code = (
        "import os, pathlib\n"
        f"for name in {task.split()!r}:\n"
        "    path = pathlib.Path(name)\n"
        "    path.parent.mkdir(parents=True, exist_ok=True)\n"
        "    path.write_text('written by gen.py\\n')\n"
        "os.remove('gen.py')\n"
    )

    def script(request: ModelRequest, n: int) -> Sequence[Any]:
        if n == 0:
            return [ToolUseBlock("g1", "write", {"path": "gen.py", "content": code})]
        if n == 1:
            return [ToolUseBlock("g2", "bash", {"command": "python3 gen.py"})]
        return _answer(request, "GENERATED")

    return script


SCRIPTS = {
    "planner": _planner,
    "implementer": _implementer,
    "reviewer": _echo,
    "verifier": _echo,
    "sleeper": _sleeper,
    "slow": _slow,
    "listener": _listener,
    "envprobe": _envprobe,
    "writer": _writer,
    "lead": _lead,
}


def child_provider(info: Mapping[str, Any], **options: Any) -> ScriptedProvider:
    if info["agent"] == "broken":
        raise RuntimeError("this provider cannot be built")
    if info["agent"] == "hooked":
        return ScriptedProvider(_hooked(int(info["depth"])), name="scripted-hooked")
    if info["agent"] == "generator":
        return ScriptedProvider(_generator(str(info["task"])), name="scripted-generator")
    script = SCRIPTS.get(str(info["agent"]), _echo)
    return ScriptedProvider(script, name=f"scripted-{info['agent']}")


def veto_secret_paths(tool: str, input: Mapping[str, Any]) -> str | None:
    """A callable PreToolUse hook: no tool may touch a path with 'secret' in it."""
    if "secret" in str(input.get("path", "")):
        return "paths with 'secret' are off limits"
    return None
