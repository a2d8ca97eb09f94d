"""Sub-agents with narrowed authority (specs/children.md).

- Definitions: Markdown + YAML front matter, from `.metis/agents`, the user
  folder, then the built-ins (`load_agents`).
- `AgentSupervisor`: one agent's children; its `tools()` are `spawn_agent`,
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

from ._authority import (
    MODE_CHANGING_TOOLS,
    PLAN_LOCKED_REMOVED,
    SPAWNING_TOOLS,
    child_mode,
    child_surface,
)
from ._config import (
    ChildConfig,
    GateConfig,
    ProviderConfig,
    RuleConfig,
    build_gate,
    build_provider,
    clone_gate_config,
    gate_mode,
)
from ._definitions import (
    BUILTIN_DIR,
    BUILTIN_ROLES,
    USER_AGENTS_ENV,
    AgentCatalog,
    AgentDefinition,
    DefinitionProblem,
    catalog_of,
    load_agents,
    parse_definition,
    user_agents_dir,
)
from ._guard import (
    GuardAdmit,
    GuardCode,
    GuardLimits,
    GuardRefusal,
    GuardRequest,
    GuardSnapshot,
    SpawnLedger,
    decide,
    normalized_task,
    task_digest,
)
from ._hooks import Hook, HookedGate, HookSpec, HookVerdict, hook_rule, load_hooks
from ._process import (
    TreeGuard,
    guard_tree,
    install_reaper,
    kill_all_groups,
    live_groups,
    sanitized_env,
    set_parent_death_signal,
    tool_env,
)
from ._runtime import ChildRuntime, Inbox, build_child, run_child, task_text
from ._supervisor import (
    AgentIdentity,
    AgentSupervisor,
    ChildRecord,
    SpawnRefused,
    new_tree,
)
from ._tools import (
    AGENT_TOOL_NAMES,
    IntegrateAgentTool,
    KillAgentTool,
    ListAgentsTool,
    MessageAgentTool,
    SpawnAgentTool,
    WaitAgentTool,
    agent_tools,
)
from ._worktree import (
    AgentWorkspace,
    IntegrationPlan,
    WorkspaceError,
    WorkspaceKind,
    WorkspaceManager,
    apply_integration,
    changed_files,
    integrate,
    make_workspace,
    plan_integration,
    remove_workspace,
    snapshot_commit,
)

__all__ = [
    "AGENT_TOOL_NAMES",
    "BUILTIN_DIR",
    "BUILTIN_ROLES",
    "MODE_CHANGING_TOOLS",
    "PLAN_LOCKED_REMOVED",
    "SPAWNING_TOOLS",
    "USER_AGENTS_ENV",
    "AgentCatalog",
    "AgentDefinition",
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
    "HookedGate",
    "Inbox",
    "IntegrateAgentTool",
    "IntegrationPlan",
    "KillAgentTool",
    "ListAgentsTool",
    "MessageAgentTool",
    "ProviderConfig",
    "RuleConfig",
    "SpawnAgentTool",
    "SpawnLedger",
    "SpawnRefused",
    "TreeGuard",
    "WaitAgentTool",
    "WorkspaceError",
    "WorkspaceKind",
    "WorkspaceManager",
    "agent_tools",
    "apply_integration",
    "build_child",
    "build_gate",
    "build_provider",
    "catalog_of",
    "changed_files",
    "child_mode",
    "child_surface",
    "clone_gate_config",
    "decide",
    "gate_mode",
    "guard_tree",
    "hook_rule",
    "install_reaper",
    "integrate",
    "kill_all_groups",
    "live_groups",
    "load_agents",
    "load_hooks",
    "make_workspace",
    "new_tree",
    "normalized_task",
    "parse_definition",
    "plan_integration",
    "remove_workspace",
    "run_child",
    "sanitized_env",
    "set_parent_death_signal",
    "snapshot_commit",
    "task_digest",
    "task_text",
    "tool_env",
    "user_agents_dir",
]
