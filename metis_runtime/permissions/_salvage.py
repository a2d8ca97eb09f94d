"""A settings file's rule lists read as Claude Code reads them: a rule that
cannot be read is skipped with a warning, and the rest of the file applies
(https://code.claude.com/docs/en/managed-settings: "a malformed rule in a
user, project or local file is skipped with a warning; invalid JSON rejects
the whole file"; /work/shared/reference/claude-code-permissions.md 1.1).

Skipping is where metis parts from Claude Code, because a skipped `deny` or
`ask` would open what its author meant to close. So:

- a lost `allow` is dropped (nothing opens);
- a lost `deny` or `ask` becomes an **ask on its whole tool** when the tool
  name can be read (`Bash(rm -rf` asks for every Bash call,
  `WebFetch(domain:169.254.169.254/**)` for every fetch);
- one whose tool cannot be read (`9tool`, a number, an object) becomes an
  ask on every tool (`*`): metis cannot tell what it closed, so nothing runs
  without a person (or, headless, runs at all). The exceptions are an empty
  string and a comment (`// ...`, `# ...`), which close nothing: dropped;
- a rule list that is not a list, or an unknown key of `permissions` that
  holds rules (a misspelt `deny`), is lost the same way, entry by entry.

Every loss is one warning naming the file, the list, the index and the text,
and what was done instead (`metis permissions check` prints them as notes).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path

from attrs import frozen

from metis_trace import RuleBehavior

from ._rules import RuleSyntaxError
from ._rules import parse_rule

__all__ = ["EVERY_TOOL", "LostRule", "fallback_for", "read_rule_list", "unknown_key_rules"]

EVERY_TOOL = "*"
_TOOL_NAME = re.compile(r"\s*([A-Za-z*][A-Za-z0-9_*-]*)(?=[\s(]|$)")


@frozen
class LostRule:
    """A rule metis could not read, where it was written and what replaced it
    (`fallback`: the ask rule added in its place; None: dropped)."""

    path: Path
    where: str  # `permissions.deny[3]`
    text: str  # the entry as written (JSON for a non-string)
    reason: str
    fallback: str | None

    def warning(self) -> str:
        if self.fallback is None:
            outcome = "dropped"
        elif self.fallback == EVERY_TOOL:
            outcome = "every call of every tool asks instead (its tool cannot be read)"
        else:
            outcome = f"every {self.fallback} call asks instead"
        return f"{self.path}: {self.where}: rule {self.text} not read ({self.reason}); {outcome}"


def _shown(value: object) -> str:
    """The entry for a one-line message (a non-string as its JSON, bounded)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return repr(text if len(text) <= 200 else text[:200] + "...")


def fallback_for(value: object, behavior: RuleBehavior | None) -> str | None:
    """The ask that stands in for an unreadable rule (None: drop it).

    `behavior` None is a list metis does not know (it may have been a deny)."""
    if behavior is RuleBehavior.ALLOW:
        return None
    if isinstance(value, str):
        stripped = value.strip()
        if not stripped or stripped.startswith(("//", "#")):
            return None  # a comment or nothing: it closed nothing
        m = _TOOL_NAME.match(stripped)
        if m is not None:
            tool = m.group(1)
            try:
                parse_rule(tool, RuleBehavior.ASK)
            except RuleSyntaxError:
                return EVERY_TOOL
            return tool
    return EVERY_TOOL


def read_rule_list(
    value: object, path: Path, where: str, behavior: RuleBehavior | None
) -> tuple[tuple[str, ...], tuple[LostRule, ...]]:
    """The readable rules of one list and the lost ones (see module doc).

    `behavior` None reads an unknown key: every entry is lost."""
    if value is None:
        return (), ()
    items: list[object]
    if isinstance(value, list):
        items = list(value)
        place = [f"{where}[{i}]" for i in range(len(items))]
    else:
        items, place = [value], [where]
        if behavior is not None:
            lost = LostRule(path, where, _shown(value), "not a list", fallback_for(value, behavior))
            return (), (lost,)
    kept: list[str] = []
    lost_rules: list[LostRule] = []
    for item, at in zip(items, place, strict=True):
        if behavior is None:
            reason = "not in an allow, ask or deny list"
        elif not isinstance(item, str):
            reason = f"a rule must be a string, not {type(item).__name__}"
        else:
            try:
                parse_rule(item, behavior)
            except RuleSyntaxError as exc:
                reason = str(exc)
            else:
                kept.append(item)
                continue
        lost_rules.append(LostRule(path, at, _shown(item), reason, fallback_for(item, behavior)))
    return tuple(kept), tuple(lost_rules)


def unknown_key_rules(
    perms: Mapping[str, object], known: frozenset[str], path: Path
) -> tuple[tuple[str, ...], tuple[LostRule, ...]]:
    """Warnings for unknown keys of `permissions`; one holding a list is read
    as lost rules of an unknown list (a misspelt `deny` fails closed)."""
    notes: list[str] = []
    lost: list[LostRule] = []
    for key in sorted(str(k) for k in perms if k not in known):
        value = perms[key]
        where = f"permissions.{key}"
        if isinstance(value, list) and value:
            lost.extend(read_rule_list(value, path, where, None)[1])
        else:
            notes.append(f"{path}: {where}: unknown key, ignored")
    return tuple(notes), tuple(lost)
