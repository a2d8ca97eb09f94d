"""Containment: the file tools open only what lies in their roots, following
no symlink after the gate's check; a process swapping a directory for a
symlink to the outside while the tools write never gets a byte outside
(with openat2 and with the O_NOFOLLOW walk); the same swap does get writes
out when the path is resolved and then opened (so the test can fail)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_runtime._errors import ToolError
from metis_runtime.tools import EditTool
from metis_runtime.tools import JobManager
from metis_runtime.tools import LsTool
from metis_runtime.tools import ReadTool
from metis_runtime.tools import ToolContext
from metis_runtime.tools import WriteTool
from metis_runtime.tools import _contain
from metis_runtime.tools._files import atomic_write
from metis_runtime.tools._files import resolve_path

# A process that swaps `target` (a directory) and `link` (a symlink to the
# outside) with renameat2(RENAME_EXCHANGE), as fast as it can, until killed.
_FLIPPER = textwrap.dedent(
    """
    import ctypes, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    a, b = os.fsencode(sys.argv[1]), os.fsencode(sys.argv[2])
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    print("ready", flush=True)
    while True:
        if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
            os._exit(3)
    """
)


@contextmanager
def _flipping(target: Path, link: Path) -> Iterator[None]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _FLIPPER, str(target), str(link)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -9, "the flipper stopped swapping"
    if target.is_symlink():  # leave the real directory in place
        os.rename(target, target.with_name("tmp-swap"))
        os.rename(link, target)
        os.rename(target.with_name("tmp-swap"), link)


def _setup(tmp_path: Path, depth: int) -> tuple[Path, Path, Path]:
    ws = tmp_path / "ws"
    outside = tmp_path / "outside"
    outside.mkdir()
    real = ws.joinpath(*(f"d{i}" for i in range(depth)))
    real.mkdir(parents=True)
    (real / "edit.txt").write_text("old\n")
    (outside / "edit.txt").write_text("old\n")
    link = real.with_name("lnk")
    link.symlink_to(outside)
    return ws, real, outside


def _outside_changed(outside: Path) -> list[str]:
    names = sorted(os.listdir(outside))
    changed = [n for n in names if n != "edit.txt"]
    if (outside / "edit.txt").read_text() != "old\n":
        changed.append("edit.txt")
    return changed


async def _call(tool: object, args: dict[str, str], ctx: ToolContext) -> bool:
    """classify (what the gate sees) then run; True if it succeeded."""
    try:
        tool.classify(args, ctx)  # type: ignore[attr-defined]
        await tool.run(args, ctx)  # type: ignore[attr-defined]
    except ToolError:
        return False
    return True


@settings(max_examples=12, deadline=None)
@given(
    depth=st.integers(1, 3),
    walk=st.booleans(),
    absolute=st.booleans(),
    tool=st.sampled_from(["write", "edit", "read", "ls"]),
)
def test_a_symlink_swap_never_gets_a_write_outside(
    tmp_path_factory: pytest.TempPathFactory, depth: int, walk: bool, absolute: bool, tool: str
) -> None:
    tmp_path = tmp_path_factory.mktemp("swap")
    ws, real, outside = _setup(tmp_path, depth)
    old = dict(_contain._openat2_state)
    _contain._openat2_state["ok"] = not walk  # the O_NOFOLLOW walk where the kernel had none
    try:
        ctx = ToolContext(ws, {}, JobManager())
        rel = str(real.relative_to(ws))
        base = str(real) if absolute else rel

        async def hammer() -> int:
            ok = 0
            # 0.6 s of swaps; on a loaded machine, longer until one call got
            # through (the assertion below), at most 20 s.
            start = time.monotonic()
            i = 0
            while (elapsed := time.monotonic() - start) < 0.6 or (ok == 0 and elapsed < 20):
                i += 1
                if tool == "write":
                    args = {"path": f"{base}/f{i}.txt", "content": "x"}
                    ok += await _call(WriteTool(), args, ctx)
                elif tool == "edit":
                    args = {"path": f"{base}/edit.txt", "old": "old", "new": "new"}
                    ok += await _call(EditTool(), args, ctx)
                    (real / "edit.txt").write_text(
                        "old\n"
                    ) if real.is_dir() and not real.is_symlink() else None
                elif tool == "read":
                    ok += await _call(ReadTool(), {"path": f"{base}/edit.txt"}, ctx)
                else:
                    ok += await _call(LsTool(), {"path": base}, ctx)
            return ok

        with _flipping(real, real.with_name("lnk")):
            done = asyncio.run(hammer())
        assert _outside_changed(outside) == []
        assert done > 0  # the tools still work while the swap goes on
    finally:
        _contain._openat2_state.clear()
        _contain._openat2_state.update(old)


def test_resolving_then_opening_does_write_outside_under_the_same_swap(tmp_path: Path) -> None:
    # The control: the old way (realpath at check time, open by path later)
    # loses this race, so the test above can fail.
    ws, real, outside = _setup(tmp_path, 1)
    escaped = False
    with _flipping(real, real.with_name("lnk")):
        deadline = time.monotonic() + 20
        i = 0
        while not escaped and time.monotonic() < deadline:
            i += 1
            try:
                # realpath itself can meet the swap mid-way: it then says so (ToolError)
                target = resolve_path(ws, f"d0/f{i}.txt", tool="write")  # the gate's view
                if not str(target).startswith(str(ws)):
                    continue
                atomic_write(target, b"x")
            except (OSError, ToolError):  # the swap seen mid-resolve or mid-write: try again
                continue
            escaped = bool(os.listdir(outside)) and any(
                n != "edit.txt" for n in os.listdir(outside)
            )
    assert escaped


def test_outside_paths_and_symlinks_out_are_refused(tmp_path: Path) -> None:
    ws, real, outside = _setup(tmp_path, 1)
    (ws / "out").symlink_to(outside)
    (ws / "inner").symlink_to("d0")
    ctx = ToolContext(ws, {}, JobManager())
    for args in (
        {"path": "../outside/x.txt", "content": "x"},
        {"path": "out/x.txt", "content": "x"},
        {"path": str(outside / "x.txt"), "content": "x"},
    ):
        with pytest.raises(ToolError, match="outside the workspace"):
            asyncio.run(WriteTool().run(args, ctx))
    assert os.listdir(outside) == ["edit.txt"]
    # A symlink that stays inside is resolved first, then opened link-free.
    asyncio.run(WriteTool().run({"path": "inner/y.txt", "content": "y"}, ctx))
    assert (real / "y.txt").read_text() == "y"
    # An additional root is a root too.
    wider = ToolContext(ws, {}, JobManager(), extra_roots=(outside,))
    asyncio.run(WriteTool().run({"path": str(outside / "z.txt"), "content": "z"}, wider))
    assert (outside / "z.txt").read_text() == "z"


@pytest.mark.parametrize("walk", [False, True], ids=["openat2", "walk"])
def test_a_symlink_planted_after_the_check_is_not_followed(tmp_path: Path, walk: bool) -> None:
    ws, real, _ = _setup(tmp_path, 2)
    roots = _contain.Roots((ws,), use_openat2=not walk)
    checked = real / "edit.txt"  # resolved while d0/d1 were directories
    fd = roots.open(checked, os.O_RDONLY, tool="t")
    os.close(fd)
    parent = real.parent
    os.rename(parent, tmp_path / "moved")
    parent.symlink_to(tmp_path / "moved")  # now d0 is a link (to where d0 was)
    with pytest.raises(_contain.Escape, match="changed since it was checked"):
        roots.open(checked, os.O_RDONLY, tool="t")
    assert _contain.openat2_available() is True  # this kernel (Linux 6.x) has openat2


@pytest.mark.parametrize(
    ("name", "why"),
    [
        (".metis/agents/evil.md", "protected path"),
        (".metis/settings.json", "protected path"),
        (".git/hooks/pre-commit", "protected path"),
        ("../outside/x.txt", "inside the workspace"),  # the scenario loader's own check
        ("/etc/x", "relative path"),
        ("out/x.txt", "outside the workspace"),
    ],
)
def test_scenario_seeding_goes_through_the_same_checks(tmp_path: Path, name: str, why: str) -> None:
    from tests.runtime.test_loop_support import metis_run_argv
    from tests.runtime.test_loop_support import write_scenario

    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "outside").mkdir()
    (ws / "out").symlink_to(tmp_path / "outside")
    scenario = write_scenario(
        tmp_path / "s.yaml", [[{"text": "ok"}]], files={"ok.txt": "a", name: "b"}
    )
    done = subprocess.run(
        metis_run_argv("--workspace", str(ws), "--scenario", str(scenario), "--headless", "-q"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert why in done.stderr and done.stderr.count("\n") == 1
    assert not (ws / "ok.txt").exists()  # checked before anything is written
    assert os.listdir(tmp_path / "outside") == []


def test_two_calls_naming_one_file_each_keep_their_own_check(tmp_path: Path) -> None:
    """A name's check is its call's: one call classified while a link to a
    denied file was swapped in must not vouch for another call's run (the
    explorer's `contain:racing-link` found a read of `notes.txt`, allowed as
    the plain file, return the linked secret this way)."""
    ws = tmp_path / "ws"
    (ws / "vault").mkdir(parents=True)
    (ws / "vault" / "secret.txt").write_text("secret\n")
    (ws / "notes.txt").write_text("notes\n")
    tool, name = ReadTool(), {"path": "notes.txt"}
    first, second = (ToolContext(ws, {}, JobManager(), call_occ=o) for o in ("1.0", "1.1"))
    assert tool.classify(name, first).paths == (ws / "notes.txt",)  # the gate saw the plain file
    (ws / "notes.txt").unlink()
    (ws / "notes.txt").symlink_to("vault/secret.txt")
    assert tool.classify(name, second).paths == (ws / "vault" / "secret.txt",)
    with pytest.raises(ToolError, match="changed since it was checked"):
        asyncio.run(tool.run(name, first))
    # the second call was decided on where the name leads now: it may read it
    assert "secret" in asyncio.run(tool.run(name, second)).content


def test_the_gates_resolve_retries_a_swap_then_reports_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from metis_runtime.permissions import _paths

    real = os.path.realpath
    failures = [OSError(22, "Invalid argument")]

    def racing(path: str) -> str:
        if failures:
            raise failures.pop()
        return real(path)

    monkeypatch.setattr(_paths.os.path, "realpath", racing)
    assert _paths.resolve("a.txt", tmp_path) == tmp_path / "a.txt"  # the swap passed: again
    failures.extend(OSError(22, "Invalid argument") for _ in range(3))
    with pytest.raises(OSError):  # still changing: the loop refuses the call
        _paths.resolve("a.txt", tmp_path)
