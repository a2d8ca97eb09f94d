"""grep's file walk honours `.gitignore` as git does: on generated trees, the
files it searches are the files git reports as not ignored
(`git ls-files --others --exclude-standard`, and `git check-ignore` for
each path), with nested `.gitignore`s, negation, directory patterns and
`.git/info/exclude`."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metis_runtime.tools._search import walk_files

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

_DIRS = ("", "a", "a/b", "build", "src", "src/build", "a/b/c")
_NAMES = ("x.log", "keep.log", "y.txt", "build", "notes.md", "a", "z.py")
_PATTERNS = (
    "*.log",
    "!keep.log",
    "build/",
    "/y.txt",
    "**/c",
    "a/**/z.py",
    "?.txt",
    "[xy].*",
    "!build/",
    "src/",
    "b",
    "*.md",
    "!notes.md",
    "# comment",
    "",
    "\\!keep.log",
    "/a/b",
    "**/build",
    "*.py",
    "!*.py",
    "c/",
    "trailing.txt ",
)
_GIT = ["git", "-c", "core.excludesFile=/dev/null", "-c", "init.defaultBranch=main"]


@st.composite
def trees(draw: st.DrawFn) -> tuple[list[str], dict[str, list[str]], list[str]]:
    files = draw(
        st.lists(
            st.tuples(st.sampled_from(_DIRS), st.sampled_from(_NAMES)).map(
                lambda t: f"{t[0]}/{t[1]}" if t[0] else t[1]
            ),
            min_size=1,
            max_size=12,
            unique=True,
        )
    )
    ignores = draw(
        st.dictionaries(
            st.sampled_from(_DIRS), st.lists(st.sampled_from(_PATTERNS), max_size=5), max_size=3
        )
    )
    exclude = draw(st.lists(st.sampled_from(_PATTERNS), max_size=2))
    return files, ignores, exclude


def _build(
    root: Path, files: list[str], ignores: dict[str, list[str]], exclude: list[str]
) -> list[str]:
    written = []
    for rel in files:
        path = root / rel
        if any(p.is_file() for p in [*path.parents][: len(path.parents) - len(root.parents) - 1]):
            continue  # a file where this path needs a folder
        if path.is_dir():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("needle\n")
        written.append(rel)
    for folder, patterns in ignores.items():
        target = root / folder
        if target.is_file():
            continue
        target.mkdir(parents=True, exist_ok=True)
        (target / ".gitignore").write_text("\n".join(patterns) + "\n")
        written.append(f"{folder}/.gitignore" if folder else ".gitignore")
    subprocess.run([*_GIT, "init", "-q", str(root)], check=True)
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("\n".join(exclude) + "\n")
    return written


def _git_not_ignored(root: Path) -> set[str]:
    out = subprocess.run(
        [*_GIT, "-C", str(root), "ls-files", "--others", "--exclude-standard", "-z"],
        capture_output=True,
        check=True,
    ).stdout
    return {p for p in out.decode().split("\0") if p}


def _git_check_ignore(root: Path, paths: list[str]) -> set[str]:
    done = subprocess.run(
        [*_GIT, "-C", str(root), "check-ignore", "--no-index", "--stdin", "-z"],
        input="\0".join(paths).encode(),
        capture_output=True,
    )
    assert done.returncode in (0, 1), done.stderr
    return {p for p in done.stdout.decode().split("\0") if p}


@settings(max_examples=60, deadline=None)
@given(trees())
def test_the_walk_skips_what_git_ignores(
    tree: tuple[list[str], dict[str, list[str]], list[str]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(os.path.realpath(tmp))
        written = _build(root, *tree)
        ours = {rel for _, rel in walk_files(str(root), None)}
        assert ours == _git_not_ignored(root)
        ignored = _git_check_ignore(root, written)
        assert ours == set(written) - ignored
        everything = {rel for _, rel in walk_files(str(root), None, respect_ignore=False)}
        assert everything == set(written)


def test_outside_a_repository_nothing_is_ignored(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*.log\n")
    (tmp_path / "a.log").write_text("x")
    assert {rel for _, rel in walk_files(str(tmp_path), None)} == {".gitignore", "a.log"}


def test_a_searched_subfolder_keeps_its_ancestors_rules(tmp_path: Path) -> None:
    subprocess.run([*_GIT, "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("*.log\n!keep.log\n")
    (tmp_path / "sub").mkdir()
    for name in ("a.log", "keep.log", "b.txt"):
        (tmp_path / "sub" / name).write_text("x")
    assert {rel for _, rel in walk_files(str(tmp_path / "sub"), None)} == {"keep.log", "b.txt"}
