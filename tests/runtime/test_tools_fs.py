"""The file-system built-ins, resource keys under decoy spellings, atomic
writes and FileTransaction rollback."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metis_runtime._errors import ToolError
from metis_runtime._errors import ToolInputError
from metis_runtime.tools import Classification
from metis_runtime.tools import EditTool
from metis_runtime.tools import FileTransaction
from metis_runtime.tools import GlobTool
from metis_runtime.tools import GrepTool
from metis_runtime.tools import JobManager
from metis_runtime.tools import LsTool
from metis_runtime.tools import ReadTool
from metis_runtime.tools import Tool
from metis_runtime.tools import ToolContext
from metis_runtime.tools import ToolOutput
from metis_runtime.tools import WriteTool
from metis_runtime.tools import _fs as fs_module
from metis_runtime.tools import _search as search_module
from metis_runtime.tools import _search_engines as engines_module
from metis_runtime.tools import _search_workers as workers_module
from metis_runtime.tools import atomic_write
from metis_trace import CallClass
from metis_trace import ToolKind


def _ctx(ws: Path, transaction: FileTransaction | None = None) -> ToolContext:
    return ToolContext(workspace=ws, env={}, jobs=JobManager(), transaction=transaction)


def _run(tool: Tool, input: dict[str, Any], ctx: ToolContext) -> ToolOutput:
    return asyncio.run(tool.run(input, ctx))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return Path(os.path.realpath(root))


# --- read --------------------------------------------------------------------


def test_read_numbers_lines_and_pages(ws: Path) -> None:
    (ws / "f.txt").write_text("".join(f"line{i}\n" for i in range(1, 11)))
    ctx = _ctx(ws)
    out = _run(ReadTool(), {"path": "f.txt", "offset": 2, "limit": 3}, ctx)
    assert out == ToolOutput(
        "     3\tline3\n     4\tline4\n     5\tline5\n[... more lines; continue with offset=5]"
    )
    whole = _run(ReadTool(), {"path": "f.txt"}, ctx).content.splitlines()
    assert len(whole) == 10 and whole[-1] == "    10\tline10"
    assert (
        _run(ReadTool(), {"path": "f.txt", "offset": 10}, ctx).content == "[no lines after line 10]"
    )


def test_read_failures_are_one_line_tool_errors(ws: Path) -> None:
    (ws / "bin").write_bytes(b"\x7fELF\x00\x01")
    (ws / "d").mkdir()
    ctx = _ctx(ws)
    for path, fragment in [
        ("bin", "binary file"),
        ("d", "is a directory"),
        ("nope", "No such file"),
    ]:
        with pytest.raises(ToolError) as info:
            _run(ReadTool(), {"path": path}, ctx)
        assert fragment in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ToolInputError, match="read: field 'limit' must be >= 1"):
        _run(ReadTool(), {"path": "x", "limit": 0}, ctx)
    with pytest.raises(ToolInputError, match="read: missing required field 'path'"):
        ReadTool().classify({}, ctx)


def test_read_truncates_long_lines(ws: Path) -> None:
    (ws / "long").write_text("x" * 5000 + "\n")
    out = _run(ReadTool(), {"path": "long"}, _ctx(ws)).content
    assert out.endswith(" [line truncated]") and len(out) < 2100


# --- write / edit --------------------------------------------------------------


def test_write_creates_parents_and_writes_exact_bytes(ws: Path) -> None:
    content = "héllo\r\nwörld\n\x00tail"
    out = _run(WriteTool(), {"path": "new/dir/f.txt", "content": content}, _ctx(ws))
    assert out.content.startswith("created new/dir/f.txt")
    assert (ws / "new/dir/f.txt").read_bytes() == content.encode()
    out = _run(WriteTool(), {"path": "new/dir/f.txt", "content": "x"}, _ctx(ws))
    assert out.content.startswith("overwrote") and (ws / "new/dir/f.txt").read_bytes() == b"x"
    assert sorted(os.listdir(ws / "new/dir")) == ["f.txt"]  # no temp file left


def test_write_keeps_mode_and_replaces_inode(ws: Path) -> None:
    f = ws / "f.sh"
    f.write_text("old")
    f.chmod(0o751)
    inode = f.stat().st_ino
    _run(WriteTool(), {"path": "f.sh", "content": "new"}, _ctx(ws))
    assert stat.S_IMODE(f.stat().st_mode) == 0o751
    assert f.stat().st_ino != inode  # replaced, not rewritten in place


def test_write_to_directory_fails(ws: Path) -> None:
    (ws / "d").mkdir()
    for tx in (None, FileTransaction()):
        with pytest.raises(ToolError, match=r"^write: .*/d: is a directory$"):
            _run(WriteTool(), {"path": "d", "content": "x"}, _ctx(ws, tx))


def test_failed_atomic_write_leaves_original_and_no_temp(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    f = ws / "f.txt"
    f.write_bytes(b"original")

    def boom(src: str, dst: str, **dir_fds: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "rename", boom)
    with pytest.raises(ToolError, match=r"^write: .*f\.txt: No space left on device$"):
        _run(WriteTool(), {"path": "f.txt", "content": "new"}, _ctx(ws))
    assert f.read_bytes() == b"original"
    assert os.listdir(ws) == ["f.txt"]


def test_edit_unique_ambiguous_missing_and_replace_all(ws: Path) -> None:
    f = ws / "f.txt"
    f.write_bytes(b"a = 1\r\nb = 1\r\nc = 2\r\n")
    ctx = _ctx(ws)
    out = _run(EditTool(), {"path": "f.txt", "old": "c = 2", "new": "c = 3"}, ctx)
    assert out.content == "edited f.txt (1 occurrence replaced)"
    assert f.read_bytes() == b"a = 1\r\nb = 1\r\nc = 3\r\n"  # CRLF untouched
    with pytest.raises(ToolError, match=r"'old' occurs 2 times in f\.txt"):
        _run(EditTool(), {"path": "f.txt", "old": "= 1", "new": "= 9"}, ctx)
    assert f.read_bytes() == b"a = 1\r\nb = 1\r\nc = 3\r\n"
    with pytest.raises(ToolError, match=r"'old' not found in f\.txt"):
        _run(EditTool(), {"path": "f.txt", "old": "zzz", "new": "y"}, ctx)
    out = _run(EditTool(), {"path": "f.txt", "old": "= 1", "new": "= 9", "replace_all": True}, ctx)
    assert out.content == "edited f.txt (2 occurrences replaced)"
    assert f.read_bytes() == b"a = 9\r\nb = 9\r\nc = 3\r\n"
    with pytest.raises(ToolInputError, match="identical"):
        _run(EditTool(), {"path": "f.txt", "old": "a", "new": "a"}, ctx)
    with pytest.raises(ToolInputError, match="edit: field 'old' must not be empty"):
        _run(EditTool(), {"path": "f.txt", "old": "", "new": "a"}, ctx)


def test_edit_refuses_non_utf8(ws: Path) -> None:
    (ws / "latin").write_bytes(b"caf\xe9")
    with pytest.raises(ToolError, match="not a UTF-8 text file"):
        _run(EditTool(), {"path": "latin", "old": "caf", "new": "x"}, _ctx(ws))


# --- resource keys under decoy spellings -------------------------------------


@pytest.fixture
def decoys(ws: Path) -> Path:
    (ws / "a").mkdir()
    (ws / "b.txt").write_text("b")
    (ws / "link.txt").symlink_to("b.txt")
    (ws / "alink").symlink_to("a")
    return ws


SPELLINGS = [
    "b.txt",
    "./b.txt",
    "a/../b.txt",
    "./a/./../b.txt",
    "alink/../b.txt",
    "link.txt",
    "b.txt/",
    "a//..//b.txt",
]


@pytest.mark.parametrize("tool", [WriteTool(), EditTool()])
@pytest.mark.parametrize("spelling", [*SPELLINGS, "ABS"])
def test_every_spelling_of_one_file_gets_one_key(decoys: Path, tool: Tool, spelling: str) -> None:
    ws = decoys
    path = str(ws / "b.txt") if spelling == "ABS" else spelling
    c = tool.classify(_mutation(tool, path), _ctx(ws))
    target = ws / "b.txt"
    assert c == Classification(CallClass.QUEUE, f"file:{target}", ToolKind.EDIT, (target,))


def _mutation(tool: Tool, path: str) -> dict[str, Any]:
    if tool.name == "write":
        return {"path": path, "content": ""}
    return {"path": path, "old": "b", "new": "B"}


def test_key_follows_the_symlink_not_the_text(ws: Path) -> None:
    # `jump/..` is ws/deep under realpath, ws under a textual normpath: the key
    # and the write must both follow the real target.
    (ws / "deep" / "x").mkdir(parents=True)
    (ws / "jump").symlink_to("deep/x")
    ctx = _ctx(ws)
    c = WriteTool().classify({"path": "jump/../b.txt", "content": "z"}, ctx)
    assert c.key == f"file:{ws / 'deep' / 'b.txt'}"
    _run(WriteTool(), {"path": "jump/../b.txt", "content": "z"}, ctx)
    assert (ws / "deep" / "b.txt").read_text() == "z"
    assert not (ws / "b.txt").exists()


def test_write_through_symlink_keeps_link_and_changes_target(decoys: Path) -> None:
    ws = decoys
    _run(WriteTool(), {"path": "link.txt", "content": "via link"}, _ctx(ws))
    assert (ws / "link.txt").is_symlink()
    assert (ws / "b.txt").read_text() == "via link"


def test_duplicate_path_key_in_json_cannot_split_key_and_target(decoys: Path) -> None:
    ws = decoys
    # The decoded input is what both classify and run see: one path, one target.
    raw = '{"path": "zzz.txt", "path": "./a/../b.txt", "content": "new"}'
    input = json.loads(raw)
    ctx = _ctx(ws)
    key = WriteTool().classify(input, ctx).key
    _run(WriteTool(), input, ctx)
    assert key == f"file:{ws / 'b.txt'}"
    assert (ws / "b.txt").read_text() == "new" and not (ws / "zzz.txt").exists()
    with pytest.raises(ToolInputError, match="unknown field 'file_path'"):
        WriteTool().classify({"path": "b.txt", "file_path": "other", "content": ""}, ctx)


segment = st.sampled_from(["./", "a/../", "alink/../", "a/./../", ".//", "a//../"])


@given(
    absolute=st.booleans(),
    prefix=st.lists(segment, max_size=4),
    name=st.sampled_from(["b.txt", "link.txt"]),
    slash=st.booleans(),
)
def test_generated_spellings_share_the_key_and_the_written_file(
    tmp_path_factory: pytest.TempPathFactory,
    absolute: bool,
    prefix: list[str],
    name: str,
    slash: bool,
) -> None:
    ws = Path(os.path.realpath(tmp_path_factory.mktemp("gen")))
    (ws / "a").mkdir()
    (ws / "b.txt").write_text("b")
    (ws / "link.txt").symlink_to("b.txt")
    (ws / "alink").symlink_to("a")
    spelling = (f"{ws}/" if absolute else "") + "".join(prefix) + name + ("/" if slash else "")
    ctx = _ctx(ws)
    for tool in (WriteTool(), EditTool()):
        key = tool.classify(_mutation(tool, spelling), ctx).key
        assert key == f"file:{ws / 'b.txt'}", spelling
    _run(WriteTool(), {"path": spelling, "content": spelling}, ctx)
    assert (ws / "b.txt").read_text() == spelling
    assert (ws / "link.txt").is_symlink()


def test_safe_tools_classify_without_key(ws: Path) -> None:
    ctx = _ctx(ws)
    for tool, input in [
        (ReadTool(), {"path": "x/../f"}),
        (LsTool(), {}),
        (GlobTool(), {"pattern": "*", "path": "sub"}),
        (GrepTool(), {"pattern": "x"}),
    ]:
        c = tool.classify(input, ctx)
        assert (c.cls, c.key, c.kind, c.command) == (CallClass.SAFE, None, ToolKind.READ_ONLY, None)
    assert ReadTool().classify({"path": "x/../f"}, ctx).paths == (ws / "f",)
    assert LsTool().classify({}, ctx).paths == (ws,)
    assert GlobTool().classify({"pattern": "*", "path": "sub"}, ctx).paths == (ws / "sub",)
    assert ReadTool().classify({"path": "/etc/hostname"}, ctx).paths == (Path("/etc/hostname"),)


def test_nul_in_path_is_input_error(ws: Path) -> None:
    with pytest.raises(ToolInputError, match="field 'path' contains a NUL byte"):
        WriteTool().classify({"path": "a\x00b", "content": ""}, _ctx(ws))


# --- ls / glob / grep ----------------------------------------------------------


def test_ls(ws: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "z.txt").write_text("")
    (ws / "a.txt").write_text("")
    ctx = _ctx(ws)
    assert _run(LsTool(), {}, ctx).content == "a.txt\nsub/\nz.txt"
    assert _run(LsTool(), {"path": "sub"}, ctx).content == "[empty directory]"
    with pytest.raises(ToolError, match="not a directory"):
        _run(LsTool(), {"path": "a.txt"}, ctx)


def test_ls_is_bounded(ws: Path) -> None:
    for i in range(fs_module.LS_MAX_ENTRIES + 5):
        (ws / f"f{i:05d}").write_text("")
    lines = _run(LsTool(), {}, _ctx(ws)).content.splitlines()
    assert len(lines) == fs_module.LS_MAX_ENTRIES + 1 and lines[-1] == "[... 5 more entries]"


def test_glob(ws: Path) -> None:
    (ws / "src" / "pkg").mkdir(parents=True)
    for p in ["src/a.py", "src/pkg/b.py", "src/c.txt", "top.py"]:
        (ws / p).write_text("")
    ctx = _ctx(ws)
    assert _run(GlobTool(), {"pattern": "**/*.py"}, ctx).content == "src/a.py\nsrc/pkg/b.py\ntop.py"
    assert _run(GlobTool(), {"pattern": "*.py", "path": "src"}, ctx).content == "src/a.py"
    assert _run(GlobTool(), {"pattern": "*.rs"}, ctx).content == "[no matches]"
    with pytest.raises(ToolInputError, match="glob: field 'pattern' must be relative"):
        _run(GlobTool(), {"pattern": "/etc/*"}, ctx)


def test_grep(ws: Path) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "a.py").write_text("import os\nx = 1\nimport re\n")
    (ws / "src" / "b.txt").write_text("import nothing\n")
    (ws / "blob.bin").write_bytes(b"import\x00binary")
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("import git\n")
    (ws / "outside.txt").write_text("import hidden\n")
    (ws / "src" / "sneaky.py").symlink_to(ws / "outside.txt")
    ctx = _ctx(ws)
    out = _run(GrepTool(), {"pattern": r"^import \w+", "glob": "*.py"}, ctx).content
    assert out == "src/a.py:1:import os\nsrc/a.py:3:import re"
    lines = _run(GrepTool(), {"pattern": "import"}, ctx).content.splitlines()
    assert lines == [
        "outside.txt:1:import hidden",
        "src/a.py:1:import os",
        "src/a.py:3:import re",
        "src/b.txt:1:import nothing",
    ]
    assert (
        _run(GrepTool(), {"pattern": "x =", "path": "src/a.py"}, ctx).content == "src/a.py:2:x = 1"
    )
    assert _run(GrepTool(), {"pattern": "nomatch"}, ctx).content == "[no matches]"
    with pytest.raises(
        ToolInputError, match="grep: field 'pattern' is not a valid regular expression"
    ):
        _run(GrepTool(), {"pattern": "("}, ctx)
    with pytest.raises(ToolError, match="No such file"):
        _run(GrepTool(), {"pattern": "x", "path": "missing"}, ctx)


def test_grep_output_is_bounded(ws: Path) -> None:
    (ws / "many.txt").write_text("hit " + "y" * 1000 + "\n" * 1 + "hit\n" * 2000)
    lines = _run(GrepTool(), {"pattern": "hit"}, _ctx(ws)).content.splitlines()
    assert len(lines) == fs_module.GREP_MAX_MATCHES + 1
    assert lines[-1] == f"[... stopped after {fs_module.GREP_MAX_MATCHES} matches]"
    assert lines[0].endswith(" [line truncated]") and len(lines[0]) < 600


# Pieces of patterns: anchors, classes that match a newline, quantifiers,
# alternation, and the constructs that must send a pattern the slow way.
_REGEX_PIECES = [
    "a", "b", "x", ".", "^", "$", r"\s", r"\S", "[^a]", "[ab]", r"\b", r"\B", r"\w",
    "*", "+", "?", "*?", "{1,2}", "|", "(", ")", "(?:", r"\A", r"\Z", "(?=a)", "(?!b)",
    "(?<=a)", "(?<!x)", "(?>a*)", "a*+", "(?i)", "(?-i:a)", r"(a)\1", " ",
]  # fmt: skip
_TEXT = st.text(alphabet="abx \n\r\t\u2028", max_size=40)


@given(
    pieces=st.lists(st.sampled_from(_REGEX_PIECES), min_size=1, max_size=6),
    text=_TEXT,
)
def test_grep_whole_text_search_finds_the_same_lines(pieces: list[str], text: str) -> None:
    import re

    try:
        regex = re.compile("".join(pieces))
    except re.error:
        return
    whole = engines_module.whole_text_regex(regex)
    slow = list(engines_module.matching_lines(text, regex, None))
    fast = list(engines_module.matching_lines(text, regex, whole))
    assert fast == slow


@pytest.mark.parametrize(
    ("pattern", "fast"),
    [
        (r"def parse_\d+", True),
        (r"^import \w+$", True),
        (r"a\s*b", True),
        (r"\Aimport", False),
        (r"\B", False),  # an empty line alone has no \B; the whole text has one there
        (r"x(?=y)", False),
        (r"(?<!_)key", False),
        (r"(?>a\s*)$", False),
        (r"a\s*+$", False),
        (r"(?-m:^a)", False),
    ],
)
def test_grep_takes_the_whole_text_path_only_when_it_is_exact(pattern: str, fast: bool) -> None:
    import re

    assert (engines_module.whole_text_regex(re.compile(pattern)) is not None) is fast


def test_grep_whole_text_search_counts_lines_across_multi_line_matches() -> None:
    import re

    text = "x1\nxz\n\nx z\nlast x"
    regex = re.compile(r"x[^y]*z")  # in the whole text, one match runs from line 1 to 4
    whole = engines_module.whole_text_regex(regex)
    assert whole is not None
    assert list(engines_module.matching_lines(text, regex, whole)) == [(2, "xz"), (4, "x z")]


# --- FileTransaction -----------------------------------------------------------


def test_transaction_rolls_back_partial_multi_file_mutation(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = ws / "a.txt", ws / "b.txt"
    a.write_bytes(b"alpha\r\n\x00bytes")
    a.chmod(0o640)
    b.write_bytes(b"beta one\n")
    tx = FileTransaction()
    ctx = _ctx(ws, tx)
    real_write_at = fs_module.write_at
    calls = 0

    def flaky(dir_fd: int, name: str, data: bytes, mode: int | None = None) -> None:
        nonlocal calls
        calls += 1
        if calls == 4:
            raise OSError(5, "Input/output error")
        real_write_at(dir_fd, name, data, mode)

    monkeypatch.setattr(fs_module, "write_at", flaky)
    with pytest.raises(ToolError, match="Input/output error"), tx:
        _run(WriteTool(), {"path": "a.txt", "content": "changed"}, ctx)
        _run(EditTool(), {"path": "b.txt", "old": "one", "new": "two"}, ctx)
        _run(WriteTool(), {"path": "new/deep/c.txt", "content": "created"}, ctx)
        assert a.read_bytes() == b"changed" and (ws / "new/deep/c.txt").exists()
        _run(WriteTool(), {"path": "a.txt", "content": "fails"}, ctx)  # 4th write: fault
    assert a.read_bytes() == b"alpha\r\n\x00bytes"
    assert stat.S_IMODE(a.stat().st_mode) == 0o640
    assert b.read_bytes() == b"beta one\n"
    assert not (ws / "new").exists()  # the file and the directories it needed are gone
    assert sorted(os.listdir(ws)) == ["a.txt", "b.txt"]


def test_transaction_snapshot_is_taken_once_and_commit_forgets(ws: Path) -> None:
    f = ws / "f"
    f.write_bytes(b"v1")
    tx = FileTransaction()
    tx.snapshot(f)
    atomic_write(f, b"v2")
    tx.snapshot(ws / "." / "f")  # same real path: the v1 snapshot stays
    assert tx.paths == (f,)
    tx.rollback()
    assert f.read_bytes() == b"v1"
    with FileTransaction() as tx2:
        tx2.snapshot(f)
        atomic_write(f, b"v3")
    assert tx2.paths == ()
    assert f.read_bytes() == b"v3"


def test_rollback_keeps_directories_that_gained_other_files(ws: Path) -> None:
    tx = FileTransaction()
    tx.snapshot(ws / "d" / "mine")
    (ws / "d").mkdir()
    (ws / "d" / "mine").write_text("x")
    (ws / "d" / "theirs").write_text("y")
    tx.rollback()
    assert sorted(os.listdir(ws / "d")) == ["theirs"]


def test_snapshot_of_directory_is_tool_error(ws: Path) -> None:
    with pytest.raises(ToolError, match="is a directory"):
        FileTransaction().snapshot(ws)


# --- the search worker ---------------------------------------------------------------


def _request(base: Path, pattern: str) -> search_module.SearchRequest:
    return search_module.SearchRequest(
        pattern=pattern,
        base=str(base),
        glob=None,
        shown_base=".",
        max_matches=fs_module.GREP_MAX_MATCHES,
        max_line=fs_module.GREP_MAX_LINE,
        max_file_bytes=fs_module.GREP_MAX_FILE_BYTES,
    )


@pytest.fixture
def workers() -> Iterator[workers_module.SearchWorkers]:
    """A pool of search workers of its own, closed after the test."""
    pool = workers_module.SearchWorkers()
    try:
        yield pool
    finally:
        pool.close()


@pytest.fixture
def grep_workers(
    workers: workers_module.SearchWorkers, monkeypatch: pytest.MonkeyPatch
) -> workers_module.SearchWorkers:
    """`workers`, as the pool the grep tool searches with."""
    monkeypatch.setattr(fs_module, "_WORKERS", workers)
    return workers


def test_search_worker_answers_as_the_in_process_search(
    ws: Path, workers: workers_module.SearchWorkers
) -> None:
    (ws / "a.txt").write_text("one\ntwo\r\nthree two\n\u00e9two\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "b.md").write_text("no\ntwo!")
    request = _request(ws, "two")
    answer = workers.run(request, search_module.Cancellation())
    assert answer == search_module.search(request)
    assert answer[0] == [
        "a.txt:2:two",
        "a.txt:3:three two",
        "a.txt:4:\u00e9two",
        "sub/b.md:2:two!",
    ]
    # The worker is kept and reused.
    assert workers.run(request, search_module.Cancellation()) == answer
    assert len(workers._idle) == 1


def test_a_cancelled_grep_kills_its_worker(
    ws: Path, monkeypatch: pytest.MonkeyPatch, grep_workers: workers_module.SearchWorkers
) -> None:
    # (a+)+(?=b)b backtracks for hours on Python's re (a lookahead: RE2 cannot take it)
    (ws / "slow.txt").write_text("a" * 40 + "\n")
    started: list[workers_module._Worker] = []

    class Recorded(workers_module._Worker):
        def __init__(self) -> None:
            super().__init__()
            started.append(self)

    monkeypatch.setattr(workers_module, "_Worker", Recorded)

    async def main() -> None:
        task = asyncio.ensure_future(GrepTool().run({"pattern": "(a+)+(?=b)b"}, _ctx(ws)))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 5)

    asyncio.run(main())
    [worker] = started
    assert worker.process.returncode is not None  # killed and reaped
    assert grep_workers._idle == []


def test_grep_falls_back_to_this_process_when_no_worker_starts(
    ws: Path, monkeypatch: pytest.MonkeyPatch, grep_workers: workers_module.SearchWorkers
) -> None:
    (ws / "a.txt").write_text("x = 1\ny = 2\n")
    monkeypatch.setattr(sys, "executable", str(ws / "no-such-python"))
    assert _run(GrepTool(), {"pattern": "y ="}, _ctx(ws)).content == "a.txt:2:y = 2"
    assert grep_workers._idle == []


def test_grep_survives_a_worker_that_died_while_idle(
    ws: Path, workers: workers_module.SearchWorkers
) -> None:
    (ws / "a.txt").write_text("x = 1\ny = 2\n")
    request = _request(ws, "x")
    workers.run(request, search_module.Cancellation())
    [worker] = workers._idle
    worker.process.kill()
    worker.process.wait()
    # The dead one is never asked (a killed process tree took it): a fresh one answers.
    assert workers.run(request, search_module.Cancellation())[0] == ["a.txt:1:x = 1"]
    [fresh] = workers._idle
    assert fresh is not worker and fresh.process.poll() is None


@pytest.mark.usefixtures("grep_workers")
def test_grep_in_this_process_refuses_a_pattern_it_cannot_stop(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No worker can start, so a backtracking pattern would run unstoppably in this
    # process (the hang CI met): it is refused at once; a linear pattern still runs.
    (ws / "a.txt").write_text("a" * 40 + "!\n" + "x٣\n")
    monkeypatch.setattr(sys, "executable", str(ws / "no-such-python"))
    started = time.monotonic()
    for pattern in (r"(a+)+(?=b)\1", r"(\d+)+$"):  # `re` only; `re` on non-ASCII text
        with pytest.raises(ToolError, match=r"cannot be bounded in this process"):
            _run(GrepTool(), {"pattern": pattern}, _ctx(ws))
    assert time.monotonic() - started < 5
    assert _run(GrepTool(), {"pattern": "a!"}, _ctx(ws)).content == "a.txt:1:" + "a" * 40 + "!"


def test_transaction_keeps_a_symlink_as_a_link_when_not_following(ws: Path) -> None:
    from metis_runtime.tools import place_symlink

    (ws / "real.txt").write_text("real\n")
    os.symlink("real.txt", ws / "link")
    tx = FileTransaction()
    tx.snapshot(ws / "link", follow_symlinks=False)
    tx.snapshot(ws / "new" / "file.txt", follow_symlinks=False)
    atomic_write(ws / "link", b"a file now\n")  # replaces the link itself
    (ws / "new").mkdir()
    place_symlink(ws / "new" / "file.txt", "../real.txt")
    tx.rollback()
    assert os.readlink(ws / "link") == "real.txt"
    assert (ws / "real.txt").read_text() == "real\n"
    assert not (ws / "new").exists()


def test_a_pooled_search_worker_outlives_the_event_loop_that_started_it(
    ws: Path, grep_workers: workers_module.SearchWorkers
) -> None:
    # PR_SET_PDEATHSIG follows the forking *thread*: a worker forked from the
    # loop's to_thread thread died with that loop, and the next run met it dead.
    (ws / "a.txt").write_text("x = 1\n")
    assert _run(GrepTool(), {"pattern": "x"}, _ctx(ws)).content == "a.txt:1:x = 1"
    [worker] = grep_workers._idle
    time.sleep(0.2)  # the loop and its threads are gone; a death signal would have come
    assert worker.process.poll() is None
    assert _run(GrepTool(), {"pattern": "x"}, _ctx(ws)).content == "a.txt:1:x = 1"
    assert grep_workers._idle == [worker]  # the same process answered again
