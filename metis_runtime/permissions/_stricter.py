"""Where a decision is deliberately stricter than Claude Code's documented
behaviour (specs/permissions.md, the side-by-side table), said in one line
by `metis permissions check` and the Claude Code hook."""

from __future__ import annotations

from typing import TYPE_CHECKING

from metis_trace import Mode
from metis_trace import RuleBehavior
from metis_trace import Stage

from ._decision import GateDecision

if TYPE_CHECKING:
    from ._policy import Policy

_NEVER_CONSULTED = ("Write(", "Glob(", "MultiEdit(", "NotebookEdit(")
LOST_MARK = "(not read: "  # in the origin of the ask standing in for a lost rule


# Differences that are not one call's decision but how settings are read
# (specs/permissions.md, the side-by-side table; specs/mcp.md).
SETTINGS_DIFFERENCES: tuple[str, ...] = (
    "a rule metis cannot read: Claude Code skips it; metis drops a lost allow and stands an "
    "ask on the whole tool in for a lost deny or ask (`_salvage`)",
    "MCP approvals (enableAllProjectMcpServers, enabledMcpjsonServers, allowedMcpServers) "
    "in the project's own .claude/settings.json: Claude Code honours them after its trust "
    "dialog; metis, which does not model the dialog, never does (restrictions apply from "
    "every level)",
)


def stricter_than_claude_code(
    decision: GateDecision, *, auto: bool = False, policy: Policy | None = None
) -> list[str]:
    """The reasons this decision is stricter than Claude Code's, if any
    (`policy`, when given, names the rule that decided it)."""
    facts = decision.facts
    detail = decision.detail
    notes: list[str] = []
    if policy is not None and decision.rule is not None:
        origin = next((r.origin for r in policy.rules if r.recency == decision.rule.recency), "")
        if LOST_MARK in origin:
            notes.append(
                "Claude Code skips a rule it cannot read; metis stands an ask on its whole "
                f"tool in for a lost deny or ask ({origin})"
            )
    if auto:
        notes.append("auto mode runs as acceptEdits: what its classifier would allow is asked")
    if decision.stage is Stage.BYPASS_IMMUNE:
        if facts.mode is Mode.BYPASS and facts.protected:
            notes.append(
                "bypassPermissions allows protected paths in Claude Code (v2.1.126+); "
                "metis keeps them bypass-immune (PERM-3)"
            )
        if facts.secret:
            notes.append("Claude Code has no built-in secret list; metis asks for secret files")
        if "not fully analysable" in detail:
            notes.append(
                "a line the shell grammar cannot see through (interpreter one-liner, git "
                "alias or -c, eval of run-time text, ...) is never allowed"
            )
        if "writes to a path known only" in detail or "to a place known only" in detail:
            notes.append("a write to a path known only at run time is never allowed")
        if "git config writes" in detail:
            notes.append("a git config write asks (it can set hooks, pagers and aliases)")
        if "reads a file known only when it runs" in detail:
            notes.append(
                "a read known only at run time (a variable, $(...), a glob metis cannot "
                "expand) is never allowed past a Read deny or ask rule"
            )
        if "a program metis does not know" in detail:
            notes.append(
                "a program metis does not know whose later words are a command a deny or "
                "ask rule names is asked (no table lists every wrapper: "
                "anthropics/claude-code#92542)"
            )
        if "global options metis does not know" in detail:
            notes.append("global options metis does not know: only an exact rule allows the line")
        if "git -C/--git-dir aimed" in detail:
            notes.append(
                "git -C/--git-dir aimed at another directory asks unless an exact rule "
                "names it (that repository's hooks can run)"
            )
        if "folder too large to check" in detail:
            notes.append("a folder copied whole that is too large to walk asks under Read rules")
    for rule in facts.rules:
        if rule.behavior is not RuleBehavior.ALLOW and rule.pattern.startswith(_NEVER_CONSULTED):
            notes.append(
                f"Claude Code never consults {rule.pattern} (anthropics/claude-code#75315); "
                "metis applies a deny or ask to that tool"
            )
            break
    return notes
