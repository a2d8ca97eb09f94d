"""A static reading of a settings hierarchy (issue 25, `metis settings check`),
with the reference deriver's matcher of Claude Code's documented semantics
(`_derive`, `_derive_shell`): not metis's stricter gate.

Findings, each naming the file and the rule (`FILE: permissions.LIST[i]`):

- `duplicate`: the same rule in the same list twice, anywhere in the hierarchy;
- `shadowed`: an allow every call of which a deny or ask rule covers, or an
  ask a deny covers (proved for the forms read here: a bare rule over the
  same tools, a Bash prefix rule over a literal head, a path rule over a
  literal path; anything else is not claimed);
- `never-matches`: an allow Claude Code never consults (`Write(path)`,
  `Glob(path)`, `MultiEdit(path)`, `NotebookEdit(path)`, anthropics/
  claude-code#75315; a tool-name glob not after `mcp__server__`), or a
  malformed rule (Claude Code skips it with a warning);
- `scope`: an `additionalDirectories` entry outside the project, an allow that
  names a protected path.

Bypass witnesses (issue 25's second kind of finding) are not searched here.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from attrs import frozen

from metis_model._derive import Recorded
from metis_model._derive import RecordedRule
from metis_model._derive import parse_recorded_rule
from metis_model._derive import path_rule_matches
from metis_model._derive import protected_path
from metis_model._derive_shell import rule_regex

__all__ = ["Finding", "SettingsSource", "check_settings"]

_LISTS = ("allow", "ask", "deny")
_NEVER_MSG = "Claude Code never consults an allow of this form (anthropics/claude-code#75315)"
_NEVER_CONSULTED = frozenset({"write", "glob", "multiedit", "notebookedit"})
_MALFORMED = re.compile(r"(?:[A-Za-z][A-Za-z0-9_-]*|mcp__[A-Za-z0-9_*-]+|\*)(?:\(.+\))?", re.DOTALL)


@frozen
class SettingsSource:
    """One settings file as read: its path, the root `/x` rules anchor at,
    its model source, its permission lists and additional directories."""

    path: str
    root: str
    source: str
    lists: dict[str, tuple[str, ...]]
    directories: tuple[str, ...] = ()


@frozen
class Finding:
    kind: str  # duplicate | shadowed | never-matches | scope
    file: str
    where: str  # permissions.allow[2]
    rule: str
    message: str

    def line(self) -> str:
        return f"{self.file}: {self.where}: {self.rule}: {self.kind}: {self.message}"


@frozen
class _Placed:
    rule: RecordedRule
    file: str
    where: str


def _head(spec: str) -> tuple[str, bool] | None:
    """A Bash spec's literal head and whether it is a prefix rule (trailing
    ` *` or `:*`); None when it holds another wildcard."""
    text = " ".join(spec.split())
    prefix = text.endswith((" *", ":*"))
    if prefix:
        text = text[:-2].rstrip()
    return None if "*" in text else (text, prefix)


def _covers(big: _Placed, small: _Placed, recorded: Recorded) -> bool:
    """Whether every call `small` matches, `big` matches too (for the forms
    this reads; False when not sure)."""
    b, s = big.rule, small.rule
    if b.tool != s.tool:
        return False
    if b.spec is None:
        return True  # a bare rule covers every use of its tool
    if s.spec is None:
        return False
    if b.tool == "bash":
        small_head, regex = _head(s.spec), rule_regex(b.spec)
        if small_head is None or regex is None:
            return False
        text, prefix = small_head
        big_head = _head(b.spec)
        if prefix:  # the small one matches `text` and `text ...`: big must be a wider prefix
            return (
                big_head is not None
                and big_head[1]
                and (text == big_head[0] or text.startswith(big_head[0] + " "))
            )
        return regex.fullmatch(text) is not None
    if any(c in s.spec for c in "*?["):
        return s.spec == b.spec and s.base == b.base
    literal = _anchored(s, recorded)
    return literal is not None and path_rule_matches(b, literal, recorded)


def _anchored(rule: RecordedRule, recorded: Recorded) -> str | None:
    """The absolute path a literal path rule names (its anchoring form)."""
    spec = rule.spec or ""
    if spec.startswith("//"):
        return posixpath.normpath("/" + spec.lstrip("/"))
    if spec.startswith("~/"):
        return posixpath.normpath(recorded.home + spec[1:])
    if spec.startswith("/"):
        return posixpath.normpath(rule.base + spec)
    if "/" not in spec.rstrip("/"):
        return None  # a bare name matches at any depth: no one path
    return posixpath.normpath(recorded.workspace + "/" + spec)


def _never_matches(rule: RecordedRule) -> str | None:
    """Why Claude Code never matches an allow rule of this form, or None."""
    if rule.spec is not None and rule.tool in _NEVER_CONSULTED:
        return _NEVER_MSG
    if "*" in rule.tool:
        return "a tool-name glob in allow: Claude Code skips it"
    return None


def check_settings(sources: Sequence[SettingsSource], project: str, home: str) -> list[Finding]:
    """The findings of a hierarchy, sources lowest authority first."""
    placed: list[_Placed] = []
    out: list[Finding] = []
    seen: dict[tuple[str, str], _Placed] = {}
    for src in sources:
        for name in _LISTS:
            for i, text in enumerate(src.lists.get(name, ())):
                where = f"permissions.{name}[{i}]"
                if not isinstance(text, str) or not _MALFORMED.fullmatch(text.strip()):
                    out.append(
                        Finding(
                            "never-matches",
                            src.path,
                            where,
                            str(text),
                            "malformed: Claude Code skips it",
                        )
                    )
                    continue
                item = {
                    "behavior": name,
                    "source": src.source,
                    "pattern": text.strip(),
                    "recency": 0,
                    "base": src.root,
                }
                rule = parse_recorded_rule(item, project)
                if rule is None:
                    continue
                p = _Placed(rule, src.path, where)
                key = (name, text.strip())
                if key in seen:
                    first = seen[key]
                    out.append(
                        Finding(
                            "duplicate",
                            src.path,
                            where,
                            text,
                            f"also at {first.file}: {first.where}",
                        )
                    )
                    continue
                seen[key] = p
                placed.append(p)
                never = _never_matches(rule) if name == "allow" else None
                if never is not None:
                    out.append(Finding("never-matches", src.path, where, text, never))
        for d in src.directories:
            full = posixpath.normpath(d if d.startswith("/") else src.root + "/" + d)
            if not (full == project or full.startswith(project.rstrip("/") + "/")):
                out.append(
                    Finding(
                        "scope",
                        src.path,
                        "permissions.additionalDirectories",
                        d,
                        "outside the project: the agent may read and edit there",
                    )
                )
    recorded = Recorded(
        workspace=project, home=home, roots=(project,), protected=(), auto=False, rules=()
    )
    for p in placed:
        behavior = p.rule.ref.behavior.value
        stronger = (
            ("deny", "ask") if behavior == "allow" else ("deny",) if behavior == "ask" else ()
        )
        for q in sorted(placed, key=lambda q: q.rule.ref.behavior.value != "deny"):
            if q is not p and q.rule.ref.behavior.value in stronger and _covers(q, p, recorded):
                out.append(
                    Finding(
                        "shadowed",
                        p.file,
                        p.where,
                        p.rule.ref.pattern,
                        f"never takes effect: {q.rule.ref.behavior.value} {q.rule.ref.pattern} "
                        f"({q.file}: {q.where}) covers every call it matches (proved: this form)",
                    )
                )
                break
        if behavior == "allow" and p.rule.tool in ("edit", "write") and p.rule.spec:
            literal = _anchored(p.rule, recorded)
            if literal is not None and protected_path(literal.replace("/**", ""), recorded):
                out.append(
                    Finding(
                        "scope",
                        p.file,
                        p.where,
                        p.rule.ref.pattern,
                        "names a protected path: the gate still asks (bypass-immune)",
                    )
                )
    return out
