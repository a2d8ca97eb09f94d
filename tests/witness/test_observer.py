"""The observer, on real file-system activity: inotify trees, strace, the file it writes."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from inotify_simple import Event
from inotify_simple import INotify
from inotify_simple import flags

from metis_trace import Change
from metis_trace import End
from metis_trace import Exec
from metis_trace import Lost
from metis_trace import Ready
from metis_trace import RunExited
from metis_trace import RunStarted
from metis_witness import Witness
from metis_witness import witness_argv
from metis_witness._exec import ExecParser
from metis_witness._tree import TreeWatcher

from ._support import require_strace
from ._support import sessions


def _around(tmp: Path, script: str, *, roots: list[Path], excluded: tuple[Path, ...] = ()) -> Path:
    out = tmp / "w.jsonl"
    argv = [*witness_argv(out, roots, excluded=excluded), "bash", "-c", script]
    done = subprocess.run(argv, cwd=roots[0], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return out


def _changes(out: Path) -> list[Change]:
    return [r for s in sessions(out) for r in s.records if isinstance(r, Change)]


def test_a_command_is_witnessed_from_before_its_first_effect_to_its_exit(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    out = _around(
        tmp_path,
        # the pause lets the new folders' watches be added (a file made and
        # removed before its folder is watched is not seen: specs/witness.md)
        "mkdir -p a/b/c && sleep 0.5 && echo x > a/b/c/f.txt && mv a/b/c/f.txt a/g.txt"
        " && rm -r a/b && touch z",
        roots=[ws],
    )
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    (session,) = sessions(out)
    kinds = [r.kind for r in session.records]
    assert kinds[:2] == ["ready", "run"] and kinds[-2:] == ["exit", "end"]
    ready = session.records[0]
    assert isinstance(ready, Ready)
    by_path: dict[str, set[str]] = {}
    for c in _changes(out):
        assert c.lo <= c.hi and ready.t <= c.hi  # the window ends after the run began
        by_path.setdefault(os.path.relpath(c.path, ws), set()).update(c.ops)
    # folders made in one go are watched as they appear: the file three levels down is seen
    assert "create" in by_path["a/b/c/f.txt"] and "moved_from" in by_path["a/b/c/f.txt"]
    assert "moved_to" in by_path["a/g.txt"]
    assert "delete" in by_path["a/b"] and "create" in by_path["z"]
    exit_ = next(r for r in session.records if isinstance(r, RunExited))
    run = next(r for r in session.records if isinstance(r, RunStarted))
    assert exit_.status == 0 and exit_.pid == run.pid


def test_excluded_paths_are_not_recorded_and_a_root_inside_them_is(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    run_dir = ws / ".metis" / "runs" / "r1"
    out = _around(
        tmp_path,
        "mkdir -p .metis/runs/r1/worktrees/a1 && echo log >> .metis/runs/r1/trace.jsonl"
        " && echo x > .metis/runs/r1/worktrees/a1/f.txt && mkdir .git && echo y > .git/HEAD",
        roots=[ws, run_dir / "worktrees"],
        excluded=(run_dir,),
    )
    paths = {os.path.relpath(c.path, ws) for c in _changes(out)}
    assert ".metis/runs/r1/worktrees/a1/f.txt" in paths  # the root appeared later: found
    assert not any(p.endswith("trace.jsonl") or p.startswith(".git/") for p in paths)
    assert ".metis/runs/r1" not in paths


def test_exec_is_observed_with_argv_when_ptrace_is_allowed(tmp_path: Path) -> None:
    require_strace()
    ws = tmp_path / "ws"
    ws.mkdir()
    out = _around(tmp_path, '/bin/echo \'two words\' "and a \\"quote\\"" > /dev/null', roots=[ws])
    (session,) = sessions(out)
    assert any(w.what == "exec" for w in session.header.watched)
    execs = [r for r in session.records if isinstance(r, Exec)]
    echo = next(x for x in execs if x.path == "/bin/echo")
    assert echo.argv == ("/bin/echo", "two words", 'and a "quote"') and echo.ok
    assert session.ready is not None and session.ready <= echo.t <= echo.hi


def test_without_strace_exec_is_recorded_as_not_observed(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    out = tmp_path / "w.jsonl"
    argv = [*witness_argv(out, [ws]), "/bin/true"]
    environ = {**os.environ, "PATH": str(tmp_path)}  # no strace on this PATH
    done = subprocess.run(argv, env=environ, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    (session,) = sessions(out)
    why = {u.what: u.why for u in session.header.not_observed}
    assert why["exec"] == "strace is not installed"
    assert not any(w.what == "exec" for w in session.header.watched)


def test_the_exit_status_and_a_kill_are_passed_on(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    out = tmp_path / "w.jsonl"
    done = subprocess.run([*witness_argv(out, [ws]), "bash", "-c", "exit 3"], timeout=60)
    assert done.returncode == 3
    done = subprocess.run([*witness_argv(out, [ws]), "bash", "-c", "kill -9 $$"], timeout=60)
    assert done.returncode == 128 + 9
    first, second = sessions(out)  # appended: one session per witnessed process
    assert (first.header.session, second.header.session) == (0, 1)
    killed = next(r for r in second.records if isinstance(r, RunExited))
    assert killed.signal == 9 and killed.status is None


def test_beside_a_process_the_witness_is_ready_before_entering(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    out = tmp_path / "w.jsonl"
    with Witness(out, [ws]):
        (ws / "made.txt").write_text("x")
    (session,) = sessions(out)
    assert isinstance(session.records[-1], End)
    assert any(c.path == str(ws / "made.txt") for c in _changes(out))
    assert {u.what for u in session.header.not_observed} >= {"exec", "reads", "network"}


def test_a_queue_overflow_is_recorded_as_lost_and_the_trees_are_walked_again(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    with INotify() as ino:
        tree = TreeWatcher(ino, [str(ws)], [], clock=lambda: 5.0)
        tree.start()
        assert tree.watches == 1 + 1
        (ws / "e").mkdir()  # made while "overflowed": no event of its own reaches the tree
        overflow = Event(wd=-1, mask=flags.Q_OVERFLOW, cookie=0, name="")
        records = tree.handle([overflow], 1.0, 2.0)
        assert records[0] == {
            "kind": "lost",
            "what": "files",
            "why": "inotify queue overflow (fs.inotify.max_queued_events)",
            "lo": 1.0,
            "hi": 2.0,
            "path": None,
        }
        Lost.model_validate(records[0])
        assert tree.watches == 3  # the new folder got its watch in the walk


def test_strace_lines_split_by_another_process_are_joined() -> None:
    parser = ExecParser(offset=1000.0, clock=lambda: 9.0)
    lines = (
        '11  1005.000001 execve("/bin/sh", ["sh", "-c", "x\\ty \\303\\251"], 0x1 /* 3 vars */'
        " <unfinished ...>\n"
        '12  1005.000002 execve("/nope", ["nope"], 0x2 /* 3 vars */) = -1 ENOENT (No such file)\n'
        "11  1005.000003 <... execve resumed>) = 0\n"
        "13  1005.0000"
    )
    records = list(parser.feed(lines))
    assert [(r["pid"], r["ok"]) for r in records] == [(12, False), (11, True)]
    assert records[1]["argv"] == ["sh", "-c", "x\ty \u00e9"] and records[1]["t"] == 5.000001
    (joined,) = parser.feed('04 execve("/bin/true", ["true"], 0x3 /* 0 vars */) = 0\n')
    assert joined["pid"] == 13 and joined["t"] == 5.000004


def test_bad_arguments_are_one_line_and_exit_2(tmp_path: Path) -> None:
    base = [sys.executable, "-m", "metis_witness"]
    for args in (
        ["--out", str(tmp_path / "w"), "--", "true"],  # no root
        ["--out", str(tmp_path / "w"), "--root", str(tmp_path)],  # no command
        ["--out", str(tmp_path), "--root", str(tmp_path), "--", "true"],  # out is a folder
    ):
        done = subprocess.run([*base, *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    foreign = tmp_path / "foreign.jsonl"
    foreign.write_text('{"kind": "header", "format": "metis-trace"}\n')
    args = ["--out", str(foreign), "--root", str(tmp_path), "--", "true"]
    done = subprocess.run([*base, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "not a metis witness file" in done.stderr
