"""A plain reading of a Bash line for the reference fact-deriver (AUTH-4),
sharing nothing with `metis_runtime/shell`: its simple commands, as Claude
Code's permission docs read them (https://code.claude.com/docs/en/permissions,
"Bash": split on the operators, leading `NAME=value` words and the documented
wrappers stripped), and whether it surely may change a file, by the shell's
own rules (POSIX.1-2017, Shell Command Language, 2.7 "Redirection": `>`, `>>`,
`>|` create or truncate their target, `<>` opens it for reading and writing
and creates it when missing; bash adds `&>` and `&>>`) and two utilities that
write their operands (POSIX `uniq`: `uniq [options] [input_file
[output_file]]`; `tee file...`). What it cannot read for certain gives None.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection

from attrs import frozen

__all__ = ["Command", "bash_rule_matches", "rule_regex", "split_line", "surely_writes"]

# Anything here makes the line unsure: expansions, globs, grouping, input
# redirection, escapes, history, home. Checked on the raw text, quoted or not
# (a stricter reading than bash's, so never a wrong "sure").
_UNSURE = frozenset("$`\\(){}<*?[]!~#")
_PUNCTUATION = frozenset(";&|<>\n")
# A separator token: an operator, then any newlines (shlex joins them), or newlines.
_SEPARATOR = re.compile(r"(?:&&|\|\||\|&|[;|&])\n*|\n+")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.DOTALL)
# The documented wrappers' plain leading options, over the words joined by
# spaces; another form leaves a NUL word no rule text matches. `command -v`
# looks a name up and runs nothing; only a bare xargs is stripped.
_BARE = "(?!-)"
_WRAPPERS = dict.fromkeys(("nohup", "builtin", "noglob", "time", "command", "xargs"), _BARE) | {
    "timeout": r"[0-9]+(?:\.[0-9]+)?[smhd]? ",
    "nice": rf"-n -?[0-9]+ |-[0-9]+ |{_BARE}",
    "stdbuf": r"(?:-[ioe][0-9A-Za-z]+ )+",
}
# The files `cat`, `head` and `tail` read, past their plain options.
_READERS: dict[str, tuple[Collection[str], str]] = {"cat": ((), "-.*")}
_READERS |= dict.fromkeys(("head", "tail"), (("-n", "-c"), "-[nc]?[0-9]+"))
_REDIRECTS = frozenset({">", ">>", ">|", "<>", "&>", "&>>"})
# Where `>` or `<` may not be a redirection: `[[ ]]`, `(( ))`, a here-document, `case`.
_UNREAD = ("[[", "((", "<<", "case", "let ")
# Targets that name no file a rule or a protected list cares about (`-`:
# standard output, to uniq and tee).
_NOT_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_NOT_WRITTEN = _NOT_FILES | {"/dev/tty", "-"}


@frozen
class Command:
    """One simple command: its words after assignments and wrappers, the
    targets of its plain `>`/`>>` redirections, and the files it reads as
    `cat`, `head` or `tail` (none when their options are not plain)."""

    argv: tuple[str, ...]
    writes: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()


@frozen
class Writes:
    """A line that may change files: why (the first write seen), and the
    names it writes (as written; a name with an expansion may be among them)."""

    reason: str
    targets: tuple[str, ...]


def _shell_words(line: str) -> list[tuple[str, str]] | None:
    """Each word of `line` (quotes removed) with its raw text; None for an
    unclosed quote or quoting that joins or splits words (not a plain line)."""
    split: list[list[str]] = []
    for posix in (True, False):
        lex = shlex.shlex(line, posix=posix, punctuation_chars=";&|\n<>")
        lex.whitespace, lex.whitespace_split, lex.commenters = " \t", True, ""
        try:
            split.append(list(lex))
        except ValueError:  # an unclosed quote
            return None
    words, raws = split
    return list(zip(words, raws, strict=True)) if len(words) == len(raws) else None


def split_line(line: str) -> list[Command] | None:
    """The simple commands of `line`, or None when it is not surely read."""
    split = _shell_words(line) if line.strip() and not set(line) & _UNSURE else None
    if split is None:
        return None
    out: list[Command] = []
    current: list[str] = []
    writes: list[str] = []
    tokens = iter(split)
    for word, raw in tokens:
        if word == raw and _SEPARATOR.fullmatch(raw):
            if not current:
                return None  # an empty command: a syntax the deriver does not read
            out.append(_finish(current, writes))
            current, writes = [], []
        elif word == raw and raw in (">", ">>"):
            target, after = next(tokens, ("", ""))
            fd = bool(current) and current[-1].isdigit()  # `2> f`
            if fd or not target or after in (">", ">>") or _SEPARATOR.fullmatch(after):
                return None  # an fd redirection, no target, or an operator for one
            if target not in _NOT_FILES:
                writes.append(target)
        elif word == raw and set(raw) <= _PUNCTUATION:
            return None  # `>&`, `&>`, `>|`, `;;`, ...
        elif not word or any(c.isspace() for c in word):
            return None  # a word with blanks: rule text would be ambiguous
        else:
            current.append(word)
    if current:
        out.append(_finish(current, writes))
    return None if writes and not current else out


def _finish(words: list[str], writes: list[str]) -> Command:
    """The command under its assignments and the documented wrappers."""
    argv = list(words)
    while argv and _ASSIGNMENT.fullmatch(argv[0]):
        argv.pop(0)
    while argv and argv[0] in _WRAPPERS:
        rest = " ".join(argv[1:]) + " "  # a word here holds no blank
        options = re.match(_WRAPPERS[argv[0]], rest)
        argv = rest[options.end() :].split() if options is not None else []
    reader = _READERS.get(argv[0]) if argv else None
    reads = (_operands(argv[1:], *reader) or []) if reader is not None else []
    return Command(tuple(argv or ("\x00",)), tuple(writes), tuple(reads))


def _operands(
    args: Collection[str], valued: Collection[str] = (), flags: str = "(?!)", other: str = "-.*"
) -> list[str] | None:
    """A utility's operands, when its options are plain: `valued` ones take
    the next word, words `flags` matches are flags (by default none), any
    other option (a word `other` matches) is not read here (None)."""
    out: list[str] = []
    words = iter(args)
    for word in words:
        if word in valued:
            next(words, None)
        elif re.fullmatch(flags, word, re.DOTALL) is None:
            if re.fullmatch(other, word, re.DOTALL) is not None:
                return None
            out.append(word)
    return out


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
    text, tail = (text[:-2], "(?: .*)?") if text.endswith(" *") else (text, "")
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


def _command_writes(argv: list[str]) -> list[str]:
    """The files a simple command writes through its operands: uniq its
    second (`-f`, `-s`, `-w` take a value; `-` is standard input or
    output), tee all of them (with no option)."""
    if argv[:1] == ["uniq"]:
        args = _operands(argv[1:], {"-f", "-s", "-w"}, "-[cduiDz]", other="-.+")
        written = args[1:] if args is not None and len(args) == 2 else []
    else:
        written = (_operands(argv[1:]) or []) if argv[:1] == ["tee"] else []
    return [w for w in written if w not in _NOT_WRITTEN]


def surely_writes(line: str) -> Writes | None:
    """The writes of `line`, or None when it writes nothing the deriver is
    sure of (a target naming no file, `/dev/null` or an fd `>&2`, writes nothing)."""
    split = None if any(marker in line for marker in _UNREAD) else _shell_words(line)
    if split is None:
        return None
    # Only a bare `>` (no quote or escape in it) is an operator.
    tokens = [(word, word == raw) for word, raw in split]
    if any(bare and token.startswith("#") for token, bare in tokens):
        return None  # a comment: what follows is not run
    seen: list[tuple[str, str]] = []
    argv: list[str] = []
    after_redirect = False
    for i, (token, bare) in enumerate([*tokens, (";", True)]):
        operator = bare and set(token) <= _PUNCTUATION
        if operator and token in _REDIRECTS:
            target, plain = tokens[i + 1] if i + 1 < len(tokens) else ("", False)
            named = plain and not set(target) <= _PUNCTUATION and target[:1] not in ("&", "(")
            if named and target not in _NOT_WRITTEN:
                seen.append((f"{token} {target} opens it for writing", target))
        elif operator:  # a separator, or an fd duplication (`>&2`)
            seen += [(f"{argv[0]} writes its operand {w}", w) for w in _command_writes(argv)]
            argv = []
        elif not after_redirect:
            argv.append(token)
        after_redirect = operator and token in _REDIRECTS
    return Writes(seen[0][0], tuple(dict.fromkeys(t for _, t in seen))) if seen else None
