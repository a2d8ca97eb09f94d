"""A run whose process died, assembled again from its journal (`--resume`):
`reopen_run` (the journal, whose lock refuses a resume while the run's
process lives, the trace, the recorded config checked), then, once a witness
(if any) watches, `assemble_resume`. A resumed run keeps its recorded limits,
budget, agent tools, settings, MCP sources and `--pass-env`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from metis_trace import Route

from .._errors import ConfigError
from .._errors import MetisRuntimeError
from .._journal import Journal
from .._journal import JournalState
from .._journal import TraceScan
from .._journal import scan_trace
from .._layout import tree_dir
from .._trace import TraceWriter
from ..agents import AgentSupervisor
from ..agents import new_tree
from ..agents._worktree import remove_stale_worktrees
from ._assembly import Assembly
from ._parts import make_registry
from ._parts import make_supervisor
from ._parts import recorded_budget
from ._parts import recorded_limits
from ._parts import recorded_mcp_sources
from ._parts import start_mcp_servers
from ._provider import check_provider_config
from ._provider import pass_env
from ._provider import root_provider
from ._settings import Say
from ._settings import journal_path
from ._settings import make_gate
from ._settings import read_settings


@attrs.frozen
class Reopened:
    """A run to resume: its journal (locked) and trace open, its config checked."""

    trace_path: Path
    journal: Journal
    state: JournalState
    trace: TraceWriter
    scan: TraceScan
    config: Mapping[str, Any]
    workspace: Path
    settings: tuple[str, ...]
    real: bool  # the settings hierarchy was read
    auto: bool
    provider_name: str


def reopen_run(trace_path: Path) -> Reopened:
    """The run of `trace_path`, unless it ended or its journal's config is
    unusable; its `--pass-env` applied, stale worktrees removed."""
    journal_file = journal_path(trace_path)
    try:
        # The journal first: its lock refuses a resume while the run's process lives.
        journal, state = Journal.open(journal_file)
        trace = TraceWriter(trace_path)
    except MetisRuntimeError as exc:
        raise ConfigError(str(exc)) from None
    scan = scan_trace(trace.events)
    if scan.phase == "ended":
        raise ConfigError(f"{trace_path}: the run already ended ({scan.status}); nothing to resume")
    cfg = state.config
    try:
        workspace = Path(str(cfg["workspace"]))
        if type(cfg["max_turns"]) is not int or cfg["max_turns"] < 1:  # strict: no "50", no true
            raise ValueError(f"max_turns {cfg['max_turns']!r} is not a positive integer")
        settings = tuple(str(s) for s in cfg.get("settings", ()))
        # Runs recorded before the hierarchy was read read only --settings.
        real, auto = cfg.get("settings_hierarchy", False), cfg.get("auto", False)
        if type(real) is not bool or type(auto) is not bool:
            raise ValueError("settings_hierarchy and auto must be true or false")
        provider_name = str(cfg["provider"])
        check_provider_config(cfg)
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"{journal_file}: the run entry lacks a usable config ({exc})") from None
    if not workspace.is_dir():
        raise ConfigError(f"{workspace}: the run's workspace is gone")
    pass_env(tuple(str(n) for n in cfg.get("pass_env", ())))
    remove_stale_worktrees(workspace)
    return Reopened(
        trace_path, journal, state, trace, scan, cfg, workspace, settings, real, auto, provider_name
    )


def assemble_resume(run: Reopened, warn: Say, info: Say) -> Assembly:
    """The resumed run's settings, gate, provider (past the answers it had),
    agent tree (the tree's ledger: its counts and task hashes carry over),
    MCP servers and registry, as the header and journal recorded them."""
    cfg, workspace, trace_path, header = run.config, run.workspace, run.trace_path, run.trace.header
    journal_file = journal_path(trace_path)
    # Runs recorded before sub-agents were wired have no agent tools: keep it so.
    agent_tools = str(cfg.get("agent_tools", "ask"))
    read = read_settings(run.settings, workspace, run.real, warn)
    headless = header.route is Route.HEADLESS
    gate = make_gate(
        header.mode, workspace, headless, read.policy, agent_tools, trace_path, run.auto
    )
    provider = root_provider(cfg, skip=len(run.scan.assistant_turns))
    tree = tree_dir(trace_path)
    budget = recorded_budget(cfg, journal_file)
    supervisor: AgentSupervisor | None = None
    spawns = "spawn_agent" in header.tools
    if spawns:
        limits = recorded_limits(cfg, journal_file)
        try:
            # The ledger is the tree's: its counts and task hashes carry over.
            identity, ledger = new_tree(tree, limits, root_run_id=header.root_run_id)
        except (OSError, MetisRuntimeError) as exc:
            raise ConfigError(f"{tree}: cannot open the agent tree: {exc}") from None
    mcp = None
    if "mcp" in header.meta:
        mcp = start_mcp_servers(workspace, recorded_mcp_sources(cfg), read, warn, info)
    if spawns:
        supervisor = make_supervisor(identity, ledger, workspace, gate, cfg, budget, warn, mcp)
    registry = make_registry(supervisor, workspace, warn, mcp)
    if supervisor is not None:
        supervisor.bind(registry.names, run.trace)
    return Assembly(
        header.run_id,
        run.provider_name,
        trace_path,
        tree,
        workspace,
        cfg,
        provider,
        registry,
        gate,
        run.trace,
        run.journal,
        budget,
        supervisor,
        mcp,
        resumed=(run.state, run.scan),
    )
