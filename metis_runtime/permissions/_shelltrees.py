"""What the disk and the line's words say about a shell command, beyond its
own arguments (issue 26):

- `Trees`: the files below a folder a command copies or archives whole
  (`cp -r ~/.ssh /tmp`, `tar czf x.tgz dir`), walked once per decision and
  bounded, so a Read deny on a file inside matches;
- `expand_glob`: pathname expansion as bash does it with its defaults (no
  `dotglob`, no `nullglob`), against the directory the command runs in;
- `hidden_command`: a program metis does not know (`caffeinate`,
  `unbuffer`, `systemd-inhibit`) whose later words are a command a deny or
  ask rule names: no table lists every wrapper (anthropics/claude-code#92542).
"""

from __future__ import annotations

import glob
import os
import posixpath
import re
from collections.abc import Sequence
from pathlib import Path

from ..shell import READ_ONLY_COMMANDS
from ..shell import SimpleCommand
from ..shell import interpreter_names
from ..shell import known_programs
from ..shell import runner
from ..shell import trusted_name
from ..shell._expand import unescape_glob
from ._rules import Rule
from ._rules import bash_matches

TREE_LIMIT = 5000  # entries walked below one folder before it counts as too large
GLOB_LIMIT = 1000  # matches of one pattern before it counts as unknown


class Trees:
    """The paths below each folder, walked at most once; `too_large` names
    the first folder that held more than TREE_LIMIT entries."""

    def __init__(self) -> None:
        self._seen: dict[Path, tuple[Path, ...]] = {}
        self._linked: dict[Path, list[Path]] = {}
        self.too_large = ""

    def linked_dirs(self, root: Path) -> list[Path]:
        """Folders that symlinks below `root` point to (zip and `cp -L`
        follow them): a rule on anything below one matches."""
        self.files(root)
        return self._linked.get(root, [])

    def files(self, root: Path) -> tuple[Path, ...]:
        if root not in self._seen:
            self._seen[root] = self._walk(root)
        return self._seen[root]

    def _walk(self, root: Path) -> tuple[Path, ...]:
        if not root.is_dir():
            return ()
        out: list[Path] = []
        stack = [os.fspath(root)]
        while stack:
            try:
                with os.scandir(stack.pop()) as entries:
                    for entry in entries:
                        out.append(Path(entry.path))
                        if entry.is_symlink():  # a deny matches the link or its target
                            target = Path(os.path.realpath(entry.path))
                            out.append(target)
                            if target.is_dir():
                                self._linked.setdefault(root, []).append(target)
                        elif entry.is_dir():
                            stack.append(entry.path)
            except OSError:
                continue  # unreadable: the command cannot copy it either
            if len(out) > TREE_LIMIT:
                self.too_large = self.too_large or str(root)
                break
        return tuple(out)


def expand_glob(pattern: str, base: Path) -> list[str] | None:
    """The paths `pattern` matches from `base` (bash's defaults: a leading
    `.` only matches a pattern's own `.`); with no match, the word itself,
    as bash passes it on. None past GLOB_LIMIT matches."""
    text = pattern.replace("[^", "[!")  # bash's negation spelling
    if text.startswith("~"):
        text = os.path.expanduser(text)
    found: list[str] = []
    root = os.fspath(base)
    for match in glob.iglob(text, root_dir=root):
        found.append(match)
        if len(found) > GLOB_LIMIT:
            return None
    return found or [unescape_glob(pattern)]


def _known(name: str) -> bool:
    awk, interpreters = interpreter_names()
    return (
        name in READ_ONLY_COMMANDS
        or name in known_programs()
        or name in awk
        or name in interpreters
        or runner(name) is not None
    )


def hidden_command(
    cmd: SimpleCommand, limits: Sequence[Rule]
) -> tuple[tuple[str, ...], Rule] | None:
    """A later run of `cmd`'s words that a deny or ask Bash rule names, when
    `cmd`'s program is one metis does not know: those words and the rule."""
    rules = [r for r in limits if r.spec.bash is not None]
    if not rules or len(cmd.argv) < 2 or cmd.container or cmd.is_dynamic(0):
        return None
    name = trusted_name(cmd.argv[0]) or posixpath.basename(cmd.argv[0])
    if _known(name):
        return None
    for k in range(1, len(cmd.argv)):
        word = cmd.argv[k]
        if cmd.is_dynamic(k) or word.startswith("-") or re.search(r"\s", word) or "=" in word:
            continue
        inner = SimpleCommand(
            argv=cmd.argv[k:],
            text="",
            dynamic=tuple(cmd.is_dynamic(i) for i in range(k, len(cmd.argv))),
            open_ended=cmd.open_ended,
        )
        for rule in rules:
            assert rule.spec.bash is not None
            if bash_matches(rule.spec.bash, inner, definite=False):
                return cmd.argv[k:], rule
    return None
