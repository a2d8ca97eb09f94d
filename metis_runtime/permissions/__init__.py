"""The production permission gate.

Rules in Claude Code settings syntax, settings files, a policy ranking rule
sources, bypass-immune checks (protected paths, secrets), workspace scope,
per-sub-command shell checks, the staged order of `specs/permissions.md`,
and the routes by which asks are answered.
"""

import typing as _typing

from metis_trace._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from ._askers import Asker as Asker
    from ._askers import AskRequest as AskRequest
    from ._askers import CallbackAsker as CallbackAsker
    from ._askers import JsonRpcAsker as JsonRpcAsker
    from ._askers import TerminalAsker as TerminalAsker
    from ._decision import AskAnswer as AskAnswer
    from ._decision import GateDecision as GateDecision
    from ._gate import MODES_BELOW as MODES_BELOW
    from ._gate import Gate as Gate
    from ._gate import Refusal as Refusal
    from ._gate import mode_at_most as mode_at_most
    from ._hierarchy import Loaded as Loaded
    from ._hierarchy import SettingsFile as SettingsFile
    from ._hierarchy import hierarchy as hierarchy
    from ._hierarchy import level_of as level_of
    from ._hierarchy import load_hierarchy as load_hierarchy
    from ._hierarchy import named_files as named_files
    from ._hierarchy import run_files as run_files
    from ._paths import PROTECTED_DIRS as PROTECTED_DIRS
    from ._paths import PROTECTED_FILES as PROTECTED_FILES
    from ._paths import SECRET_PATTERNS as SECRET_PATTERNS
    from ._paths import is_protected as is_protected
    from ._paths import is_secret as is_secret
    from ._policy import MODE_NAMES as MODE_NAMES
    from ._policy import Policy as Policy
    from ._policy import Settings as Settings
    from ._policy import load_settings as load_settings
    from ._policy import parse_mode as parse_mode
    from ._policy import policy_from_files as policy_from_files
    from ._policy import settings_root as settings_root
    from ._rules import Rule as Rule
    from ._rules import RuleSpec as RuleSpec
    from ._rules import parse_rule as parse_rule
    from ._staged import mode_fallback as mode_fallback
    from ._staged import staged_decision as staged_decision
    from ._staged import strongest as strongest
    from ._stricter import stricter_than_claude_code as stricter_than_claude_code


# Exports load on first use (PEP 562): the hook and `metis permissions` need
# the gate, not the askers (asyncio) nor every module at once.
__getattr__, __dir__, __all__ = _lazy_exports(__name__, __file__)
