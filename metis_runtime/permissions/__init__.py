"""The production permission gate.

Rules in Claude Code settings syntax, settings files, a policy ranking rule
sources, bypass-immune checks (protected paths, secrets), workspace scope,
per-sub-command shell checks, the staged order of `specs/permissions.md`,
and the routes by which asks are answered.
"""

from ._askers import Asker, AskRequest, CallbackAsker, JsonRpcAsker, TerminalAsker
from ._gate import MODES_BELOW, AskAnswer, Gate, GateDecision, Refusal, mode_at_most
from ._hierarchy import Loaded, SettingsFile, hierarchy, level_of, load_hierarchy
from ._paths import PROTECTED_DIRS, PROTECTED_FILES, SECRET_PATTERNS, is_protected, is_secret
from ._policy import (
    MODE_NAMES,
    Policy,
    Settings,
    load_settings,
    parse_mode,
    policy_from_files,
    settings_root,
)
from ._rules import Rule, RuleSpec, parse_rule
from ._staged import mode_fallback, staged_decision, strongest
from ._stricter import stricter_than_claude_code

__all__ = [
    "MODES_BELOW",
    "MODE_NAMES",
    "PROTECTED_DIRS",
    "PROTECTED_FILES",
    "SECRET_PATTERNS",
    "AskAnswer",
    "AskRequest",
    "Asker",
    "CallbackAsker",
    "Gate",
    "GateDecision",
    "JsonRpcAsker",
    "Loaded",
    "Policy",
    "Refusal",
    "Rule",
    "RuleSpec",
    "Settings",
    "SettingsFile",
    "TerminalAsker",
    "hierarchy",
    "is_protected",
    "is_secret",
    "level_of",
    "load_hierarchy",
    "load_settings",
    "mode_at_most",
    "mode_fallback",
    "parse_mode",
    "parse_rule",
    "policy_from_files",
    "settings_root",
    "staged_decision",
    "stricter_than_claude_code",
    "strongest",
]
