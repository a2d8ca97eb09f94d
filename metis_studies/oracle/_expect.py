"""Our own reading of which rules match a call (independent of the runtime's)."""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs

from metis_trace import RuleBehavior
from metis_trace import RuleRef

from ._cases import Call
from ._cases import RuleDraw
from ._shells import Occ
from ._shells import Shell
from ._world import DYN
from ._world import GROUP_OF_TOOL
from ._world import BashPattern


def _words_match(pattern: BashPattern, words: tuple[str, ...]) -> bool:
    """Whether a Bash rule matches a word sequence. A run-time word equals
    no literal word, but a trailing wildcard or prefix covers it."""
    if pattern.form == "any":
        return True
    if pattern.form == "wildcard":
        text = " ".join("\x00" if w == DYN else w for w in words)
        return re.fullmatch(pattern.regex, text, re.DOTALL) is not None
    n = len(pattern.tokens)
    if words[:n] != pattern.tokens:
        return False
    return pattern.form == "prefix" or len(words) == n


def bash_rule_may_match(pattern: BashPattern, occ: Occ) -> bool:
    """Deny/ask: the effective command, or under any suffix of its wrappers
    (`sudo` included)."""
    atom = occ.atom
    wrappers = [w.split() for w in occ.wrappers] + ([["sudo"]] if atom.privileged else [])
    forms = [atom.argv]
    for i in range(len(wrappers)):
        forms.append((*(w for wr in wrappers[i:] for w in wr), *atom.argv))
    return any(_words_match(pattern, f) for f in forms)


def bash_rule_allows(pattern: BashPattern, occ: Occ) -> bool:
    """Allow: the command with the wrappers Claude Code does not strip (a sudo
    command is allowed only by a rule that names sudo)."""
    atom = occ.atom
    words = (*occ.kept, *(("sudo",) if atom.privileged else ()), *atom.argv)
    return _words_match(pattern, words)


def rule_key(ref: RuleRef) -> tuple[str, str, str, int]:
    return (ref.behavior.value, ref.source.value, ref.pattern, ref.recency)


@attrs.frozen
class Placed:
    """A rule as added to the policy: its text and recency there."""

    draw: RuleDraw
    text: str
    recency: int

    def key(self) -> tuple[str, str, str, int]:
        return (self.draw.behavior.value, self.draw.source.value, self.text, self.recency)


_READ_TOOLS = frozenset({"read", "ls", "grep"})
_EDIT_TOOLS = frozenset({"write", "edit"})


def _applies(draw: RuleDraw, tool: str) -> bool:
    """Which tools a rule speaks for: Read rules for the read tools (a Read
    deny or ask on a path also for edits), Edit rules for the edit tools (an
    Edit allow on a path also for reads), Write rules for Write alone (and
    never as an allow)."""
    rule, allow = draw.rule, draw.behavior is RuleBehavior.ALLOW
    if rule.group == "read":
        return tool in _READ_TOOLS or (tool in _EDIT_TOOLS and rule.tag is not None and not allow)
    if rule.group == "edit":
        return tool in _EDIT_TOOLS or (tool in _READ_TOOLS and rule.tag is not None and allow)
    if rule.group == "write":
        return tool == "write" and not allow
    return rule.group == GROUP_OF_TOOL.get(tool)


def _file_expected(call: Call, placed: Iterable[Placed]) -> set[tuple[str, str, str, int]]:
    assert call.path is not None
    out: set[tuple[str, str, str, int]] = set()
    allows: set[tuple[str, str, str, int]] = set()
    for p in placed:
        if not _applies(p.draw, call.tool):
            continue
        tag = p.draw.rule.tag
        if p.draw.behavior is RuleBehavior.ALLOW:
            if tag is None or tag in call.path.allow_tags:
                allows.add(p.key())
        elif tag is None or tag in call.path.tags:
            out.add(p.key())
    return out | allows


def _shell_expected(shell: Shell, placed: Iterable[Placed]) -> set[tuple[str, str, str, int]]:
    placed = list(placed)
    out: set[tuple[str, str, str, int]] = set()
    bash = [p for p in placed if p.draw.rule.group == "bash"]
    files = [p for p in placed if p.draw.rule.group in ("read", "edit")]
    for p in bash:
        pattern = p.draw.rule.bash
        assert pattern is not None
        if p.draw.behavior is not RuleBehavior.ALLOW and any(
            bash_rule_may_match(pattern, o) for o in shell.occs
        ):
            out.add(p.key())
    # Read/Edit deny and ask rules on a file the line reads or writes (a Read
    # rule covers writes too); bare Read/Edit rules do not speak for Bash.
    for p in files:
        tag = p.draw.rule.tag
        if p.draw.behavior is RuleBehavior.ALLOW or tag is None:
            continue
        seen = set().union(*(o.atom.writes for o in shell.occs))
        if p.draw.rule.group == "read":
            seen |= set().union(*(o.atom.reads for o in shell.occs))
        if tag in seen:
            out.add(p.key())
    if any(o.atom.opaque for o in shell.occs):
        return out  # a line the parser cannot see through: no allow rule ever counts
    used: set[tuple[str, str, str, int]] = set()
    for o in shell.occs:
        hits = [
            p
            for p in bash
            if p.draw.behavior is RuleBehavior.ALLOW
            and p.draw.rule.bash is not None
            and bash_rule_allows(p.draw.rule.bash, o)
        ]
        if not hits and not (o.atom.read_only and not o.atom.out_of_scope):
            return out  # one command not allowed: no allow rule counts
        used.update(p.key() for p in hits)
    file_allows = [p for p in files if p.draw.behavior is RuleBehavior.ALLOW]
    for o in shell.occs:
        a = o.atom
        # A redirection target needs an Edit allow; outside the scope, every
        # write needs one and every read a Read or Edit allow.
        if a.redirect or (a.out_of_scope and a.has_write):
            hits = [
                p
                for p in file_allows
                if p.draw.rule.group == "edit"
                and (p.draw.rule.tag is None or p.draw.rule.tag in a.writes)
            ]
            if not hits:
                return out
            used.update(p.key() for p in hits)
        if a.out_of_scope and a.reads:
            hits = [p for p in file_allows if p.draw.rule.tag is None or p.draw.rule.tag in a.reads]
            if not hits:
                return out
            used.update(p.key() for p in hits)
    return out | used


def expected_rules(call: Call, placed: Iterable[Placed]) -> set[tuple[str, str, str, int]]:
    """The rules whose match the gate must record for `call` (module doc)."""
    if call.path is not None:
        return _file_expected(call, placed)
    assert call.shell is not None
    return _shell_expected(call.shell, placed)
