"""The table of programs that run their arguments (`runners.json`), read once.

The table, not code, says which programs are wrappers, how their options
are shaped, and what Claude Code's matching does with them (stripped before
allow rules, exact rules only, privileged). `skip_options` finds where a
wrapper's own options end.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from importlib import resources
from typing import Any

from attrs import frozen


@frozen
class Runner:
    """One program of the table (field meanings: `runners.json` `_about`)."""

    name: str
    short_arg: frozenset[str] = frozenset()
    short_flag: frozenset[str] = frozenset()
    long_arg: frozenset[str] = frozenset()
    long_flag: frozenset[str] = frozenset()
    short_optional: frozenset[str] = frozenset()
    numeric: bool = False
    operands: int = 0
    assignments: bool = False
    strip: bool = False
    strip_bare: bool = False
    exact_only: bool = False
    privileged: bool = False
    script_option: tuple[str, ...] = ()
    script_args: bool = False
    chdir: tuple[str, ...] = ()
    open_ended: bool = False
    stdin_commands: bool = False
    user_operand: bool = False
    no_command_operand: bool = False
    stop_words: tuple[str, ...] = ()


@frozen
class Interpreters:
    code_options: dict[str, tuple[str, ...]]
    awk: frozenset[str]
    exec_calls: tuple[str, ...]


def _runner(name: str, spec: dict[str, Any]) -> Runner:
    sets = ("short_arg", "short_flag", "short_optional")
    lists = ("long_arg", "long_flag")
    tuples = ("script_option", "chdir", "stop_words")
    kwargs: dict[str, Any] = {}
    for key, value in spec.items():
        if key in sets or key in lists:
            kwargs[key] = frozenset(value)
        elif key in tuples:
            kwargs[key] = tuple(value)
        else:
            kwargs[key] = value
    return Runner(name=name, **kwargs)


@functools.cache
def _table() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("runners.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


@functools.cache
def runners() -> dict[str, Runner]:
    """Every runner of the table, by program name."""
    return {name: _runner(name, spec) for name, spec in _table()["runners"].items()}


@functools.cache
def subcommand_programs() -> dict[str, Runner]:
    """Programs with global options before a subcommand, by name."""
    raw = _table()["subcommands"]
    return {name: _runner(name, spec) for name, spec in raw.items() if not name.startswith("_")}


@functools.cache
def interpreters() -> Interpreters:
    raw = _table()["interpreters"]
    return Interpreters(
        code_options={k: tuple(v) for k, v in raw["code_options"].items()},
        awk=frozenset(raw["awk"]),
        exec_calls=tuple(raw["exec_calls"]),
    )


@functools.cache
def known_programs() -> frozenset[str]:
    """Programs metis knows, that do not run their operands as a local
    command: `runners.json` "plain_programs" and the subcommand programs."""
    return frozenset(_table()["plain_programs"]["names"]) | frozenset(subcommand_programs())


def interpreter_names() -> tuple[frozenset[str], frozenset[str]]:
    """The awk family, and every interpreter that runs program text from its
    command line (`runners.json` "interpreters")."""
    table = interpreters()
    return table.awk, frozenset(table.code_options)


def runner(name: str) -> Runner | None:
    return runners().get(name)


def skip_options(words: Sequence[str], opts: Runner, dynamic: Sequence[bool]) -> int | None:
    """Index of the first operand in `words` (a wrapper's arguments), or None
    when an option is not understood or only known at run time."""
    i = 0
    while i < len(words):
        if dynamic[i]:
            return None
        t = words[i]
        if t == "--":
            return i + 1
        if not t.startswith("-") or t == "-":
            return i
        if opts.numeric and re.fullmatch(r"-\d+", t):
            i += 1
            continue
        if t.startswith("--"):
            name = t[2:].split("=", 1)[0]
            if name in opts.long_arg:
                i += 1 if "=" in t else 2
            elif name in opts.long_flag:
                i += 1
            else:
                return None
            continue
        j = 1
        consumed_next = False
        while j < len(t):
            c = t[j]
            if c in opts.short_arg:
                consumed_next = j == len(t) - 1
                break
            if c in opts.short_optional:
                break
            if c not in opts.short_flag:
                return None
            j += 1
        i += 2 if consumed_next else 1
    return i


def option_value(words: Sequence[str], names: Sequence[str]) -> tuple[int, str] | None:
    """The first value given to one of the options `names` (`-c X`, `-cX`,
    `--command=X`, `--command X`, or a short cluster ending in the letter):
    its word index (of the value) and text."""
    shorts = {n[1] for n in names if len(n) == 2 and n[0] == "-"}
    longs = {n for n in names if n.startswith("--")}
    for i, t in enumerate(words):
        if t == "--":
            return None
        head, eq, value = t.partition("=")
        if head in longs:
            if eq:
                return i, value
            return (i + 1, words[i + 1]) if i + 1 < len(words) else None
        if t.startswith("-") and not t.startswith("--") and len(t) > 1:
            for k, c in enumerate(t[1:], 1):
                if c in shorts:
                    rest = t[k + 1 :]
                    if rest:
                        return i, rest
                    return (i + 1, words[i + 1]) if i + 1 < len(words) else None
    return None
