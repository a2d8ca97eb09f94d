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
"""

from __future__ import annotations

from collections.abc import Sequence

from attrs import frozen

from metis_model._derive_record import RecordedRule, parse_recorded_rule
from metis_model._derive_shell import rule_regex

__all__ = ["FORMS", "Witness", "bypass_witnesses"]

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


def bypass_witnesses(rules: Sequence[tuple[str, str]], project: str) -> list[Witness]:
    """Witnesses for `rules` ((behaviour, text) pairs of the whole hierarchy)."""
    parsed = [
        parse_recorded_rule(
            {"behavior": b, "source": "project", "pattern": t, "recency": 0}, project
        )
        for b, t in rules
    ]
    bash = [r for r in parsed if r is not None and r.tool == "bash"]
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
            if allow is not None:
                out.append(Witness(deny.ref.pattern, line, allow.ref.pattern, form))
                break  # one witness per deny rule
    return out
