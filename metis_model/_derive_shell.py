"""A plain reading of a Bash line, for the reference fact-deriver (AUTH-4).

Written from Claude Code's permission docs (https://code.claude.com/docs/en/
permissions, "Bash"), sharing nothing with `metis_runtime/shell`: `shlex`
splits on the documented operators (`&&`, `||`, `;`, `|`, `|&`, `&`,
newline); leading `NAME=value` words (deny and ask see past any) and the
documented wrappers (`timeout`, `time`, `nice`, `nohup`, `stdbuf`,
`command`, `builtin`, `noglob`, bare `xargs`) are stripped. A line it cannot
read for certain (`$`, backticks, globs, grouping, `<`, `#`, `!`, `~`, `\\`,
fd redirections, quoting that joins or splits words) gives None.
"""

from __future__ import annotations

import re
import shlex

from attrs import frozen

__all__ = ["NOT_FILES", "Command", "bash_rule_matches", "rule_regex", "shell_words", "split_line"]

# Anything here makes the line unsure: expansions, globs, grouping, input
# redirection, escapes, history, home. Checked on the raw text, quoted or not
# (a stricter reading than bash's, so never a wrong "sure").
_UNSURE = frozenset("$`\\(){}<*?[]!~#")
_OPERATORS = frozenset({"&&", "||", ";", "|", "|&", "&"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.DOTALL)
_DURATION = re.compile(r"[0-9]+(?:\.[0-9]+)?[smhd]?")
_NICE = re.compile(r"-[0-9]+")
_STDBUF = re.compile(r"-[ioe][0-9A-Za-z]+")
# Where output redirection goes nowhere a rule or a protected list cares about.
NOT_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})


@frozen
class Command:
    """One simple command: its words after assignments and wrappers, and the
    targets of its plain `>`/`>>` redirections."""

    argv: tuple[str, ...]
    writes: tuple[str, ...] = ()


def _words(line: str, posix: bool) -> list[str]:
    lex = shlex.shlex(line, posix=posix, punctuation_chars=";&|\n<>")
    lex.whitespace = " \t"
    lex.whitespace_split = True
    lex.commenters = ""
    return list(lex)


def shell_words(line: str) -> tuple[list[str], list[str]] | None:
    """The words of `line` (quotes removed) and each one's raw text; None for
    an unclosed quote or quoting that joins or splits words (not a plain line)."""
    try:
        words, raws = _words(line, True), _words(line, False)
    except ValueError:  # an unclosed quote
        return None
    if len(words) != len(raws):
        return None
    return words, raws


def _operator(raw: str) -> bool:
    """A separator token: one of the operators, or newlines (after one)."""
    body = raw.rstrip("\n")
    return body in _OPERATORS or (not body and bool(raw))


def split_line(line: str) -> list[Command] | None:
    """The simple commands of `line`, or None when it is not surely read."""
    if not line.strip() or any(c in _UNSURE for c in line):
        return None
    split = shell_words(line)
    if split is None:
        return None
    words, raws = split
    out: list[Command] = []
    current: list[str] = []
    writes: list[str] = []
    i = 0
    while i < len(words):
        word, raw = words[i], raws[i]
        if word == raw and _operator(raw):
            if not current:
                return None  # an empty command: a syntax the deriver does not read
            out.append(_finish(current, writes))
            current, writes = [], []
        elif word == raw and raw in (">", ">>"):
            if i + 1 >= len(words) or (current and current[-1].isdigit()):
                return None  # no target, or an fd redirection (`2> f`)
            target = words[i + 1]
            if not target or _operator(raws[i + 1]) or raws[i + 1] in (">", ">>"):
                return None
            if target not in NOT_FILES:
                writes.append(target)
            i += 1
        elif word == raw and set(raw) <= set(";&|\n<>"):
            return None  # `>&`, `&>`, `>|`, `;;`, ...
        elif not word or any(c.isspace() for c in word):
            return None  # a word with blanks: rule text would be ambiguous
        else:
            current.append(word)
        i += 1
    if current:
        out.append(_finish(current, writes))
    elif writes:
        return None
    return out


def _finish(words: list[str], writes: list[str]) -> Command:
    argv = list(words)
    while argv and _ASSIGNMENT.fullmatch(argv[0]):
        argv.pop(0)
    stripped = _strip_wrappers(argv)
    return Command(
        argv=tuple(stripped if stripped is not None else ("\x00",)), writes=tuple(writes)
    )


def _strip_wrappers(argv: list[str]) -> list[str] | None:
    """The command under the documented wrappers; None when a wrapper's
    options are not the plain forms read here (the command then is one no
    rule text can match: a NUL word)."""
    while argv:
        name, rest = argv[0], argv[1:]
        if name in ("nohup", "builtin", "noglob", "time"):
            if rest[:1] and rest[0].startswith("-"):
                return None
            argv = rest
        elif name == "command":
            if rest[:1] and rest[0].startswith("-"):
                return None  # `command -v` looks a name up; it runs nothing
            argv = rest
        elif name == "timeout":
            if not rest or not _DURATION.fullmatch(rest[0]):
                return None
            argv = rest[1:]
        elif name == "nice":
            if rest[:1] == ["-n"]:
                if len(rest) < 2 or not re.fullmatch(r"-?[0-9]+", rest[1]):
                    return None
                argv = rest[2:]
            elif rest[:1] and _NICE.fullmatch(rest[0]):
                argv = rest[1:]
            elif rest[:1] and rest[0].startswith("-"):
                return None
            else:
                argv = rest
        elif name == "stdbuf":
            n = 0
            while n < len(rest) and _STDBUF.fullmatch(rest[n]):
                n += 1
            if n == 0:
                return None
            argv = rest[n:]
        elif name == "xargs":
            if rest[:1] and rest[0].startswith("-"):
                return None  # only a bare xargs is stripped
            argv = rest
        else:
            return argv
        if not argv:
            return None
    return None


def rule_regex(spec: str) -> re.Pattern[str] | None:
    """A deny or ask `Bash(spec)` as a regex over the command's words joined
    by single spaces: `*` any text (spaces included), a trailing ` *` (or the
    legacy `:*`) a word boundary, whitespace runs one space, all else
    literal. None for a spec with quotes or escapes (the docs are silent)."""
    if any(c in spec for c in "'\"\\"):
        return None
    text = " ".join(spec.split())
    if text.endswith(":*"):
        text = text[:-2].rstrip() + " *"
    tail = ""
    if text.endswith(" *"):
        text, tail = text[:-2], "(?: .*)?"
    body = ".*".join(re.escape(part) for part in text.split("*"))
    return re.compile(body + tail, re.DOTALL)


def bash_rule_matches(spec: str, command: Command) -> bool:
    """Whether a deny or ask `Bash(spec)` surely matches `command`: its
    words, or with a path-named program's basename."""
    regex = rule_regex(spec)
    if regex is None or not command.argv or "\x00" in command.argv[0]:
        return False
    forms = [command.argv]
    if "/" in command.argv[0]:
        forms.append((command.argv[0].rsplit("/", 1)[1], *command.argv[1:]))
    return any(regex.fullmatch(" ".join(form)) is not None for form in forms)
