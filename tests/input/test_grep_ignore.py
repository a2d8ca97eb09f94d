"""grep's file walk honours `.gitignore` as git does: on generated trees, the
files it searches are the files git reports as not ignored
(`git ls-files --others --exclude-standard`, and `git check-ignore` for
each path), with nested `.gitignore`s, negation, directory patterns,
`.git/info/exclude` and `core.excludesFile`; and ripgrep's `.ignore` and
`.rgignore` as its GUIDE documents them."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_runtime.tools._ignore import excludes_file
from metis_runtime.tools._search_walk import walk_files

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
        if target.is_file() or any(q.is_file() for q in target.parents):
            continue  # a file where this folder, or one above it, would be
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


# --- core.excludesFile (git's global excludes) ------------------------------------------


def _no_negated_folder(tree: tuple[list[str], dict[str, list[str]], list[str]]) -> bool:
    # A known difference (README, "Ignore files"): `!build/` in one source also
    # re-includes, for the sources below it, the files inside build/, where git
    # checks those files against the lower sources on their own.
    return not any(p == "!build/" for ps in [*tree[1].values(), tree[2]] for p in ps)


@settings(max_examples=30, deadline=None)
@given(
    trees().filter(_no_negated_folder), st.lists(st.sampled_from(_PATTERNS), min_size=1, max_size=3)
)
def test_the_global_excludes_file_ranks_below_the_repositorys_own(
    tree: tuple[list[str], dict[str, list[str]], list[str]], global_patterns: list[str]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(os.path.realpath(tmp)) / "repo"
        root.mkdir()
        written = _build(root, *tree)
        excludes = root.parent / "global-ignore"
        excludes.write_text("\n".join(global_patterns) + "\n")
        out = subprocess.run(
            [
                "git",
                "-c",
                f"core.excludesFile={excludes}",
                "-C",
                str(root),
                "ls-files",
                "--others",
                "--exclude-standard",
                "-z",
            ],
            capture_output=True,
            check=True,
        ).stdout
        expected = {p for p in out.decode().split("\0") if p}
        ours = {rel for _, rel in walk_files(str(root), None, global_excludes=str(excludes))}
        assert ours == expected
        assert ours <= set(written)


def _config(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_excludes_file_is_found_where_git_finds_it(tmp_path: Path) -> None:
    repo, home, xdg = tmp_path / "repo", tmp_path / "home", tmp_path / "xdg"
    subprocess.run([*_GIT, "init", "-q", str(repo)], check=True)
    env = {"HOME": str(home)}
    # unset: $XDG_CONFIG_HOME/git/ignore, else ~/.config/git/ignore (gitignore(5))
    assert excludes_file(str(repo), env) == str(home / ".config" / "git" / "ignore")
    assert excludes_file(str(repo), {**env, "XDG_CONFIG_HOME": str(xdg)}) == str(
        xdg / "git" / "ignore"
    )
    assert excludes_file(str(repo), {**env, "XDG_CONFIG_HOME": ""}) == str(
        home / ".config" / "git" / "ignore"
    )
    # ~/.gitconfig outranks $XDG_CONFIG_HOME/git/config; `~/` is the home
    _config(xdg / "git" / "config", "[core]\n\texcludesFile = /from/xdg\n")
    assert excludes_file(str(repo), {**env, "XDG_CONFIG_HOME": str(xdg)}) == "/from/xdg"
    _config(
        home / ".gitconfig",
        '[user]\n excludesfile = /not/core\n[Core]\n ExcludesFile = "~/g i" # x\n',
    )
    assert excludes_file(str(repo), {**env, "XDG_CONFIG_HOME": str(xdg)}) == str(home / "g i")
    # the repository's own config outranks both; $GIT_CONFIG_GLOBAL replaces the global files
    with (repo / ".git" / "config").open("a") as f:
        f.write("[core]\n\texcludesfile = local-ignore\n")
    assert excludes_file(str(repo / "sub"), env) == str(repo / "local-ignore")
    (repo / ".git" / "config").write_text("[core]\n\tbare = false\n")
    glob = _config(tmp_path / "gc", "[core] excludesFile = /from/env\n")
    assert excludes_file(str(repo), {**env, "GIT_CONFIG_GLOBAL": str(glob)}) == "/from/env"
    assert excludes_file(str(tmp_path), env) is None  # outside a repository


def test_excludes_file_agrees_with_git_config(tmp_path: Path) -> None:
    repo, home = tmp_path / "repo", tmp_path / "home"
    subprocess.run([*_GIT, "init", "-q", str(repo)], check=True)
    _config(home / ".gitconfig", '[core]\n\texcludesFile = "~/my ignore"\n[alias]\n\tst = status\n')
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", ""), "GIT_CONFIG_NOSYSTEM": "1"}
    got = subprocess.run(
        ["git", "-C", str(repo), "config", "--path", "--get", "core.excludesFile"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout.strip()
    assert excludes_file(str(repo), env) == got


# --- ripgrep's .ignore and .rgignore ------------------------------------------------------


def _files(base: Path) -> set[str]:
    return {rel for _, rel in walk_files(str(base), None)}


def test_ignore_files_apply_outside_a_repository_and_from_parent_folders(tmp_path: Path) -> None:
    (tmp_path / ".ignore").write_text("*.log\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    for name in ("a.log", "b.txt"):
        (sub / name).write_text("x")
    (sub / ".gitignore").write_text("b.txt\n")  # no repository: not read
    assert _files(sub) == {".gitignore", "b.txt"}
    assert {rel for _, rel in walk_files(str(sub), None, respect_ignore=False)} == {
        ".gitignore",
        "a.log",
        "b.txt",
    }


def test_ignore_outranks_gitignore_and_rgignore_outranks_ignore(tmp_path: Path) -> None:
    subprocess.run([*_GIT, "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "deep").mkdir()
    for name in ("a.log", "b.log", "c.log", "d.txt"):
        (tmp_path / "deep" / name).write_text("x")
    (tmp_path / ".gitignore").write_text("*.log\n")
    (tmp_path / ".ignore").write_text("!a.log\n!b.log\nd.txt\n")
    (tmp_path / ".rgignore").write_text("b.log\n")
    # a deeper .gitignore does not override a shallower .ignore: the kinds rank first
    (tmp_path / "deep" / ".gitignore").write_text("!d.txt\n")
    assert _files(tmp_path) == {
        ".gitignore",
        ".ignore",
        ".rgignore",
        "deep/.gitignore",
        "deep/a.log",
    }
