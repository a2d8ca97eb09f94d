"""Whether a Bash line surely may change a file, for AUTH-4's `kind` fact.

A call whose line may write is not `read_only`, whatever else it does. Read
from the shell's own rules (POSIX.1-2017, Shell Command Language, 2.7
"Redirection": `>`, `>>`, `>|` create or truncate their target, `<>` opens
it for reading and writing and creates it when missing; bash adds `&>` and
`&>>`), and from two utilities that write their operands (POSIX `uniq`:
`uniq [options] [input_file [output_file]]`; `tee file...`). One-sided:
where `>` may not be a redirection (`[[ ]]`, `(( ))`, a here-document's
body, `case`) it says nothing, and a target that names no file (`/dev/null`,
an fd duplication `>&2`) writes nothing.
"""

from __future__ import annotations

from attrs import frozen

from ._derive_shell import NOT_FILES, shell_words

__all__ = ["Writes", "surely_writes"]

_REDIRECTS = frozenset({">", ">>", ">|", "<>", "&>", "&>>"})
_NOT_FILES = NOT_FILES | {"/dev/tty", "-"}  # `-`: standard output, to uniq and tee
# Where `>` or `<` may be something other than a redirection.
_UNREAD = ("[[", "((", "<<", "case", "let ")
_PUNCTUATION = frozenset(";&|<>\n")
_UNIQ_FLAGS = frozenset({"-c", "-d", "-u", "-i", "-D", "-z"})
_UNIQ_VALUED = frozenset({"-f", "-s", "-w"})


def _tokens(line: str) -> list[tuple[str, bool]] | None:
    """The words, each with whether it is bare (no quote or escape in it:
    only a bare `>` is an operator); split as `split_line` splits."""
    split = shell_words(line)
    if split is None:
        return None
    return [(w, w == raw) for w, raw in zip(*split, strict=True)]


def _uniq_output(args: list[str]) -> str | None:
    """uniq's output operand (its second), when its options are plain."""
    operands: list[str] = []
    skip = False
    for word in args:
        if skip:
            skip = False
        elif word in _UNIQ_VALUED:
            skip = True
        elif word.startswith("-") and word != "-":
            if word not in _UNIQ_FLAGS:
                return None  # an option not read here
        else:
            operands.append(word)
    return operands[1] if len(operands) == 2 else None


def _command_writes(argv: list[str]) -> list[str]:
    """The files a simple command writes through its operands."""
    if argv[:1] == ["uniq"]:
        out = _uniq_output(argv[1:])
        return [out] if out is not None and out not in _NOT_FILES else []
    if argv[:1] == ["tee"] and all(not w.startswith("-") for w in argv[1:]):
        return [w for w in argv[1:] if w not in _NOT_FILES]
    return []


@frozen
class Writes:
    """A line that may change files: why (the first write seen), and the
    names it writes (as written; a name with an expansion may be among them)."""

    reason: str
    targets: tuple[str, ...]


def surely_writes(line: str) -> Writes | None:
    """The writes of `line`, or None when it writes nothing the deriver is sure of."""
    if any(marker in line for marker in _UNREAD):
        return None
    tokens = _tokens(line)
    if tokens is None:
        return None
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
            if named and target not in _NOT_FILES:
                seen.append((f"{token} {target} opens it for writing", target))
        elif operator:  # a separator, or an fd duplication (`>&2`)
            seen += [(f"{argv[0]} writes its operand {w}", w) for w in _command_writes(argv)]
            argv = []
        elif not after_redirect:
            argv.append(token)
        after_redirect = operator and token in _REDIRECTS
    if not seen:
        return None
    return Writes(seen[0][0], tuple(dict.fromkeys(t for _, t in seen)))
