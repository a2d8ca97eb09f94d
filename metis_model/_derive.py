"""The reference fact-deriver: AUTH-4, "a decision's facts include those its
recorded settings give for the call".

PERM-1 checks that a decision follows from its facts; this checks the facts
themselves, from what the trace records and nothing the gate computed: the
header's `meta.permissions` (`_derive_record`) and the call's input. Written
from Claude Code's docs (https://code.claude.com/docs/en/permissions, "Read
and Edit", "Bash"; .../permission-modes, "Protected paths"; the snapshot in
`shared/reference/claude-code-permissions.md`) and specs/permissions.md
("Facts derived from the recorded settings": what is derived, and where it
says nothing); it shares no code with `metis_runtime`. One-sided: it derives
only what it is sure of; a file tool's path counts only where the decision's
footprint names it as written (no symlink or alias between name and file).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any

import attrs
from attrs import frozen

from metis_trace import Facts, RuleBehavior, RuleRef, ToolKind

from ._derive_domain import domain_rule_matches
from ._derive_record import (
    Recorded,
    RecordedRule,
    below,
    is_secret,
    lexical,
    path_rule_matches,
    protected_path,
    recorded_permissions,
)
from ._derive_shell import Command, bash_rule_matches, split_line
from ._derive_writes import surely_writes

__all__ = ["Derived", "Recorded", "derive", "facts_problem", "recorded_permissions"]

_READ_GROUP = frozenset({"read", "grep", "glob", "ls"})
_EDIT_GROUP = frozenset({"edit", "write"})
_FILE_TOOLS = _READ_GROUP | _EDIT_GROUP
_SEARCH_TOOLS = frozenset({"grep", "glob", "ls"})  # default path: the workspace
# A bare `Tool` rule covers these tools (docs: Read rules cover the tools
# that read files, Edit rules every tool that edits them; a bare Write its tool).
_BARE_GROUPS: Mapping[str, frozenset[str]] = {"read": _READ_GROUP, "edit": _EDIT_GROUP}
_DENYING = (RuleBehavior.DENY, RuleBehavior.ASK)
_GLOBS = frozenset("*?[]{}\\")


@frozen
class Derived:
    """The facts the deriver is sure of, for one call."""

    rules: frozenset[RuleRef] = frozenset()
    protected: bool = False
    secret: bool = False
    out_of_scope: bool = False
    writes: str | None = None  # why a Bash line may change a file: not read_only
    # Rules (any behaviour) that surely do not match the call: never its facts'.
    unmatched: frozenset[RuleRef] = frozenset()

    @property
    def empty(self) -> bool:
        sure = (self.rules, self.protected, self.secret, self.out_of_scope, self.writes)
        return not (any(sure) or self.unmatched)


# --- deriving -----------------------------------------------------------------


def _covers(rule: RecordedRule, tool: str) -> bool:
    """Whether a deny or ask rule's tool covers `tool` (path or bare form)."""
    if rule.spec is None:
        return tool in _BARE_GROUPS.get(rule.tool, frozenset({rule.tool}))
    if rule.tool == "read":
        return tool in _READ_GROUP or tool in _EDIT_GROUP  # a Read deny covers edits
    if rule.tool == "edit":
        return tool in _EDIT_GROUP
    return rule.tool in ("write", "glob") and tool == rule.tool


def derive(
    recorded: Recorded, tool: str, input: Mapping[str, Any], footprint: Collection[str]
) -> Derived:
    """The facts the recorded settings surely give for one call."""
    name = tool.lower()
    if name == "bash":
        return _derive_bash(recorded, input.get("command"))
    if name == "webfetch":
        return _derive_fetch(recorded, input.get("url"))
    if name not in _FILE_TOOLS:
        return Derived()
    rules = {
        r.ref
        for r in recorded.rules
        if r.spec is None and _covers(r, name) and (r.ref.behavior in _DENYING or not recorded.auto)
    }
    raw = input.get("path")
    if raw is None and name in _SEARCH_TOOLS:
        path: str | None = recorded.workspace
    else:
        path = lexical(raw, recorded.workspace, recorded.home) if isinstance(raw, str) else None
    if path is None or path not in footprint:
        return Derived(rules=frozenset(rules))
    rules |= {
        r.ref
        for r in recorded.rules
        if r.spec is not None
        and r.ref.behavior in _DENYING
        and _covers(r, name)
        and path_rule_matches(r, path, recorded)
    }
    return Derived(
        rules=frozenset(rules),
        protected=name in _EDIT_GROUP and protected_path(path, recorded),
        secret=is_secret(path),
        out_of_scope=not any(below(path, root) for root in recorded.roots),
    )


def _derive_fetch(recorded: Recorded, url: object) -> Derived:
    """Bare `WebFetch` denials and asks, and `domain:` rules by the docs'
    host matching: the deny and ask rules that surely match, and every rule
    that surely does not."""
    rules, unmatched = set(), set()
    for r in (r for r in recorded.rules if r.tool == "webfetch"):
        if r.spec is None:
            if r.ref.behavior in _DENYING:
                rules.add(r.ref)
            continue
        matches = domain_rule_matches(r.spec, url)
        if matches is True and r.ref.behavior in _DENYING:
            rules.add(r.ref)
        elif matches is False:
            unmatched.add(r.ref)
    return Derived(rules=frozenset(rules), unmatched=frozenset(unmatched))


def _file_args(command: Command) -> list[str] | None:
    """The files `cat`, `head` or `tail` reads, when its options are plain."""
    argv = command.argv
    if not argv or argv[0] not in ("cat", "head", "tail"):
        return []
    out: list[str] = []
    skip = False
    for word in argv[1:]:
        if skip:
            skip = False
        elif argv[0] != "cat" and word in ("-n", "-c"):
            skip = True
        elif argv[0] != "cat" and re.fullmatch(r"-[nc]?[0-9]+", word):
            continue
        elif word.startswith("-"):
            if argv[0] != "cat":
                return None  # an option of head or tail not read here
        else:
            out.append(word)
    return out


def _derive_bash(recorded: Recorded, command: object) -> Derived:
    derived = _bash_rules(recorded, command)
    writes = surely_writes(command) if isinstance(command, str) else None
    if writes is None:
        return derived
    rules, protected = set(derived.rules), derived.protected
    assert isinstance(command, str)
    # Each named target, as a plain line's `>` targets (not when the line may
    # change folder or expand a name).
    moves = re.search(r"\b(?:cd|pushd|popd)\b|[`$]", command)
    for name in writes.targets if moves is None else ():
        path = None if set(name) & _GLOBS else lexical(name, recorded.workspace, recorded.home)
        if path is not None:
            denials, at_protected = _written(recorded, path)
            rules |= denials
            protected = protected or at_protected
    return attrs.evolve(derived, rules=frozenset(rules), protected=protected, writes=writes.reason)


def _written(recorded: Recorded, path: str) -> tuple[set[RuleRef], bool]:
    """A Bash write target's facts: the Read and Edit denials over it, and
    whether it is protected."""
    denials = {
        r.ref
        for r in recorded.rules
        if r.spec is not None
        and r.ref.behavior in _DENYING
        and r.tool in ("read", "edit")
        and path_rule_matches(r, path, recorded)
    }
    return denials, protected_path(path, recorded)


def _bash_rules(recorded: Recorded, command: object) -> Derived:
    bash = [r for r in recorded.rules if r.tool == "bash" and r.ref.behavior in _DENYING]
    rules = {r.ref for r in bash if r.spec is None}
    commands = split_line(command) if isinstance(command, str) else None
    if commands is None:
        return Derived(rules=frozenset(rules))
    for cmd in commands:
        rules |= {r.ref for r in bash if r.spec is not None and bash_rule_matches(r.spec, cmd)}
    if any(c.argv[:1] and c.argv[0] in ("cd", "pushd", "popd") for c in commands):
        return Derived(rules=frozenset(rules))  # relative paths: from where?
    paths = [r for r in recorded.rules if r.spec is not None and r.ref.behavior in _DENYING]
    protected = False
    for cmd in commands:
        args = _file_args(cmd)
        reads = [lexical(a, recorded.workspace, recorded.home) for a in args or ()]
        writes = [lexical(w, recorded.workspace, recorded.home) for w in cmd.writes]
        for path in (p for p in reads if p is not None):
            rules |= {
                r.ref for r in paths if r.tool == "read" and path_rule_matches(r, path, recorded)
            }
        for path in (p for p in writes if p is not None):
            denials, at_protected = _written(recorded, path)
            rules |= denials
            protected = protected or at_protected
    return Derived(rules=frozenset(rules), protected=protected)


def facts_problem(
    recorded: Recorded,
    tool: str,
    input: Mapping[str, Any],
    facts: Facts,
    footprint: Collection[str],
    writes: Collection[str] | None = None,
) -> tuple[bool, str | None]:
    """AUTH-4 for one decision: (whether the deriver was sure of anything,
    the first fact the recorded facts lack, or None). `writes`, where the
    decision records its write footprint: not empty for a line that may
    write (a path-by-path comparison would need the symlinks the runtime
    resolved)."""
    derived = derive(recorded, tool, input, footprint)
    if derived.empty:
        return False, None
    missing = sorted(derived.rules - set(facts.rules), key=lambda r: r.recency)
    if missing:
        r = missing[0]
        return True, (
            f"the recorded settings give the {r.behavior.value} rule {r.pattern} "
            f"({r.source.value}, recency {r.recency}) for this {tool} call; its facts lack it"
        )
    wrong = sorted(derived.unmatched & set(facts.rules), key=lambda r: r.recency)
    if wrong:
        r = wrong[0]
        return True, (
            f"its facts hold the {r.behavior.value} rule {r.pattern}, which does not match"
            f" this {tool} call"
        )
    if derived.protected and not facts.protected:
        return True, f"this {tool} call changes a protected path; its facts say protected=false"
    if derived.secret and not facts.secret:
        return True, f"this {tool} call reads a secret-looking path; its facts say secret=false"
    if derived.out_of_scope and facts.in_scope:
        return True, f"this {tool} call's path is outside every root; its facts say in_scope=true"
    if derived.writes is not None and facts.kind is ToolKind.READ_ONLY:
        return True, f"this {tool} line may write ({derived.writes}); its facts say read_only"
    if derived.writes is not None and writes is not None and not writes:
        return True, f"this {tool} line may write ({derived.writes}); it records no write"
    return True, None
