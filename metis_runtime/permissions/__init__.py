"""The production permission gate.

Rules in Claude Code settings syntax, settings files, a policy ranking rule
sources, bypass-immune checks (protected paths, secrets), workspace scope,
per-sub-command shell checks, the staged order of `specs/permissions.md`,
and the routes by which asks are answered.
"""

import typing as _typing

from metis_trace._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from ._askers import Asker
    from ._askers import AskRequest
    from ._askers import CallbackAsker
    from ._askers import JsonRpcAsker
    from ._askers import TerminalAsker
    from ._decision import AskAnswer
    from ._decision import GateDecision
    from ._gate import MODES_BELOW
    from ._gate import Gate
    from ._gate import Refusal
    from ._gate import mode_at_most
    from ._hierarchy import Loaded
    from ._hierarchy import SettingsFile
    from ._hierarchy import hierarchy
    from ._hierarchy import level_of
    from ._hierarchy import load_hierarchy
    from ._hierarchy import named_files
    from ._hierarchy import run_files
    from ._paths import PROTECTED_DIRS
    from ._paths import PROTECTED_FILES
    from ._paths import SECRET_PATTERNS
    from ._paths import is_protected
    from ._paths import is_secret
    from ._policy import MODE_NAMES
    from ._policy import Policy
    from ._policy import Settings
    from ._policy import load_settings
    from ._policy import parse_mode
    from ._policy import policy_from_files
    from ._policy import settings_root
    from ._rules import Rule
    from ._rules import RuleSpec
    from ._rules import parse_rule
    from ._staged import mode_fallback
    from ._staged import staged_decision
    from ._staged import strongest
    from ._stricter import stricter_than_claude_code


# Exports load on first use (PEP 562): the hook and `metis permissions` need
# the gate, not the askers (asyncio) nor every module at once.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "._askers": ("Asker", "AskRequest", "CallbackAsker", "JsonRpcAsker", "TerminalAsker"),
    "._decision": ("AskAnswer", "GateDecision"),
    "._gate": ("MODES_BELOW", "Gate", "Refusal", "mode_at_most"),
    "._hierarchy": (
        "Loaded",
        "SettingsFile",
        "hierarchy",
        "level_of",
        "load_hierarchy",
        "named_files",
        "run_files",
    ),
    "._paths": (
        "PROTECTED_DIRS",
        "PROTECTED_FILES",
        "SECRET_PATTERNS",
        "is_protected",
        "is_secret",
    ),
    "._policy": (
        "MODE_NAMES",
        "Policy",
        "Settings",
        "load_settings",
        "parse_mode",
        "policy_from_files",
        "settings_root",
    ),
    "._rules": ("Rule", "RuleSpec", "parse_rule"),
    "._staged": ("mode_fallback", "staged_decision", "strongest"),
    "._stricter": ("stricter_than_claude_code",),
}

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)


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
    "named_files",
    "parse_mode",
    "parse_rule",
    "policy_from_files",
    "run_files",
    "settings_root",
    "staged_decision",
    "stricter_than_claude_code",
    "strongest",
]
