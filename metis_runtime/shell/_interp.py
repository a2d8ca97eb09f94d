"""Programs whose arguments hide other programs: git's global options and
aliases, and interpreter one-liners (`python -c`, `perl -e`, `awk
'BEGIN{system(...)}'`)."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from ._runners import interpreters

# git's own commands (git help -a, 2.4x); any other word may be an alias,
# and an alias starting with `!` runs a shell command.
GIT_BUILTINS = frozenset(
    [
        "add",
        "am",
        "annotate",
        "apply",
        "archive",
        "bisect",
        "blame",
        "branch",
        "bugreport",
        "bundle",
        "cat-file",
        "check-attr",
        "check-ignore",
        "check-mailmap",
        "check-ref-format",
        "checkout",
        "checkout-index",
        "cherry",
        "cherry-pick",
        "citool",
        "clean",
        "clone",
        "column",
        "commit",
        "commit-graph",
        "commit-tree",
        "config",
        "count-objects",
        "credential",
        "describe",
        "diagnose",
        "diff",
        "diff-files",
        "diff-index",
        "diff-tree",
        "difftool",
        "fast-export",
        "fast-import",
        "fetch",
        "fetch-pack",
        "filter-branch",
        "fmt-merge-msg",
        "for-each-ref",
        "for-each-repo",
        "format-patch",
        "fsck",
        "gc",
        "get-tar-commit-id",
        "grep",
        "gui",
        "hash-object",
        "help",
        "hook",
        "index-pack",
        "init",
        "instaweb",
        "interpret-trailers",
        "log",
        "ls-files",
        "ls-remote",
        "ls-tree",
        "mailinfo",
        "mailsplit",
        "maintenance",
        "merge",
        "merge-base",
        "merge-file",
        "merge-index",
        "merge-tree",
        "mergetool",
        "mktag",
        "mktree",
        "multi-pack-index",
        "mv",
        "name-rev",
        "notes",
        "pack-objects",
        "pack-refs",
        "patch-id",
        "prune",
        "prune-packed",
        "pull",
        "push",
        "range-diff",
        "read-tree",
        "rebase",
        "reflog",
        "remote",
        "repack",
        "replace",
        "request-pull",
        "rerere",
        "reset",
        "restore",
        "rev-list",
        "rev-parse",
        "revert",
        "rm",
        "send-email",
        "send-pack",
        "shortlog",
        "show",
        "show-branch",
        "show-index",
        "show-ref",
        "sparse-checkout",
        "stage",
        "stash",
        "status",
        "stripspace",
        "submodule",
        "switch",
        "symbolic-ref",
        "tag",
        "unpack-file",
        "unpack-objects",
        "update-index",
        "update-ref",
        "update-server-info",
        "var",
        "verify-commit",
        "verify-pack",
        "verify-tag",
        "version",
        "whatchanged",
        "worktree",
        "write-tree",
    ]
)
_GIT_WITH_VALUE = frozenset(
    {
        "-C",
        "-c",
        "--git-dir",
        "--work-tree",
        "--namespace",
        "--exec-path",
        "--config-env",
        "--super-prefix",
        "--list-cmds",
        "--attr-source",
    }
)
# Options whose value can make git run programs: configuration, and the
# directory its sub-programs are taken from.
_GIT_RUNS_PROGRAMS = frozenset({"-c", "--config-env", "--exec-path"})
_GIT_FLAGS = frozenset(
    {
        "--no-pager",
        "-P",
        "-p",
        "--paginate",
        "--no-replace-objects",
        "--bare",
        "--literal-pathspecs",
        "--glob-pathspecs",
        "--noglob-pathspecs",
        "--icase-pathspecs",
        "--no-optional-locks",
        "--no-lazy-fetch",
        "--no-advice",
        "--html-path",
        "--man-path",
        "--info-path",
    }
)


def git_split(words: Sequence[str], dynamic: Sequence[bool]) -> tuple[int, bool] | None:
    """Index of git's subcommand in `words` (`words[0]` is git), and whether a
    `-c`/`--config-env` option sets configuration; None if an option is not
    understood or only known at run time."""
    i = 1
    configs = False
    while i < len(words) and words[i].startswith("-"):
        if dynamic[i]:
            return None
        word = words[i]
        head = word.split("=", 1)[0]
        if word in _GIT_WITH_VALUE:
            configs = configs or word in _GIT_RUNS_PROGRAMS
            i += 2
        elif head in _GIT_WITH_VALUE and "=" in word:
            configs = configs or head in _GIT_RUNS_PROGRAMS
            i += 1
        elif word in _GIT_FLAGS:
            i += 1
        else:
            return None
    if i < len(words) and dynamic[i]:
        return None
    return i, configs


def _python_code(words: Sequence[str]) -> str | None:
    """Python's argument grammar: `-c CODE`, `-m MOD`, a script, or stdin."""
    i = 1
    while i < len(words):
        w = words[i]
        if w == "-" or not w.startswith("-"):
            return "" if w == "-" else None  # a script file runs: plain exec
        if w == "--":
            return None if i + 1 < len(words) else ""
        letters = w[1:]
        if w.startswith("--"):
            i += 1
            continue
        for k, c in enumerate(letters):
            if c == "c":
                rest = letters[k + 1 :]
                if rest:
                    return rest
                return words[i + 1] if i + 1 < len(words) else ""
            if c == "m":
                return None  # a module runs: plain exec
            if c in "WXQ":
                i += 0 if letters[k + 1 :] else 1
                break
        i += 1
    return ""  # no script: the program comes from stdin


def interpreter_code(name: str, words: Sequence[str], dynamic: Sequence[bool]) -> str | None:
    """The program text an interpreter runs from its command line; "" when it
    runs text that is not visible (stdin, a run-time word); None when it runs
    a program file or module (a plain command)."""
    table = interpreters()
    if name in table.awk:
        return _awk_code(words, dynamic)
    base = re.sub(r"[0-9.]+$", "", name) if name.startswith("python") else name
    options = table.code_options.get(name, table.code_options.get(base))
    if options is None:
        return None
    if base.startswith("python") or base.startswith("pypy"):
        code = _python_code(words)
    else:
        code = _option_code(words, options)
    if code is None:
        return None
    index = list(words).index(code) if code in words else -1
    if index >= 0 and dynamic[index]:
        return ""
    return code


# perl and ruby bundle flags before the code letter (`perl -lne CODE`,
# perlrun(1); ruby(1)); these letters take the rest of the word as a value.
_CLUSTERED = {"perl": ("eE", "IMmFixdDC"), "ruby": ("e", "IrCEFxK")}


def _cluster_code(words: Sequence[str], i: int, letters: str, valued: str) -> str | None:
    """The code of a bundled `-lne CODE` / `-neCODE` at `words[i]`, if any."""
    w = words[i]
    if not w.startswith("-") or w.startswith("--") or len(w) < 3:
        return None
    for k, c in enumerate(w[1:], 1):
        if c in valued:
            return None
        if c in letters:
            rest = w[k + 1 :]
            if rest:
                return rest
            return words[i + 1] if i + 1 < len(words) else ""
    return None


def _option_code(words: Sequence[str], options: Sequence[str]) -> str | None:
    operands = False
    clustered = _CLUSTERED.get(posixpath.basename(words[0]) if words else "")
    for i, w in enumerate(words[1:], 1):
        if clustered is not None:
            code = _cluster_code(words, i, *clustered)
            if code is not None:
                return code
        for opt in options:
            if w == opt:
                return words[i + 1] if i + 1 < len(words) else ""
            if (
                opt.startswith("-")
                and len(opt) == 2
                and w.startswith(opt)
                and not w.startswith("--")
            ):
                return w[2:]
            if w.startswith(opt + "="):
                return w[len(opt) + 1 :]
        if not w.startswith("-"):
            operands = True
            break
    return None if operands else ""


_AWK_ACTIVE = re.compile(r"system|getline|\||>|print\s*\||close\s*\(")


def _awk_code(words: Sequence[str], dynamic: Sequence[bool]) -> str | None:
    """awk runs its program with `system()`, pipes and `>`: only then opaque."""
    i = 1
    while i < len(words):
        w = words[i]
        if w in ("-f", "--file"):
            return None  # a program file: plain exec
        if w in ("-v", "-F", "--assign", "--field-separator"):
            i += 2
            continue
        if w.startswith("-") and w != "-":
            i += 1
            continue
        if dynamic[i]:
            return ""
        return w if _AWK_ACTIVE.search(w) else None
    return ""


_QUOTED = r"""'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)\""""


def shell_literals(code: str) -> list[str]:
    """Strings an interpreter one-liner passes to a call that runs a command
    (`os.system('rm x')`, `subprocess.run(["rm", "x"])`, backquotes)."""
    calls = "|".join(re.escape(c) for c in interpreters().exec_calls)
    found: list[str] = []
    for m in re.finditer(rf"(?:{calls})\s*\(\s*(\[[^\]]*\]|{_QUOTED})", code):
        arg = m.group(1)
        if arg.startswith("["):
            parts = [a or b for a, b in re.findall(_QUOTED, arg)]
            found.append(" ".join(parts))
        else:
            found.append(m.group(2) if m.group(2) is not None else m.group(3) or "")
    found.extend(re.findall(r"`([^`]*)`", code))
    found.extend(re.findall(r"%x\(([^)]*)\)", code))
    return [f for f in found if f.strip()]
