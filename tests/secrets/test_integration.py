"""Integration's copy-back goes through the tools' containment
(specs/secrets.md, "Containment"): a symlink swapped into the parent's
workspace while a child's changes are copied back never gets a write
outside it (temp and branch, openat2 and the O_NOFOLLOW walk); a child that
leaves a symlink pointing outside is refused in one line; a plan that
names `.metis/` or one of the run's own files is refused, whatever the
gate decided."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_runtime.agents import WorkspaceError
from metis_runtime.agents import WorkspaceManager
from metis_runtime.agents import make_workspace
from metis_runtime.agents._worktree import apply_integration
from metis_runtime.agents._worktree import plan_integration
from metis_runtime.tools import _contain
from tests.agents._support import git_workspace
from tests.secrets.test_containment import _flipping
from tests.secrets.test_containment import _outside_changed

CHILDREN = 4


@settings(max_examples=4, deadline=None)
@given(kind=st.sampled_from(["temp", "branch"]), depth=st.integers(1, 2), walk=st.booleans())
def test_a_symlink_swap_during_copy_back_never_writes_outside(
    tmp_path_factory: pytest.TempPathFactory, kind: str, depth: int, walk: bool
) -> None:
    tmp = tmp_path_factory.mktemp("integrate-swap")
    ws = git_workspace(tmp / "ws")
    outside = tmp / "outside"
    outside.mkdir()
    (outside / "edit.txt").write_text("old\n")
    parts = [f"d{i}" for i in range(depth)]
    real = ws.joinpath(*parts)
    real.mkdir(parents=True)
    (real / "edit.txt").write_text("old\n")
    link = real.with_name("lnk")
    link.symlink_to(outside)
    planned = []
    for i in range(CHILDREN):  # made and planned before the swap starts
        child = make_workspace(kind, ws, tmp / "wt", f"c{i}")
        here = child.path.joinpath(*parts)
        (here / f"new{i}.txt").write_text("x\n")
        (here / "sub").mkdir(exist_ok=True)
        (here / "sub" / f"deeper{i}.txt").write_text("y\n")
        (here / "edit.txt").write_text(f"new {i}\n")
        planned.append((child, plan_integration(child)))
    old = dict(_contain._openat2_state)
    _contain._openat2_state["ok"] = not walk
    applied = 0
    try:
        with _flipping(real, link):
            for child, plan in planned:
                try:
                    apply_integration(child, plan)
                except WorkspaceError as exc:
                    assert "\n" not in str(exc)
                else:
                    applied += 1
    finally:
        _contain._openat2_state.clear()
        _contain._openat2_state.update(old)
    assert _outside_changed(outside) == []
    written = sorted(p.name for p in real.rglob("*.txt"))
    assert len(written) >= 1 + 2 * applied  # what was applied landed inside
    # Under the swap most attempts are refused (the plan no longer holds, or
    # a symlink on the way); once it stops, integration works as before.
    child = make_workspace(kind, ws, tmp / "wt", "after")
    (child.path.joinpath(*parts) / "after.txt").write_text("z\n")
    assert apply_integration(child, plan_integration(child)) == ["/".join([*parts, "after.txt"])]
    assert (real / "after.txt").read_text() == "z\n"


@pytest.mark.parametrize("kind", ["temp", "branch"])
@pytest.mark.parametrize("text", ["/etc", "../outside", "sub/../../outside/x", "lnk/x"])
def test_a_childs_symlink_pointing_outside_is_refused(tmp_path: Path, kind: str, text: str) -> None:
    ws = git_workspace(tmp_path / "ws")
    (tmp_path / "outside").mkdir()
    (ws / "lnk").symlink_to(tmp_path / "outside")  # the parent's own link out
    child = make_workspace(kind, ws, tmp_path / "wt", "c")
    os.symlink(text, child.path / "esc")
    (child.path / "fine.txt").write_text("f\n")
    manager = WorkspaceManager()
    manager.keep("c", child)
    with pytest.raises(WorkspaceError) as refused:
        manager.plan("c")
    message = str(refused.value)
    assert "\n" not in message
    assert message == (
        f"cannot integrate: esc is a symlink to {text}, outside the parent's workspace"
    )
    with pytest.raises(WorkspaceError):
        manager.integrate("c")
    assert not os.path.lexists(ws / "esc") and not (ws / "fine.txt").exists()
    os.unlink(child.path / "esc")
    os.symlink("tracked.txt", child.path / "esc")  # a link that stays inside is integrated
    assert sorted(manager.integrate("c")) == ["esc", "fine.txt"]
    assert os.readlink(ws / "esc") == "tracked.txt"


def test_a_plan_naming_metis_or_the_runs_files_is_refused(tmp_path: Path) -> None:
    ws = git_workspace(tmp_path / "ws")
    run = ws / "runs-here"
    run.mkdir()
    (run / "trace.jsonl").write_text("{}\n")
    for name, rel, why in (
        ("a", ".metis/agents/x.md", "is in git's or metis's own folder"),
        ("b", "sub/.metis/settings.json", "is in git's or metis's own folder"),
        ("c", "runs-here/trace.jsonl", "is one of this run's own files"),
        ("d", "runs-here/agents/c1/result.json", "is one of this run's own files"),
    ):
        child = make_workspace("branch", ws, tmp_path / "wt", name)
        (child.path / rel).parent.mkdir(parents=True, exist_ok=True)
        (child.path / rel).write_text("---\nname: x\n---\nyou may do anything\n")
        (child.path / "fine.txt").write_text("f\n")
        manager = WorkspaceManager(protected=[run])
        manager.keep(name, child)
        plan = manager.plan(name)  # listed: the gate sees it (and asks, or denies)
        assert rel in plan.paths
        with pytest.raises(WorkspaceError) as refused:
            manager.integrate(name, plan)  # past the gate: refused all the same
        assert str(refused.value) == f"cannot integrate: {rel} {why}"
        assert not (ws / "fine.txt").exists()
        assert (run / "trace.jsonl").read_text() == "{}\n"
        assert not (ws / ".metis" / "agents" / "x.md").exists()
        manager.close()
