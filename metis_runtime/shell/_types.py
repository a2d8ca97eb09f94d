"""The values `analyze_command` returns."""

from __future__ import annotations

from collections.abc import Iterable

from attrs import field
from attrs import frozen


def _tuple_of_str(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(str(v) for v in value)


def _tuple_of_bool(value: Iterable[bool]) -> tuple[bool, ...]:
    return tuple(bool(v) for v in value)


def _wrappers(value: Iterable[Iterable[str]]) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(str(w) for w in item) for item in value)


def _expansions(value: Iterable[tuple[int, Expansion]]) -> tuple[tuple[int, Expansion], ...]:
    return tuple((int(i), e) for i, e in value)


def _commands(value: Iterable[SimpleCommand]) -> tuple[SimpleCommand, ...]:
    return tuple(value)


@frozen
class Expansion:
    """The words one shell word expands to, as far as the line shows them:
    after brace expansion, `~`/`$HOME` (kept as `~`: the gate expands it),
    variables assigned earlier on the line and word splitting. With
    `globbed`, each word is a pattern for pathname expansion (literal
    metacharacters escaped as `[*]`, `[?]`, `[[]`), left to the gate."""

    words: tuple[str, ...] = field(converter=_tuple_of_str)
    globbed: bool = False
    complete: bool = True  # False: it may also be what a variable held before the line


@frozen
class SimpleCommand:
    """One command the shell would run, after seeing through wrappers.

    `argv` is the effective command (`timeout 5 rm x` gives `("rm", "x")`);
    `text` is its source text. The extra fields (all defaulted) let a rule
    matcher stay conservative:

    - `dynamic[i]` is true when `argv[i]` is only known at run time (a
      parameter or command substitution, an unquoted glob or brace); a deny
      rule must assume such a word may be anything.
    - `open_ended` is true when more arguments are appended at run time
      (`xargs rm`).
    - `wrappers` are the wrapper invocations seen through, outermost first
      (`(("sudo",), ("timeout", "5"))`), so `Bash(sudo:*)` still matches.
    - `writes` / `reads` are redirection targets (`/dev/null` and fd
      duplications are left out).
    - `read_only` is this command's own verdict.
    - `container` marks `bash -c SCRIPT` / `eval ARGS`: what it runs is listed
      as the commands after it, so a checker may skip it when allowing (when
      the analysis is not opaque) but must still match deny rules against it.
    - `env` names the leading `VAR=value` assignments (`LANG=C make`); an
      allow rule sees past only the safe ones.
    - `opaque_writes`: some redirection target is only known at run time
      (`> $F`, `> {a,b}`, `> $(cmd)`): the write may go anywhere.
      `opaque_reads`: the same for an input redirection (`< $F`).
    - `subcommand`: for a program with global options before its subcommand
      (`git -C d push`), the words from the program name and subcommand on
      (`("git", "push")`), which rules are also matched against.
    - `exact_only`: only an exact allow rule approves it (`find -exec`,
      `-delete`; global options metis does not know: `npm --weird x`).
    - `unknown_options`: global options metis does not know come before the
      subcommand: deny and ask rules see every later word as a possible
      subcommand, and without an exact allow rule the gate asks.
    - `expansions`: for a run-time word whose values the line itself shows
      (brace expansion, `$HOME`, a variable assigned earlier on the line, a
      glob), `(index, Expansion)`; a run-time word with none is unknown.
    """

    argv: tuple[str, ...] = field(converter=_tuple_of_str)
    text: str
    dynamic: tuple[bool, ...] = field(default=(), converter=_tuple_of_bool)
    open_ended: bool = False
    wrappers: tuple[tuple[str, ...], ...] = field(default=(), converter=_wrappers)
    writes: tuple[str, ...] = field(default=(), converter=_tuple_of_str)
    reads: tuple[str, ...] = field(default=(), converter=_tuple_of_str)
    read_only: bool = False
    container: bool = False
    env: tuple[str, ...] = field(default=(), converter=_tuple_of_str)
    opaque_writes: bool = False
    subcommand: tuple[str, ...] = field(default=(), converter=_tuple_of_str)
    exact_only: bool = False
    unknown_options: bool = False
    opaque_reads: bool = False
    expansions: tuple[tuple[int, Expansion], ...] = field(default=(), converter=_expansions)

    def expansion(self, index: int) -> Expansion | None:
        """What `argv[index]` expands to: itself when static; None when only
        known at run time and the line does not show its values."""
        if not self.is_dynamic(index):
            return Expansion(words=(self.argv[index],), globbed=False)
        return next((e for i, e in self.expansions if i == index), None)

    def is_dynamic(self, index: int) -> bool:
        """Whether `argv[index]` is only known at run time."""
        return index < len(self.dynamic) and self.dynamic[index]


@frozen
class ShellAnalysis:
    """What a command line would run.

    `opaque` means the parser could not see everything the line may run (a
    parse error, `eval $VAR`, a variable as a command name, `source`, a
    function definition, ...): the listed `commands` are then a lower bound.
    `read_only` holds iff nothing is opaque and every command is read-only.
    """

    commands: tuple[SimpleCommand, ...] = field(converter=_commands)
    opaque: bool
    read_only: bool
    reasons: tuple[str, ...] = field(default=(), converter=_tuple_of_str)
