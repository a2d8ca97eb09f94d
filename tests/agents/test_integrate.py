"""integrate_agent for real: a child in a git worktree (or a copy) finishes,
and its parent applies its changes, through the permission gate.

The children are real processes (scripted providers, `_scripts.py`); the
parent is a root agent run in process (`_support.make_root`).
"""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from metis_check import check_trace
from metis_runtime import Journal
from metis_runtime import TraceWriter
from metis_runtime.agents import AgentDefinition
from metis_runtime.agents import AgentSupervisor
from metis_runtime.agents import ChildRecord
from metis_runtime.agents import GuardLimits
from metis_runtime.agents import IntegrateAgentTool
from metis_runtime.agents import WorkspaceError
from metis_runtime.agents import WorkspaceManager
from metis_runtime.agents import _worktree as worktree_module
from metis_runtime.agents import load_agents
from metis_runtime.agents import make_workspace
from metis_runtime.agents import new_tree
from metis_runtime.agents import plan_integration
from metis_runtime.permissions import Gate
from metis_runtime.permissions import Policy
from metis_runtime.providers import ModelRequest
from metis_runtime.providers import TextBlock
from metis_runtime.providers import ToolUseBlock
from metis_runtime.tools import JobManager
from metis_runtime.tools import ToolContext
from metis_trace import Decision
from metis_trace import Mode
from metis_trace import Route
from metis_trace import ToolKind
from metis_trace import TraceEvent
from metis_trace import TraceHeader

from ._support import FACTORY
from ._support import Root
from ._support import git
from ._support import git_workspace
from ._support import make_root
from ._support import read_tree
from ._support import results
from ._support import spawn
from ._support import tree_report

pytestmark = pytest.mark.slow

AGENT_TOOLS = ("spawn_agent", "wait_agent", "kill_agent", "message_agent")
WRITER = AgentDefinition(
    name="writer", description="writes", tools=("read", "write", "edit"), system_prompt="w"
)
GENERATOR = AgentDefinition(
    name="generator", description="generates", tools=("write", "bash"), system_prompt="g"
)
SLOW = AgentDefinition(name="slow", description="slow", tools=("read",), system_prompt="s")
RUN_ID = "run-integrate"
Script = Callable[[Root, ModelRequest, int], list[Any]]


def _root(tmp_path: Path, steps: Script, **kwargs: Any) -> Root:
    """A root agent whose script can see itself (its supervisor, its workspace)."""
    holder: list[Root] = []

    def script(request: ModelRequest, n: int) -> list[Any]:
        return steps(holder[0], request, n)

    kwargs.setdefault("extra_definitions", [WRITER, GENERATOR, SLOW])
    holder.append(make_root(tmp_path, script, **kwargs))
    return holder[0]


def _child(root: Root) -> str:
    (agent_id,) = root.supervisor.children
    return agent_id


def _spawn(agent: str, worktree: str, task: str = "do it", **more: Any) -> ToolUseBlock:
    return spawn("s1", agent, task, worktree=worktree, **more)


def _integrate(call_id: str, agent_id: str) -> ToolUseBlock:
    return ToolUseBlock(call_id, "integrate_agent", {"agent_id": agent_id})


def _writer_then_integrate(worktree: str) -> Script:
    """Spawn the writer on `worktree`, integrate it, answer."""

    def steps(root: Root, request: ModelRequest, n: int) -> list[Any]:
        if n == 0:
            return [_spawn("writer", worktree)]
        if n == 1:
            return [_integrate("i1", _child(root))]
        return [TextBlock("done")]

    return steps


def _root_trace(root: Root) -> tuple[TraceHeader, list[TraceEvent]]:
    return read_tree(root.run_dir)["trace.jsonl"]


def _occs(events: Sequence[TraceEvent], tool: str) -> list[str]:
    return [c.occ for e in events if e.kind == "assistant" for c in e.calls if c.tool == tool]  # type: ignore[attr-defined]


def _decision(events: Sequence[TraceEvent], occ: str) -> Any:
    (found,) = [e for e in events if e.kind == "decision" and e.occ == occ]  # type: ignore[attr-defined]
    return found


def _assert_all_conform(root: Root) -> None:
    for name, (header, events) in read_tree(root.run_dir).items():
        report = check_trace(events, header)
        assert report.ok, f"{name}: {report.first}"
    assert tree_report(root.run_dir).ok


def _files(ws: Path) -> dict[str, bytes]:
    """Every file of the workspace outside `.git`, with its bytes."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(ws):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            path = Path(dirpath) / name
            out[str(path.relative_to(ws))] = path.read_bytes()
    return out


# --- the tool in a run ----------------------------------------------------------------


@pytest.mark.parametrize("worktree", ["branch", "temp"])
def test_integrate_agent_applies_a_finished_childs_workspace(tmp_path: Path, worktree: str) -> None:
    def steps(root: Root, request: ModelRequest, n: int) -> list[Any]:
        if n == 0:
            return [_spawn("writer", worktree)]
        if n == 1:
            # The second call is for an agent that was never spawned.
            return [_integrate("i1", _child(root)), _integrate("i2", "writer-nobody")]
        if n == 2:
            return [_integrate("i3", _child(root))]  # again: nothing is retained now
        return [TextBlock("done")]

    root = _root(tmp_path, steps, mode=Mode.ACCEPT_EDITS, allow=AGENT_TOOLS)
    result = root.run("integrate the writer")
    assert result.status.value == "completed"
    ws = root.workspace
    assert (ws / "feature.txt").read_text() == "from the child\n"
    assert (ws / "tracked.txt").read_text() == "committed\nby the child\n"
    _, events = _root_trace(root)
    first, unknown, again = _occs(events, "integrate_agent")
    by_occ = results(events)
    status, text = by_occ[first]
    assert status == "ok", text
    assert text.splitlines()[0].startswith(f"integrated agent {_child(root)}")
    assert sorted(text.splitlines()[1:]) == ["feature.txt", "tracked.txt"]
    # Classified as an Exclusive edit listing every path it changes, resolved.
    decision = _decision(events, first)
    assert decision.decision is Decision.ALLOW and decision.facts.kind is ToolKind.EDIT
    assert decision.cls.value == "exclusive"
    assert by_occ[unknown] == (
        "error",
        "error: integrate_agent: writer-nobody is not a child of this agent",
    )
    assert by_occ[again][0] == "error" and "already integrated" in by_occ[again][1]
    # The child's workspace went with the integration.
    record = root.supervisor.children[_child(root)]
    assert record.integrated and not record.workspace.path.exists()
    assert git(["worktree", "list"], ws).count("\n") == 1
    assert "branch metis/" not in git(["branch"], ws)
    _assert_all_conform(root)


def test_a_running_child_an_unknown_id_and_an_inherit_child_are_refused(tmp_path: Path) -> None:
    def steps(root: Root, request: ModelRequest, n: int) -> list[Any]:
        if n == 0:
            return [_spawn("slow", "branch", mode="async")]
        if n == 1:
            return [_integrate("i1", _child(root))]
        if n == 2:
            return [ToolUseBlock("k1", "kill_agent", {"agent_id": _child(root)})]
        if n == 3:
            return [_integrate("i2", _child(root))]  # killed: its worktree was removed
        return [TextBlock("done")]

    root = _root(tmp_path, steps, mode=Mode.BYPASS)
    assert root.run("integrate too early").status.value == "completed"
    _, events = _root_trace(root)
    running, killed = _occs(events, "integrate_agent")
    by_occ = results(events)
    agent_id = _child(root)
    assert by_occ[running] == (
        "error",
        f"error: integrate_agent: agent {agent_id} is still running; "
        "wait for it with wait_agent first",
    )
    assert by_occ[killed] == (
        "error",
        f"error: integrate_agent: agent {agent_id} killed: its workspace was removed, "
        "nothing to integrate",
    )
    _assert_all_conform(root)


def test_an_inherit_child_has_nothing_to_integrate(tmp_path: Path) -> None:
    steps = _writer_then_integrate("inherit")
    root = _root(tmp_path, steps, mode=Mode.ACCEPT_EDITS, allow=AGENT_TOOLS)
    assert root.run("inherit").status.value == "completed"
    _, events = _root_trace(root)
    (occ,) = _occs(events, "integrate_agent")
    status, text = results(events)[occ]
    assert status == "error" and "worked in your own directory" in text
    _assert_all_conform(root)


def test_a_conflict_is_an_error_result_and_changes_nothing(tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    def steps(root: Root, request: ModelRequest, n: int) -> list[Any]:
        if n == 0:
            return [_spawn("writer", "branch")]
        if n == 1:
            # The parent changes the lines the child changed.
            content = "committed\nchanged by the parent\n"
            return [ToolUseBlock("w1", "write", {"path": "tracked.txt", "content": content})]
        if n == 2:
            seen["before"] = _files(root.workspace)
            seen["status"] = git(["status", "--porcelain"], root.workspace)
            return [_integrate("i1", _child(root))]
        if n == 3:
            seen["after"] = _files(root.workspace)
            seen["retained"] = _child(root) in root.supervisor.workspaces.retained
            return [TextBlock("done")]
        return [TextBlock("unexpected")]

    root = _root(tmp_path, steps, mode=Mode.ACCEPT_EDITS, allow=AGENT_TOOLS)
    assert root.run("conflict").status.value == "completed"
    _, events = _root_trace(root)
    (occ,) = _occs(events, "integrate_agent")
    status, text = results(events)[occ]
    assert status == "error" and text.startswith(
        "integrate_agent: the changes conflict with the parent's workspace; nothing was changed"
    )
    assert "\n" not in text and "tracked.txt" in text
    # Nothing changed: not the conflicting file, and not the child's new file either.
    assert seen["after"] == seen["before"]
    assert "feature.txt" not in seen["after"]
    assert git(["status", "--porcelain"], root.workspace) == seen["status"]
    assert seen["retained"]  # still there to retry, until the parent exits
    _assert_all_conform(root)


@pytest.mark.parametrize(
    ("worktree", "protected"),
    [
        ("branch", ".bashrc"),
        ("branch", ".metis/settings.json"),
        ("temp", ".bashrc"),
        ("temp", ".claude/settings.local.json"),
    ],
)
def test_a_protected_path_in_the_diff_is_denied_even_in_bypass(
    tmp_path: Path, worktree: str, protected: str
) -> None:
    seen: dict[str, Any] = {}

    def steps(root: Root, request: ModelRequest, n: int) -> list[Any]:
        if n == 0:
            return [_spawn("generator", worktree, task=f"ok.txt {protected}")]
        if n == 1:
            seen["spawned"] = request.messages[-1].content[0].content  # type: ignore[union-attr]
            return [_integrate("i1", _child(root))]
        return [TextBlock("done")]

    root = _root(tmp_path, steps, mode=Mode.BYPASS)
    assert root.run("generate").status.value == "completed"
    assert "completed" in seen["spawned"] and protected in seen["spawned"]
    _, events = _root_trace(root)
    (occ,) = _occs(events, "integrate_agent")
    assert results(events)[occ] == (
        "denied",
        "permission denied: integrate_agent (the ask was rejected)",
    )
    decision = _decision(events, occ)
    assert decision.stage == "bypass_immune" and decision.facts.protected
    assert decision.facts.mode is Mode.BYPASS
    # Not even the harmless file landed: the call is one effect.
    assert not (root.workspace / protected).exists()
    assert not (root.workspace / "ok.txt").exists()
    _assert_all_conform(root)


def test_default_mode_headless_denies_the_integration(tmp_path: Path) -> None:
    steps = _writer_then_integrate("branch")
    # The child may write (allow rules, cloned into its gate); nothing allows integrating.
    root = _root(tmp_path, steps, mode=Mode.DEFAULT, allow=(*AGENT_TOOLS, "write", "edit"))
    assert root.run("integrate").status.value == "completed"
    record = root.supervisor.children[_child(root)]
    assert record.status == "completed" and "feature.txt" in record.changed
    _, events = _root_trace(root)
    (occ,) = _occs(events, "integrate_agent")
    assert results(events)[occ][0] == "denied"
    decision = _decision(events, occ)
    assert (decision.decision, decision.stage) == (Decision.ASK, "mode")
    (answer,) = [e for e in events if e.kind == "ask_resolved" and e.occ == occ]  # type: ignore[attr-defined]
    assert not answer.approved and answer.resolver == "headless-default"  # type: ignore[attr-defined]
    assert not (root.workspace / "feature.txt").exists()
    _assert_all_conform(root)


def test_changes_that_cannot_be_listed_refuse_the_call(tmp_path: Path) -> None:
    def steps(root: Root, request: ModelRequest, n: int) -> list[Any]:
        if n == 0:
            return [_spawn("writer", "branch")]
        if n == 1:
            # Its worktree vanished: no list of changes, so no call.
            ws = root.supervisor.children[_child(root)].workspace
            assert ws.root is not None
            shutil.rmtree(ws.root)
            return [_integrate("i1", _child(root))]
        return [TextBlock("done")]

    root = _root(tmp_path, steps, mode=Mode.BYPASS)
    assert root.run("integrate").status.value == "completed"
    _, events = _root_trace(root)
    (occ,) = _occs(events, "integrate_agent")
    status, text = results(events)[occ]
    assert status == "error" and text.startswith("error: integrate_agent: cannot list")
    assert not [e for e in events if e.kind == "effect_start" and e.occ == occ]  # type: ignore[attr-defined]
    assert not (root.workspace / "feature.txt").exists()
    _assert_all_conform(root)


def test_metis_run_does_not_allow_integrate_agent_by_default(tmp_path: Path) -> None:
    from metis_runtime.assemble import AGENT_EXEC_TOOLS
    from metis_runtime.assemble import make_gate
    from metis_runtime.permissions import Policy

    assert "integrate_agent" not in AGENT_EXEC_TOOLS
    gate = make_gate(Mode.DEFAULT, tmp_path, True, Policy(), "allow")
    assert gate.decide("spawn_agent", {}, ToolKind.EXEC).decision is Decision.ALLOW
    got = gate.decide("integrate_agent", {"agent_id": "x"}, ToolKind.EDIT, [tmp_path / "a"])
    assert (got.decision, got.stage) == (Decision.ASK, "mode")


# --- resume -----------------------------------------------------------------------------


class _Killed(BaseException):
    """Stands for SIGKILL at one exact point: nothing after it is written."""


class _DieAfterIntegrating(TraceWriter):
    """Dies when the integration's effect ends: after the journal's commit,
    before the trace's effect_end."""

    def emit(self, kind: str, causes: tuple[int, ...] = (), **fields: Any) -> int:
        if kind == "effect_end" and fields.get("occ") == "2.0":
            raise _Killed
        return super().emit(kind, causes, **fields)


def _journaled_root(
    tmp: Path, ws: Path, script: Any, trace: TraceWriter | None, journal: Journal
) -> Root:
    """The root in bypass with `journal`; on a new trace that dies after
    integrating, or on `trace` (to resume)."""
    gate = Gate(Policy(), Mode.BYPASS, ws, Route.HEADLESS, headless_default=Decision.DENY)
    return make_root(
        tmp,
        script,
        workspace=ws,
        mode=Mode.BYPASS,
        gate=gate,
        extra_definitions=[WRITER],
        run_id=RUN_ID,
        journal=journal,
        trace=trace,
        writer=_DieAfterIntegrating,
    )


def test_a_resumed_run_does_not_integrate_again(tmp_path: Path) -> None:
    ws = git_workspace(tmp_path / "ws")
    run_dir = tmp_path / "run"
    journal_path = run_dir / "trace.jsonl.journal"
    run_dir.mkdir()
    journal = Journal.create(journal_path, RUN_ID, {}, fsync=False)
    holder: list[AgentSupervisor] = []

    def first(request: ModelRequest, n: int) -> list[Any]:
        if n == 0:
            return [_spawn("writer", "branch")]
        (agent_id,) = holder[0].children
        return [_integrate("i1", agent_id)]

    root = _journaled_root(tmp_path, ws, first, None, journal)
    loop, supervisor, trace = root.loop, root.supervisor, root.trace
    holder.append(supervisor)

    async def run_until_killed() -> None:
        try:
            await loop.run("integrate, then die")
        finally:
            await supervisor.close()

    with pytest.raises(_Killed):
        asyncio.run(run_until_killed())
    trace.close()
    journal.close()
    assert (ws / "feature.txt").read_text() == "from the child\n"  # it was applied
    tracked = (ws / "tracked.txt").read_text()

    journal, state = Journal.open(journal_path, fsync=False)
    assert "2.0" in state.commits  # committed before the stop
    resumed_trace = TraceWriter(run_dir / "trace.jsonl")
    root = _journaled_root(tmp_path, ws, [[TextBlock("done")]], resumed_trace, journal)
    loop, supervisor = root.loop, root.supervisor

    async def resume() -> Any:
        try:
            return await loop.resume(state)
        finally:
            await supervisor.close()

    try:
        result = asyncio.run(resume())
    finally:
        resumed_trace.close()
        journal.close()
    assert result.status.value == "completed"
    header, events = read_tree(run_dir)["trace.jsonl"]
    report = check_trace(events, header)
    assert report.ok, report.first
    # Run once: one effect_start for it, and its journaled output as its result.
    assert [e.occ for e in events if e.kind == "effect_start"].count("2.0") == 1  # type: ignore[attr-defined]
    status, text = results(events)["2.0"]
    assert status == "ok" and text.startswith("integrated agent writer-")
    assert (ws / "feature.txt").read_text() == "from the child\n"
    assert (ws / "tracked.txt").read_text() == tracked
    assert tree_report(run_dir).ok


# --- the workspaces, directly ---------------------------------------------------------


def test_a_rename_lists_both_paths_and_unusual_names_are_exact(tmp_path: Path) -> None:
    ws = git_workspace(tmp_path / "ws")
    child = make_workspace("branch", ws, tmp_path / "wt", "r")
    (child.path / "tracked.txt").rename(child.path / "moved.txt")
    (child.path / "naïve name\t.txt").write_text("x\n")
    with open(os.path.join(os.fsencode(child.path), b"bad\xff.txt"), "wb") as fh:
        fh.write(b"not UTF-8\n")  # a name git stores as bytes
    plan = plan_integration(child)
    bad = os.fsdecode(b"bad\xff.txt")
    assert sorted(plan.paths) == sorted([bad, "moved.txt", "naïve name\t.txt", "tracked.txt"])
    assert all(t.parent == ws.resolve() for t in plan.targets)
    manager = WorkspaceManager()
    manager.keep("r", child)
    assert sorted(manager.integrate("r", plan)) == sorted(plan.paths)
    assert not (ws / "tracked.txt").exists() and (ws / "moved.txt").exists()
    assert (ws / "naïve name\t.txt").read_text() == "x\n"
    assert (ws / bad).read_bytes() == b"not UTF-8\n"


def test_a_workspace_changed_since_its_plan_is_not_applied(tmp_path: Path) -> None:
    ws = git_workspace(tmp_path / "ws")
    for kind in ("branch", "temp"):
        child = make_workspace(kind, ws, tmp_path / f"wt-{kind}", kind)
        (child.path / "a.txt").write_text("planned\n")
        plan = plan_integration(child)
        (child.path / ".bashrc").write_text("not planned\n")  # after the gate's look
        manager = WorkspaceManager()
        manager.keep(kind, child)
        with pytest.raises(WorkspaceError, match="changed since its integration was planned"):
            manager.integrate(kind, plan)
        assert not (ws / "a.txt").exists() and not (ws / ".bashrc").exists()
        assert manager.retained == {kind: child}
        manager.close()


def test_a_failed_copy_back_restores_every_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = git_workspace(tmp_path / "ws")
    child = make_workspace("temp", ws, tmp_path / "tmp", "t")
    (child.path / "a.txt").write_text("new a\n")
    (child.path / "deep" / "er").mkdir(parents=True)
    (child.path / "deep" / "er" / "b.txt").write_text("new b\n")
    (child.path / "tracked.txt").write_text("the child's\n")
    (child.path / "z.txt").write_text("never written\n")
    plan = plan_integration(child)
    assert plan.paths == ("a.txt", "deep/er/b.txt", "tracked.txt", "z.txt")
    before = _files(ws)
    real = worktree_module.put_entry
    calls: list[str] = []

    def flaky(roots: Any, path: Path, entry: Any, **kw: Any) -> None:
        calls.append(str(path))
        if str(path).endswith("z.txt") and entry is not None:
            raise OSError(28, "No space left on device")
        real(roots, path, entry, **kw)

    monkeypatch.setattr(worktree_module, "put_entry", flaky)
    with pytest.raises(WorkspaceError, match=r"copying back z.txt failed .*restored"):
        worktree_module.apply_integration(child, plan)
    assert _files(ws) == before  # tracked.txt restored, a.txt and b.txt removed
    assert not (ws / "deep").exists()  # and the directories the copy made
    assert len(calls) >= 4


def test_a_temp_copy_brings_back_symlinks_as_links(tmp_path: Path) -> None:
    ws = git_workspace(tmp_path / "ws")
    child = make_workspace("temp", ws, tmp_path / "tmp", "l")
    os.symlink("tracked.txt", child.path / "link.txt")
    os.symlink("/etc/hostname", child.path / "outside")
    # A link out of the workspace is refused (tests/secrets/test_integration.py).
    with pytest.raises(WorkspaceError, match="outside is a symlink to /etc/hostname"):
        plan_integration(child)
    os.unlink(child.path / "outside")
    plan = plan_integration(child)
    assert plan.paths == ("link.txt",)
    assert worktree_module.apply_integration(child, plan) == ["link.txt"]
    assert os.readlink(ws / "link.txt") == "tracked.txt"
    assert plan_integration(child).paths == ()  # nothing differs any more


def test_classification_lists_resolved_paths_and_a_plan_is_required(tmp_path: Path) -> None:
    ws = git_workspace(tmp_path / "ws")
    identity, ledger = new_tree(tmp_path / "run", GuardLimits())
    gate = Gate(Policy(), Mode.BYPASS, ws, Route.HEADLESS)
    supervisor = AgentSupervisor(
        identity,
        workspace=ws,
        gate=gate,
        visible_tools=(),
        catalog=load_agents(ws),
        provider=FACTORY,
        ledger=ledger,
    )
    tool = IntegrateAgentTool(supervisor)
    ctx = ToolContext(ws, {}, JobManager())
    child = make_workspace("branch", ws, tmp_path / "wt", "c")
    (child.path / "sub").mkdir()
    (child.path / "sub" / "f.txt").write_text("f\n")
    supervisor.children["c"] = ChildRecord(
        agent_id="c",
        agent="writer",
        task="t",
        depth=1,
        mode=Mode.BYPASS,
        tools=(),
        workspace=child,
        agent_dir=tmp_path,
        sync=True,
        started=0.0,
        status="completed",
    )
    supervisor.workspaces.keep("c", child)
    # Run without a classification: refused, nothing applied.
    out = asyncio.run(tool.run({"agent_id": "c"}, ctx))
    assert out.is_error and "not planned by a permission check" in out.content
    assert not (ws / "sub").exists()
    got = tool.classify({"agent_id": "c"}, ctx)
    assert got.kind is ToolKind.EDIT and got.cls.value == "exclusive"
    assert got.paths == (ws.resolve() / "sub" / "f.txt",)
    out = asyncio.run(tool.run({"agent_id": "c"}, ctx))
    assert not out.is_error and out.content.splitlines()[1:] == ["sub/f.txt"]
    assert (ws / "sub" / "f.txt").read_text() == "f\n"


def test_a_temp_copy_never_brings_back_git_or_metis(tmp_path: Path) -> None:
    ws = git_workspace(tmp_path / "ws")
    child = make_workspace("temp", ws, tmp_path / "tmp", "g")
    for rel in (".git/hooks/post-checkout", ".metis/settings.json", "sub/.git/config"):
        (child.path / rel).parent.mkdir(parents=True, exist_ok=True)
        (child.path / rel).write_text("#!/bin/sh\n")
    (child.path / "kept.txt").write_text("k\n")
    assert plan_integration(child).paths == ("kept.txt",)
