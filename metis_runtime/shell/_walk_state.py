"""What the command walk carries, and the readers that need nothing more.

A word read from the tree (`_Word`), the context a statement runs in
(`_Ctx`: its redirections, whether it surely runs), the accumulator of
commands, reasons and variables (`_Acc`); the first parse error, assignment
names and values, `<>` targets of a line the grammar rejects, and the runner
options that look a name up or start a shell (`_analyze.py` uses them).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from attrs import define
from attrs import field
from attrs import frozen

from ._expand import Values
from ._expand import assigned_value
from ._types import Expansion
from ._types import SimpleCommand
from ._vocabulary import _SENSITIVE_PREFIXES
from ._vocabulary import _SENSITIVE_VARS

# Only private names: they are shared with `_analyze.py`, never outside the package.
__all__: list[str] = []


@frozen
class _Word:
    text: str
    dynamic: bool
    start: int
    expansion: Expansion | None = None  # what a dynamic word expands to, if the line shows it


@frozen
class _Ctx:
    src: bytes
    depth: int
    wrappers: tuple[tuple[str, ...], ...] = ()
    writes: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    opaque_writes: bool = False
    opaque_reads: bool = False
    certain: bool = True  # this statement surely runs, in the line's own shell

    def text(self, node: Any) -> str:
        return str(self.src[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape"))


@define
class _Acc:
    commands: list[SimpleCommand] = field(factory=list)
    reasons: list[str] = field(factory=list)
    # Variables assigned so far on the line: their values, or None when only
    # known at run time (`_expand.Values`).
    variables: dict[str, Values | None] = field(factory=dict)

    def opaque(self, reason: str) -> None:
        if reason not in self.reasons:
            self.reasons.append(reason)

    def lookup(self, name: str) -> Values | None:
        if name not in self.variables:
            return None  # never assigned on the line: its value is the caller's
        found = self.variables[name]
        return found if found is not None else ((), False)

    def assign(self, name: str, values: Values | None, certain: bool) -> None:
        """Record `name=value`; an assignment that may not run (or runs in a
        subshell) adds its value to what the variable may hold."""
        if certain or values is None:
            self.variables[name] = values if certain else None
            return
        old = self.variables.get(name, ((), False))
        if old is None:
            return
        merged = tuple(dict.fromkeys((*old[0], *values[0])))
        self.variables[name] = (merged, old[1] and values[1])


_READ_WRITE = re.compile(r"([0-9]*)<>(.*)", re.DOTALL)


def _read_write_targets(argv: list[str]) -> tuple[list[str], tuple[str, ...]]:
    """`[n]<>word` (POSIX 2.7.7: opened for reading and writing, created when
    missing), which the grammar rejects: the words without it, and its
    targets, each a write as well as a read."""
    words: list[str] = []
    targets: list[str] = []
    i = 0
    while i < len(argv):
        m = _READ_WRITE.fullmatch(argv[i])
        if m is None:
            words.append(argv[i])
        elif m.group(2):
            targets.append(m.group(2))
        elif i + 1 < len(argv):
            targets.append(argv[i + 1])
            i += 1
        i += 1
    return words, tuple(targets)


def _first_error(node: Any, ctx: _Ctx) -> str:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.is_missing:
            return f"missing {n.type!r} at byte {n.start_byte}"
        if n.type == "ERROR":
            return f"unexpected {ctx.text(n)[:40]!r} at byte {n.start_byte}"
        stack.extend(reversed(n.children))
    return "syntax error"


def _check_assignment(name: str, acc: _Acc) -> None:
    name = name.rstrip("+")
    if name in _SENSITIVE_VARS or name.startswith(_SENSITIVE_PREFIXES):
        acc.opaque(f"assignment to {name}")


def _assignment_name(node: Any, ctx: _Ctx) -> str:
    name = next((c for c in node.named_children if c.type in ("variable_name", "subscript")), None)
    text = ctx.text(name) if name is not None else ctx.text(node).split("=", 1)[0]
    return text.split("[", 1)[0]


def _assigned(node: Any, ctx: _Ctx, acc: _Acc) -> Values | None:
    text = ctx.text(node)
    head, eq, raw = text.partition("=")
    if not eq or head.endswith("+") or "[" in head or raw.startswith("("):
        return None  # `+=`, an array element, an array: not followed
    return assigned_value(raw, acc.lookup)


def _lookup_only(name: str, words: Sequence[_Word]) -> bool:
    """`command -v x` only looks `x` up."""
    return name == "command" and any(w.text in {"-v", "-V"} for w in words[1:2])


def _sudo_runs_shell(options: Sequence[_Word]) -> bool:
    for w in options:
        t = w.text
        if t in {"--shell", "--login"}:
            return True
        if re.fullmatch(r"-[A-Za-z]+", t) and ("s" in t or "i" in t):
            return True
    return False
