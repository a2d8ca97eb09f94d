"""Sub-agents with narrowed authority (specs/children.md).

- Definitions: Markdown + YAML front matter, metis's and Claude Code's, from
  `.metis/agents`, `.claude/agents`, the user folders, then the built-ins
  (`load_agents`); resolved against a parent (`resolve_agent`: tools, mode,
  provider settings, workspace) in the precedence front matter, parent,
  defaults.
- `AgentSupervisor`: one agent's children; `agent_tools(supervisor)` are `spawn_agent`,
  `list_agents`, `wait_agent`, `kill_agent`, `message_agent`, `integrate_agent`.
- Authority: `child_surface` (parent ∩ allowlists − denies, plan lock), the
  gate cloned with `Gate.clone_for_child`, PreToolUse hooks inherited by
  every descendant (`HookSpec`, `HookedGate`).
- The spawn guard (`SpawnLedger`, `decide`): depth, total, per-parent,
  concurrency, duplicate task, in that order; refusals are values.
- Workspaces: inherit, a git worktree from a snapshot (`branch`), a copy (`temp`);
  integration planned (`plan_integration`), then applied all or nothing.
- Processes: `python -m metis_runtime.agents._child CONFIG.json`, one process
  group each, sanitised environment, no orphans (`install_reaper`).
"""

from ._authority import AGENT_TOOL_NAMES
from ._authority import MODE_CHANGING_TOOLS
from ._authority import PLAN_LOCKED_REMOVED
from ._authority import SPAWNING_TOOLS
from ._authority import child_mode
from ._authority import child_surface
from ._claude import CLAUDE_FIELDS
from ._claude import CLAUDE_TOOLS
from ._claude import KEPT_FIELDS
from ._claude import ToolNames
from ._claude import alias_model
from ._claude import map_tools
from ._config import ChildConfig
from ._config import GateConfig
from ._config import ProviderConfig
from ._config import RuleConfig
from ._config import build_gate
from ._config import build_provider
from ._config import clone_gate_config
from ._config import gate_mode
from ._definitions import BUILTIN_DIR
from ._definitions import BUILTIN_ROLES
from ._definitions import CLAUDE_CONFIG_ENV
from ._definitions import USER_AGENTS_ENV
from ._definitions import AgentCatalog
from ._definitions import AgentDefinition
from ._definitions import AgentFolder
from ._definitions import DefinitionProblem
from ._definitions import agent_folders
from ._definitions import catalog_of
from ._definitions import claude_user_agents_dir
from ._definitions import load_agents
from ._definitions import parse_definition
from ._definitions import user_agents_dir
from ._guard import GuardAdmit
from ._guard import GuardCode
from ._guard import GuardLimits
from ._guard import GuardRefusal
from ._guard import GuardRequest
from ._guard import GuardSnapshot
from ._guard import SpawnLedger
from ._guard import decide
from ._guard import normalized_task
from ._guard import task_digest
from ._hooks import Hook
from ._hooks import HookedDecision
from ._hooks import HookedGate
from ._hooks import HookSpec
from ._hooks import HookVerdict
from ._hooks import header_hooks
from ._hooks import hook_rule
from ._hooks import load_hooks
from ._placement import WORKTREE_CHOICES
from ._placement import WorkspacePlan
from ._placement import WorkspaceRequest
from ._placement import check_branch_name
from ._placement import parse_worktree
from ._placement import plan_workspace
from ._process import TreeGuard
from ._process import guard_tree
from ._process import install_reaper
from ._process import kill_all_groups
from ._process import live_groups
from ._process import sanitized_env
from ._process import set_parent_death_signal
from ._process import tool_env
from ._records import AgentIdentity
from ._records import ChildRecord
from ._records import SpawnRefused
from ._records import new_tree
from ._resolve import ParentContext
from ._resolve import ResolvedAgent
from ._resolve import ResolveRefusal
from ._resolve import child_provider
from ._resolve import definition_mode
from ._resolve import resolve_agent
from ._runtime import ChildRuntime
from ._runtime import Inbox
from ._runtime import build_child
from ._runtime import run_child
from ._runtime import task_text
from ._supervisor import AgentSupervisor
from ._tools import IntegrateAgentTool
from ._tools import KillAgentTool
from ._tools import ListAgentsTool
from ._tools import MessageAgentTool
from ._tools import SpawnAgentTool
from ._tools import WaitAgentTool
from ._tools import agent_tools
from ._worktree import AgentWorkspace
from ._worktree import IntegrationPlan
from ._worktree import WorkspaceError
from ._worktree import WorkspaceKind
from ._worktree import WorkspaceManager
from ._worktree import apply_integration
from ._worktree import changed_files
from ._worktree import integrate
from ._worktree import make_workspace
from ._worktree import plan_integration
from ._worktree import remove_workspace
from ._worktree import snapshot_commit

__all__ = [
    "AGENT_TOOL_NAMES",
    "BUILTIN_DIR",
    "BUILTIN_ROLES",
    "CLAUDE_CONFIG_ENV",
    "CLAUDE_FIELDS",
    "CLAUDE_TOOLS",
    "KEPT_FIELDS",
    "MODE_CHANGING_TOOLS",
    "PLAN_LOCKED_REMOVED",
    "SPAWNING_TOOLS",
    "USER_AGENTS_ENV",
    "WORKTREE_CHOICES",
    "AgentCatalog",
    "AgentDefinition",
    "AgentFolder",
    "AgentIdentity",
    "AgentSupervisor",
    "AgentWorkspace",
    "ChildConfig",
    "ChildRecord",
    "ChildRuntime",
    "DefinitionProblem",
    "GateConfig",
    "GuardAdmit",
    "GuardCode",
    "GuardLimits",
    "GuardRefusal",
    "GuardRequest",
    "GuardSnapshot",
    "Hook",
    "HookSpec",
    "HookVerdict",
    "HookedDecision",
    "HookedGate",
    "Inbox",
    "IntegrateAgentTool",
    "IntegrationPlan",
    "KillAgentTool",
    "ListAgentsTool",
    "MessageAgentTool",
    "ParentContext",
    "ProviderConfig",
    "ResolveRefusal",
    "ResolvedAgent",
    "RuleConfig",
    "SpawnAgentTool",
    "SpawnLedger",
    "SpawnRefused",
    "ToolNames",
    "TreeGuard",
    "WaitAgentTool",
    "WorkspaceError",
    "WorkspaceKind",
    "WorkspaceManager",
    "WorkspacePlan",
    "WorkspaceRequest",
    "agent_folders",
    "agent_tools",
    "alias_model",
    "apply_integration",
    "build_child",
    "build_gate",
    "build_provider",
    "catalog_of",
    "changed_files",
    "check_branch_name",
    "child_mode",
    "child_provider",
    "child_surface",
    "claude_user_agents_dir",
    "clone_gate_config",
    "decide",
    "definition_mode",
    "gate_mode",
    "guard_tree",
    "header_hooks",
    "hook_rule",
    "install_reaper",
    "integrate",
    "kill_all_groups",
    "live_groups",
    "load_agents",
    "load_hooks",
    "make_workspace",
    "map_tools",
    "new_tree",
    "normalized_task",
    "parse_definition",
    "parse_worktree",
    "plan_integration",
    "plan_workspace",
    "remove_workspace",
    "resolve_agent",
    "run_child",
    "sanitized_env",
    "set_parent_death_signal",
    "snapshot_commit",
    "task_digest",
    "task_text",
    "tool_env",
    "user_agents_dir",
]
