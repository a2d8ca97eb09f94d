"""Which simple commands only read.

A command is read-only when it is on a known list and its arguments cannot
turn it into a writer (`find -delete`, `sort -o`, `git diff --output`).
Commands whose options can write are only judged when every word is static:
a run-time word (`find . $x`) could be `-delete`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

# Commands whose options never write, execute or change state, whatever the
# arguments: run-time words are harmless here.
_ANY_ARGS: frozenset[str] = frozenset(
    [
        "basename",
        "cat",
        "cd",
        "cksum",
        "cmp",
        "column",
        "comm",
        "cut",
        "df",
        "diff",
        "dirname",
        "dirs",
        "du",
        "echo",
        "egrep",
        "expand",
        "false",
        "fgrep",
        "fold",
        "grep",
        "head",
        "id",
        "ls",
        "md5sum",
        "nl",
        "od",
        "paste",
        "popd",
        "printenv",
        "printf",
        "pushd",
        "pwd",
        "readlink",
        "realpath",
        "rev",
        "seq",
        "sha1sum",
        "sha256sum",
        "sha512sum",
        "stat",
        "strings",
        "tac",
        "tail",
        "test",
        "tr",
        "true",
        "type",
        "uname",
        "unexpand",
        "uptime",
        "wc",
        "which",
        "whoami",
        "[",
    ]
)

_FIND_WRITERS = frozenset(
    ["-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"]
)

_GIT_READERS = frozenset(
    ["status", "log", "diff", "show", "blame", "ls-files", "rev-parse", "describe", "shortlog"]
)
# Global git options that take a value in the next word.
_GIT_GLOBAL_WITH_ARG = frozenset({"-C", "--git-dir", "--work-tree", "--namespace"})
_GIT_GLOBAL_FLAGS = frozenset({"--no-pager", "-P", "--no-replace-objects", "--bare"})


def _find(args: tuple[str, ...]) -> bool:
    return not any(a in _FIND_WRITERS for a in args)


def _rg(args: tuple[str, ...]) -> bool:
    # --pre runs a program on every file searched.
    return not any(a == "--pre" or a.startswith("--pre=") for a in args)


def _short_cluster_has(args: tuple[str, ...], letter: str) -> bool:
    return any(re.fullmatch(rf"-[A-Za-z]*{letter}.*", a) is not None for a in args)


def _sort(args: tuple[str, ...]) -> bool:
    if _short_cluster_has(args, "o"):
        return False
    return not any(a.startswith(("--output", "--compress-program")) for a in args)


def _positionals(args: tuple[str, ...]) -> list[str]:
    return [a for a in args if not a.startswith("-") or a == "-"]


def _uniq(args: tuple[str, ...]) -> bool:
    return len(_positionals(args)) <= 1  # a second operand is an output file


def _xxd(args: tuple[str, ...]) -> bool:
    return len(_positionals(args)) <= 1  # a second operand is an output file


def _tree(args: tuple[str, ...]) -> bool:
    return "-o" not in args


def _date(args: tuple[str, ...]) -> bool:
    return not (_short_cluster_has(args, "s") or any(a.startswith("--set") for a in args))


def _hostname(args: tuple[str, ...]) -> bool:
    return not _positionals(args)  # `hostname NAME` renames the host


def _env(args: tuple[str, ...]) -> bool:
    return not args  # with arguments it is a wrapper, seen through elsewhere


def _command(args: tuple[str, ...]) -> bool:
    return bool(args) and args[0] in {"-v", "-V"}


_SED_FLAGS = frozenset(
    {"-n", "--quiet", "--silent", "-E", "-r", "--regexp-extended", "-s", "-u", "-z"}
)


def _sed(args: tuple[str, ...]) -> bool:
    """`sed -n '1,5p' f`: no in-place edit, no script file, and a script with
    only print, delete, line and quit commands (no `w`, `W`, `e`, `r`, `s`)."""
    script_seen = False
    for a in args:
        if a.startswith("-"):
            if a not in _SED_FLAGS:
                return False  # -i, -f, -e ... (judged elsewhere or writing)
            continue
        if not script_seen:
            script_seen = True
            if re.fullmatch(r"[0-9,$;~!/^ pdqlnN=+]*", a) is None:
                return False
    return script_seen


def _git(args: tuple[str, ...]) -> bool:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        word = args[i]
        if word in _GIT_GLOBAL_WITH_ARG:
            i += 2
        elif word in _GIT_GLOBAL_FLAGS or word.split("=", 1)[0] in _GIT_GLOBAL_WITH_ARG:
            i += 1
        else:
            return False  # `-c key=value` can name a program to run
    if i >= len(args) or args[i] not in _GIT_READERS:
        return False
    rest = args[i + 1 :]
    return not any(a.startswith(("--output", "--ext-diff", "--textconv")) for a in rest)


# Commands that are read-only only for some static arguments.
_CHECKED: dict[str, Callable[[tuple[str, ...]], bool]] = {
    "command": _command,
    "date": _date,
    "env": _env,
    "find": _find,
    "git": _git,
    "hostname": _hostname,
    "rg": _rg,
    "sed": _sed,
    "sort": _sort,
    "tree": _tree,
    "uniq": _uniq,
    "xxd": _xxd,
}

READ_ONLY_COMMANDS: frozenset[str] = _ANY_ARGS | frozenset(_CHECKED)
"""Every command name that can be read-only (some only with some arguments)."""


_SYSTEM_DIRS = ("/bin/", "/usr/bin/", "/usr/local/bin/", "/sbin/", "/usr/sbin/")


def trusted_name(word: str) -> str | None:
    """The command name `word` runs, if it is looked up or in a system dir.

    `./ls` or `tools/ls` is some local program, whatever its name.
    """
    if "/" not in word:
        return word
    if word.startswith(_SYSTEM_DIRS):
        return posixpath.basename(word)
    return None


def command_is_read_only(
    argv: tuple[str, ...], dynamic: tuple[bool, ...], open_ended: bool
) -> bool:
    """Whether running `argv` can only read (redirections are judged elsewhere)."""
    if not argv:
        return True
    if dynamic and dynamic[0]:
        return False
    name = trusted_name(argv[0])
    if name is None:
        return False
    if name in _ANY_ARGS:
        return True
    check = _CHECKED.get(name)
    if check is None:
        return False
    if open_ended or any(dynamic[1:]):
        return False
    return check(argv[1:])
