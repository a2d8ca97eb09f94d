"""grep's engines and time limit, and glob/grep containment.

- A pattern runs on RE2 when RE2 means what Python's `re` means on the text:
  the same lines match (property test over pattern pieces, ASCII and not).
- `(a+)+$` ends at once (RE2 is linear); a pattern only `re` can take that
  backtracks ends at the time limit with a clear error, in the worker.
- glob never lists a path outside its base: not through `..`, not through a
  symlink; grep does not read through a symlinked folder.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metis_runtime._errors import ToolError
from metis_runtime._errors import ToolInputError
from metis_runtime.tools import GlobTool
from metis_runtime.tools import GrepTool
from metis_runtime.tools import JobManager
from metis_runtime.tools import ToolContext
from metis_runtime.tools import ToolOutput
from metis_runtime.tools import _fs as fs_module
from metis_runtime.tools._search_engines import Engines
from metis_runtime.tools._search_engines import matching_lines


def _run(tool: Any, input: dict[str, Any], ws: Path) -> ToolOutput:
    out: ToolOutput = asyncio.run(
        tool.run(input, ToolContext(workspace=ws, env={}, jobs=JobManager()))
    )
    return out


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return Path(os.path.realpath(root))


_PIECES = [
    "a", "b", "é", ".", "^", "$", r"\d", r"\w", r"\s", r"\b", r"\W", "[ab]", "[^a]", "[[:alpha:]]",
    "*", "+", "?", "{1,2}", "{,2}", "|", "(", ")", "(?:", "(?i)", r"(a)\1", "(?=a)", "7", "٣", " ",
]  # fmt: skip


@pytest.mark.filterwarnings("ignore::FutureWarning")  # re warns of "[[:" as a nested set
@given(
    pieces=st.lists(st.sampled_from(_PIECES), min_size=1, max_size=6),
    text=st.text(alphabet="abAé7٣ _\n", max_size=30),
)
def test_both_engines_find_the_same_lines(pieces: list[str], text: str) -> None:
    pattern = "".join(pieces)
    try:
        regex = re.compile(pattern)
    except re.error:
        return
    engines = Engines(pattern)
    subject, chosen, whole = engines.for_text(text)
    assert list(matching_lines(subject, chosen, whole)) == list(matching_lines(text, regex, None))


def test_re2_is_used_where_it_means_the_same() -> None:
    catastrophic = Engines(r"(a+)+$")
    assert catastrophic.re2 is not None
    assert catastrophic.for_text("aaa")[1] is catastrophic.re2
    assert catastrophic.for_text("aaa")[0] == b"aaa"  # RE2 searches the UTF-8 bytes
    assert Engines(r"(a)\1").re2 is None  # a backreference: `re` only
    assert Engines(r"(?=a)").re2 is None  # a lookahead: `re` only
    digits = Engines(r"\d")
    assert digits.for_text("abc")[1] is digits.re2  # ASCII text: RE2's \d is the same
    assert digits.for_text("٣")[1] is digits.re  # an Arabic-Indic digit: only `re` sees \d
    assert Engines("[[:alpha:]]").re2 is None  # a POSIX class to RE2, a plain set to `re`


def test_catastrophic_backtracking_ends_at_once_on_re2(ws: Path) -> None:
    (ws / "a.txt").write_text("a" * 5000 + "b\n")
    started = time.monotonic()
    assert _run(GrepTool(), {"pattern": "(a+)+$"}, ws).content == "[no matches]"
    assert time.monotonic() - started < 5


def test_a_backtracking_pattern_only_re_takes_stops_at_the_limit(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fs_module, "GREP_TIMEOUT_S", 1.0)
    (ws / "a.txt").write_text("a" * 40 + "!\n")
    started = time.monotonic()
    with pytest.raises(ToolError, match=r"grep: stopped after 1 s: the pattern is too slow"):
        _run(GrepTool(), {"pattern": r"(a+)+(?=b)\1"}, ws)
    assert time.monotonic() - started < 4
    (ws / "a.txt").write_text("ab\n")  # the worker that timed out still answers the next search
    assert _run(GrepTool(), {"pattern": "ab"}, ws).content == "a.txt:1:ab"


def test_grep_honours_gitignore_unless_told_not_to(ws: Path) -> None:
    import subprocess

    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".gitignore").write_text("build/\n*.log\n!keep.log\n")
    (ws / "build").mkdir()
    for name in ("build/out.txt", "x.log", "keep.log", "src.txt"):
        (ws / name).write_text("needle\n")
    found = _run(GrepTool(), {"pattern": "needle"}, ws).content.splitlines()
    assert found == ["keep.log:1:needle", "src.txt:1:needle"]
    everything = _run(GrepTool(), {"pattern": "needle", "no_ignore": True}, ws).content
    assert "build/out.txt:1:needle" in everything and "x.log:1:needle" in everything


def test_grep_honours_the_global_excludes_and_ignore_files(
    ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """core.excludesFile's default, $XDG_CONFIG_HOME/git/ignore, found in the
    runtime's environment (the search worker has none), and ripgrep's `.ignore`."""
    import subprocess

    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".git" / "config").write_text("[core]\n\tbare = false\n")  # no excludesFile of its own
    xdg = tmp_path / "xdg"
    (xdg / "git").mkdir(parents=True)
    (xdg / "git" / "ignore").write_text("*.swp\n")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)  # conftest's empty global config
    (ws / ".ignore").write_text("vendor/\n")
    (ws / "vendor").mkdir()
    for name in ("a.txt.swp", "vendor/lib.txt", "a.txt"):
        (ws / name).write_text("needle\n")
    found = _run(GrepTool(), {"pattern": "needle"}, ws).content.splitlines()
    assert found == ["a.txt:1:needle"]
    everything = _run(GrepTool(), {"pattern": "needle", "no_ignore": True}, ws).content
    assert "a.txt.swp:1:needle" in everything and "vendor/lib.txt:1:needle" in everything


def test_glob_refuses_to_leave_its_base(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "x"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    for pattern in ("../x/*", "a/../../x/*", "**/../../x/*"):
        with pytest.raises(ToolInputError, match=r"no '\.\.'"):
            _run(GlobTool(), {"pattern": pattern}, ws)
    (ws / "out").symlink_to(outside)
    (ws / "inner").mkdir()
    (ws / "inner" / "f.txt").write_text("f")
    (ws / "alias").symlink_to(ws / "inner")
    listed = _run(GlobTool(), {"pattern": "*/*"}, ws).content.splitlines()
    assert listed == ["alias/f.txt", "inner/f.txt"]  # nothing under out/ -> outside
    assert "secret" not in _run(GlobTool(), {"pattern": "**/*.txt"}, ws).content


def test_grep_does_not_read_through_a_symlinked_folder(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "x"
    outside.mkdir()
    (outside / "secret.txt").write_text("needle\n")
    (ws / "out").symlink_to(outside)
    (ws / "mine.txt").write_text("needle\n")
    assert _run(GrepTool(), {"pattern": "needle"}, ws).content == "mine.txt:1:needle"
