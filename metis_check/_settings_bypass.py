"""Bypass witnesses for a settings hierarchy (issue 25): for each Bash deny
rule, a concrete command line that runs the denied command and that, under
Claude Code's documented matching, an allow rule of the same hierarchy
admits while no deny or ask rule matches.

The search is a bounded enumeration of shell forms, not a solver: the denied
command (the rule's literal head, plus an argument for a prefix rule) put
through each form below, each form a documented way around prefix matching
(https://code.claude.com/docs/en/permissions, "Bash": runners such as `sh -c`,
`env` or `sudo` are not stripped, so `Bash(env:*)` allows `env rm x`; the
wrappers the docs list are the only ones stripped) and each a runner of
`metis_runtime/shell/runners.json`. The documented matcher is the reference
deriver's (`_derive_shell.rule_regex`), applied to the line's text: the line
has no operator outside its quotes, so Claude Code reads it as one command.
No witness found means none among these forms (the bound), not none at all.

Each candidate is confirmed before it is reported (`confirm`), through the
reference deriver's own entry points rather than the search's shortcut: a
plain scan finds no operator or substitution outside quotes; the deriver's
`derive` (which splits the line and strips the documented wrappers where it
can read it) finds no deny or ask rule; `bash_rule_matches` (also under the
basename of a `/path/cmd`) finds the allow matching the line and no deny or
ask; the deny rule does stop the command on its own, and the line holds it.
A candidate that fails any of these is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

from attrs import frozen

from metis_model._derive import Recorded
from metis_model._derive import RecordedRule
from metis_model._derive import derive
from metis_model._derive import parse_recorded_rule
from metis_model._derive_shell import Command
from metis_model._derive_shell import bash_rule_matches
from metis_model._derive_shell import rule_regex

__all__ = ["FORMS", "Witness", "bypass_witnesses", "confirm"]

# `{}` is the denied command. Each runs it: a shell's `-c`, runners Claude Code
# does not strip, `find -exec`, and interpreter one-liners.
FORMS: tuple[str, ...] = (
    "sh -c '{}'",
    "bash -c '{}'",
    "env {}",
    "sudo {}",
    "setsid {}",
    "flock /tmp/lock {}",
    "find . -maxdepth 0 -exec {} \\;",
    "xargs -0 {}",
    "python3 -c \"import os; os.system('{}')\"",
    "perl -e 'system(\"{}\")'",
    "node -e \"require('child_process').execSync('{}')\"",
)


@frozen
class Witness:
    deny: str  # the deny rule it gets around
    line: str  # the command line
    allow: str  # the allow rule that admits it
    form: str
    command: str  # the denied command it runs


def _command(spec: str) -> str | None:
    """A command the deny rule `Bash(spec)` stops: its literal head, with an
    argument when it is a prefix rule; None for other wildcards."""
    text = " ".join(spec.split())
    prefix = text.endswith((" *", ":*"))
    head = text[:-2].rstrip() if prefix else text
    if not head or any(c in head for c in "*'\"\\$`"):
        return None
    return f"{head} build" if prefix else head


def _matches(rule: RecordedRule, line: str) -> bool:
    if rule.spec is None:
        return True  # a bare `Bash` matches every line
    regex = rule_regex(rule.spec)
    return regex is not None and regex.fullmatch(" ".join(line.split())) is not None


def _parsed(rules: Sequence[tuple[str, str]], project: str) -> list[RecordedRule]:
    parsed = (
        parse_recorded_rule(
            {"behavior": b, "source": "project", "pattern": t, "recency": 0}, project
        )
        for b, t in rules
    )
    return [r for r in parsed if r is not None]


def bypass_witnesses(
    rules: Sequence[tuple[str, str]], project: str, home: str = "/root"
) -> list[Witness]:
    """Confirmed witnesses for `rules` ((behaviour, text) pairs of the whole hierarchy)."""
    bash = [r for r in _parsed(rules, project) if r.tool == "bash"]
    allows = [r for r in bash if r.ref.behavior.value == "allow"]
    stops = [r for r in bash if r.ref.behavior.value != "allow"]
    out: list[Witness] = []
    for deny in (r for r in stops if r.ref.behavior.value == "deny" and r.spec is not None):
        command = _command(deny.spec or "")
        if command is None:
            continue
        for form in FORMS:
            line = form.format(command)
            if any(_matches(s, line) for s in stops):
                continue
            allow = next((a for a in allows if _matches(a, line)), None)
            if allow is None:
                continue
            witness = Witness(deny.ref.pattern, line, allow.ref.pattern, form, command)
            if confirm(witness, rules, project, home) is None:
                out.append(witness)
                break  # one witness per deny rule
    return out


def _one_command(line: str) -> bool:
    """Whether the shell reads `line` as one simple command: no `;`, `&`, `|`,
    newline, `$(` or backtick outside quotes (single quotes hold everything
    literally; in double quotes a substitution still runs)."""
    quote, i = "", 0
    while i < len(line):
        c = line[i]
        if quote == "'":
            quote = "" if c == "'" else quote
        elif c == "\\":
            i += 1  # the next character is literal
        elif c == "`" or line.startswith("$(", i):
            return False
        elif quote == '"':
            quote = "" if c == '"' else quote
        elif c in "'\"":
            quote = c
        elif c in ";&|\n":
            return False
        i += 1
    return not quote


def confirm(
    witness: Witness, rules: Sequence[tuple[str, str]], project: str, home: str
) -> str | None:
    """None when the reference deriver confirms `witness` under `rules`, else why not."""
    parsed = [r for r in _parsed(rules, project) if r.tool == "bash"]
    words = Command(argv=tuple(witness.line.split()))

    def matches(rule: RecordedRule, command: Command) -> bool:
        return rule.spec is None or bash_rule_matches(rule.spec, command)

    if not _one_command(witness.line):
        return "Claude Code reads the line as more than one command"
    if witness.command not in witness.line:
        return "the line does not hold the denied command"

    def named(behavior: str, pattern: str) -> list[RecordedRule]:
        return [r for r in parsed if r.ref.behavior.value == behavior and r.ref.pattern == pattern]

    alone = Command(argv=tuple(witness.command.split()))
    if not any(matches(r, alone) for r in named("deny", witness.deny)):
        return f"{witness.deny} does not stop {witness.command!r} on its own"
    allow = [
        r for r in parsed if r.ref.behavior.value == "allow" and r.ref.pattern == witness.allow
    ]
    if not any(matches(r, words) for r in allow):
        return f"{witness.allow} does not admit the line"
    recorded = Recorded(
        workspace=project,
        home=home,
        roots=(project,),
        protected=(),
        auto=False,
        rules=tuple(parsed),
    )
    found = {r.pattern for r in derive(recorded, "bash", {"command": witness.line}, ()).rules}
    found |= {
        r.ref.pattern for r in parsed if r.ref.behavior.value != "allow" and matches(r, words)
    }
    if found:
        return f"{', '.join(sorted(found))} matches the line"
    return None
