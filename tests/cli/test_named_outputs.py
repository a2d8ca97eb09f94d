"""Every path a user names is written by one writer (`metis_runtime._named_output`):
a new or regular file is replaced atomically, a character device or a FIFO is
written through and stays what it is, a symlink is followed to its target and
stays a link, a directory is a one-line error, exit 2.

The device is a private node made with mknod(2) in a temp folder with the
null device's numbers (Linux `devices.txt`: char 1:3), never the machine's
/dev/null: the regression of issue 24 is `--output junit=/dev/null` leaving a
regular file there, as root.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from metis_cli._main import cli
from metis_runtime import _named_output
from metis_runtime._named_output import NamedOutputError
from metis_runtime._named_output import write_named_output

from .test_conform_ci import BROKEN

NULL_DEVICE = os.makedev(1, 3)


def private_null(folder: Path) -> Path:
    """A char device node like /dev/null, in `folder`; skips when mknod is not permitted."""
    node = folder / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, NULL_DEVICE)
        os.close(os.open(node, os.O_WRONLY))  # a device cgroup may still refuse the open
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot make a private device node here (mknod needs CAP_MKNOD): {exc}")
    return node


class FifoReader:
    """A FIFO at `path` and a thread reading it to the end."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self.data = b""
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        with open(self.path, "rb") as fh:  # blocks until the writer opens it
            self.data = fh.read()

    def result(self) -> bytes:
        self.thread.join(timeout=20)
        assert not self.thread.is_alive(), "the writer never closed the FIFO"
        return self.data


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    path = tmp_path / "broken.json"
    path.write_text(BROKEN)
    return path


# -- the writer itself -------------------------------------------------------------------


def test_a_new_file_gets_the_umask_and_a_regular_one_keeps_its_mode(tmp_path: Path) -> None:
    new = tmp_path / "new.txt"
    old = os.umask(0o027)
    try:
        write_named_output(new, b"one")
    finally:
        os.umask(old)
    assert new.read_bytes() == b"one" and stat.S_IMODE(new.stat().st_mode) == 0o640
    kept = tmp_path / "kept.txt"
    kept.write_text("before")
    kept.chmod(0o604)
    write_named_output(kept, b"after")
    assert kept.read_bytes() == b"after" and stat.S_IMODE(kept.stat().st_mode) == 0o604
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt", "new.txt"]  # no temp left


def test_a_symlink_is_followed_and_stays_a_link(tmp_path: Path) -> None:
    target = tmp_path / "real.xml"
    target.write_text("old")
    link = tmp_path / "link.xml"
    link.symlink_to(target.name)
    write_named_output(link, b"new")
    assert link.is_symlink() and target.read_bytes() == b"new"
    dangling = tmp_path / "dangling.xml"
    dangling.symlink_to("made.xml")
    write_named_output(dangling, b"made")
    assert dangling.is_symlink() and (tmp_path / "made.xml").read_bytes() == b"made"


def test_a_directory_a_link_to_one_and_a_socket_are_refused(tmp_path: Path) -> None:
    import socket

    (tmp_path / "dir").mkdir()
    (tmp_path / "to-dir").symlink_to("dir")
    sock_path = tmp_path / "s"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_path))
    try:
        for name, why in (("dir", "is a directory"), ("to-dir", "is a directory"), ("s", "socket")):
            with pytest.raises(NamedOutputError, match=why):
                write_named_output(tmp_path / name, b"x")
    finally:
        server.close()
    assert (tmp_path / "dir").is_dir() and (tmp_path / "to-dir").is_symlink()


def test_a_private_device_node_stays_a_device(tmp_path: Path) -> None:
    node = private_null(tmp_path)
    write_named_output(node, b"into the void")
    assert stat.S_ISCHR(node.stat().st_mode) and node.stat().st_rdev == NULL_DEVICE
    link = tmp_path / "to-null"
    link.symlink_to(node)
    write_named_output(link, b"through the link")
    assert link.is_symlink() and stat.S_ISCHR(node.stat().st_mode)


def test_a_fifo_is_written_through_to_its_reader(tmp_path: Path) -> None:
    reader = FifoReader(tmp_path / "pipe")
    write_named_output(reader.path, b"x" * 300_000)  # more than a pipe buffer holds
    assert reader.result() == b"x" * 300_000
    assert stat.S_ISFIFO(reader.path.stat().st_mode)


def test_a_fifo_with_no_reader_is_an_error_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_named_output, "FIFO_WAIT", 0.1)
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    with pytest.raises(NamedOutputError, match="no process read"):
        write_named_output(pipe, b"x")
    assert stat.S_ISFIFO(pipe.stat().st_mode)


def test_metis_own_files_replace_a_symlink_never_follow_it(tmp_path: Path) -> None:
    from metis_runtime._private import write_private

    outside = tmp_path / "outside"
    outside.write_text("theirs")
    own = tmp_path / "own.json"
    own.symlink_to(outside)
    write_private(own, "mine")
    assert not own.is_symlink() and own.read_text() == "mine" and outside.read_text() == "theirs"
    assert stat.S_IMODE(own.stat().st_mode) == 0o600


# -- every command's writer --------------------------------------------------------------

# Each writer of one file: the args writing to PATH, given the broken input.
FILE_WRITERS: dict[str, Callable[[Path, str], list[str]]] = {
    "conform --output junit": lambda src, p: ["conform", str(src), "--output", f"junit={p}"],
    "conform --output sarif": lambda src, p: ["conform", str(src), "--output", f"sarif={p}"],
    "conform --output json": lambda src, p: ["conform", str(src), "--output", f"json={p}"],
    "conform --report": lambda src, p: ["conform", str(src), "--report", p],
    "draw --out": lambda src, p: ["draw", str(src), "--kind", "svg", "--out", p],
}


@pytest.fixture(params=sorted(FILE_WRITERS))
def writer(request: pytest.FixtureRequest, broken: Path) -> Callable[[str], list[str]]:
    build = FILE_WRITERS[request.param]
    return lambda path: [*build(broken, path), "--format", "anthropic"]


def _ran(args: list[str], codes: tuple[int, ...] = (1,)) -> None:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code in codes, (args, result.output)
    assert "Traceback" not in result.output


def test_every_file_writer_leaves_a_private_device_a_device(
    writer: Callable[[str], list[str]], tmp_path: Path
) -> None:
    node = private_null(tmp_path)
    _ran(writer(str(node)))
    assert stat.S_ISCHR(node.stat().st_mode) and node.stat().st_rdev == NULL_DEVICE


def test_every_file_writer_writes_through_a_fifo(
    writer: Callable[[str], list[str]], tmp_path: Path
) -> None:
    reader = FifoReader(tmp_path / "pipe")
    _ran(writer(str(reader.path)))
    assert reader.result().strip()  # the whole report came through
    assert stat.S_ISFIFO(reader.path.stat().st_mode)


def test_every_file_writer_follows_a_symlink(
    writer: Callable[[str], list[str]], tmp_path: Path
) -> None:
    target = tmp_path / "report.out"
    target.write_text("stale")
    link = tmp_path / "link.out"
    link.symlink_to(target)
    _ran(writer(str(link)))
    assert link.is_symlink() and target.read_text() not in ("", "stale")


def test_every_file_writer_refuses_a_directory_in_one_line(
    writer: Callable[[str], list[str]], tmp_path: Path
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    result = CliRunner().invoke(cli, writer(str(folder)))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{folder}: is a directory" in result.output
    assert folder.is_dir()


def test_junit_to_a_private_null_node_is_the_regression(broken: Path, tmp_path: Path) -> None:
    node = private_null(tmp_path)
    _ran(["conform", "--format", "anthropic", str(broken), "--output", f"junit={node}"])
    assert stat.S_ISCHR(os.lstat(node).st_mode)  # not a 0600 regular file


# -- the writers of a folder: each file placed by the same writer ------------------------


def test_counterexample_out_writes_through_what_is_in_the_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    fifo = FifoReader(out / "cex_no_preflight.jsonl")
    device = private_null(out).rename(out / "cex_no_preflight.itf.json")
    (out / "elsewhere.dot").write_text("stale")
    link = out / "cex_no_preflight.dot"
    link.symlink_to("elsewhere.dot")
    _ran(["counterexample", "--ablate", "no-preflight", "--out", str(out)])
    assert json.loads(fifo.result().splitlines()[0])  # the trace's header came through
    assert stat.S_ISFIFO((out / "cex_no_preflight.jsonl").stat().st_mode)
    assert stat.S_ISCHR(device.stat().st_mode)
    assert link.is_symlink() and (out / "elsewhere.dot").read_text().startswith("digraph")
    assert (out / "test_cex_no_preflight.py").is_file()


def test_conform_draw_dir_writes_through_a_symlink_in_it(broken: Path, tmp_path: Path) -> None:
    drawings = tmp_path / "drawings"
    _ran(["conform", "--format", "anthropic", str(broken), "--draw", str(drawings)])
    names = sorted(p.name for p in drawings.iterdir())
    assert names
    first = drawings / names[0]
    first.unlink()
    (tmp_path / "kept.svg").write_text("stale")
    first.symlink_to(tmp_path / "kept.svg")
    _ran(["conform", "--format", "anthropic", str(broken), "--draw", str(drawings)])
    assert first.is_symlink() and (tmp_path / "kept.svg").read_text().startswith("<")


def test_a_staged_folder_places_each_file_by_the_same_writer(tmp_path: Path) -> None:
    """`StagedOutput` (prove --out, counterexample --out, conform --draw): what is
    already at a file's name decides how it is written, as for --output."""
    from metis_cli._params import StagedOutput

    out = tmp_path / "out"
    out.mkdir()
    fifo = FifoReader(out / "a.smt2")
    device = private_null(out).rename(out / "b.smt2")
    (out / "kept.smt2").write_text("stale")
    (out / "c.smt2").symlink_to("kept.smt2")
    with StagedOutput(out) as stage:
        for name in ("a", "b", "c", "d"):
            (stage / f"{name}.smt2").write_text(f"({name})")
    assert fifo.result() == b"(a)" and stat.S_ISCHR(device.stat().st_mode)
    assert (out / "c.smt2").is_symlink() and (out / "kept.smt2").read_text() == "(c)"
    assert (out / "d.smt2").read_text() == "(d)"
    assert sorted(p.name for p in out.iterdir()) == [
        "a.smt2",
        "b.smt2",
        "c.smt2",
        "d.smt2",
        "kept.smt2",
    ]
    (out / "d.smt2").unlink()
    (out / "d.smt2").mkdir()
    with pytest.raises(SystemExit) as exit_, StagedOutput(out) as stage:
        (stage / "d.smt2").write_text("(d)")
    assert exit_.value.code == 2


def test_dev_stdout_shares_the_redirected_file_with_the_text_report(
    broken: Path, tmp_path: Path
) -> None:
    """`> out.txt` with `--output junit=/dev/stdout`: the XML and the text output
    both land in the file, neither over the other (a real process: fd 1)."""
    import subprocess
    import sys

    out = tmp_path / "out.txt"
    with out.open("wb") as fh:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "metis_cli",
                "conform",
                "--format",
                "anthropic",
                str(broken),
                "--output",
                "junit=/dev/stdout",
            ],
            stdout=fh,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
    assert done.returncode == 1, done.stderr
    text = out.read_text()
    assert text.startswith('<?xml version="1.0"') and "</testsuites>" in text
    assert f"{broken}: violates" in text.split("</testsuites>", 1)[1]
    assert out.is_file() and not out.is_symlink()


def test_plan_digest_write_signs_the_manifest_a_symlink_names(tmp_path: Path) -> None:
    import yaml

    from ..plan.test_manifests import BASE

    (tmp_path / "prog.py").write_text("print('[]')\n")
    real = tmp_path / "m.yaml"
    real.write_text(yaml.safe_dump(BASE))
    link = tmp_path / "link.yaml"
    link.symlink_to(real.name)
    _ran(["plan", "digest", str(link), "--write"], codes=(0,))
    assert link.is_symlink() and str(yaml.safe_load(real.read_text())["digest"]).startswith(
        "sha256:"
    )
