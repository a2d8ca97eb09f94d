"""The parts of a run beside its provider and gate: the spawn guard's limits
and the context budget a run recorded, the agent supervisor, the tool
registry, the MCP servers, and the loop that drives them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from metis_trace import Decision

from .._errors import ConfigError
from .._errors import MetisRuntimeError
from .._journal import Journal
from .._loop import AgentLoop
from .._loop import LoopConfig
from .._loop import LoopObserver
from .._trace import TraceWriter
from ..agents import AgentIdentity
from ..agents import AgentSupervisor
from ..agents import GuardLimits
from ..agents import SpawnLedger
from ..agents import agent_tools
from ..agents import load_agents
from ..agents import sanitized_env
from ..agents import tool_env
from ..context import ContextBudget
from ..context import ContextController
from ..context import provider_summarizer
from ..dispatch import Dispatcher
from ..dispatch import FourClassDispatcher
from ..dispatch import SerialDispatcher
from ..mcp import Sources as McpSources
from ..mcp import Started
from ..permissions import Gate
from ..permissions import Loaded
from ..providers import Provider
from ..tools import JobManager
from ..tools import ToolContext
from ..tools import ToolRegistry
from ..tools._exits import EXITS
from ._provider import child_provider
from ._settings import Say


def recorded_limits(config: Mapping[str, Any], where: Path) -> GuardLimits:
    """The spawn guard's limits the run's config records."""
    try:
        return GuardLimits(**dict(config.get("guard") or {}))
    except (TypeError, MetisRuntimeError) as exc:
        raise ConfigError(f"{where}: the run's guard limits are unusable: {exc}") from None


def recorded_budget(config: Mapping[str, Any], where: Path) -> ContextBudget:
    """The context budget the run's config records (none: the default)."""
    context = dict(config.get("context") or {})
    try:
        if not context:
            return ContextBudget()
        return ContextBudget.for_window(int(context["window"]), recent=int(context["recent"]))
    except (KeyError, TypeError, ValueError, MetisRuntimeError) as exc:
        raise ConfigError(f"{where}: the run's context budget is unusable: {exc}") from None


def make_supervisor(
    identity: AgentIdentity,
    ledger: SpawnLedger,
    workspace: Path,
    gate: Gate,
    config: Mapping[str, Any],
    budget: ContextBudget,
    warn: Say,
    mcp: Started | None = None,
) -> AgentSupervisor:
    """The root's supervisor of children; a definition that cannot be loaded is a warning."""
    catalog = load_agents(workspace)
    for problem in catalog.problems:
        warn(f"{problem}")
    return AgentSupervisor(
        identity,
        workspace=workspace,
        gate=gate,
        visible_tools=(),
        catalog=catalog,
        provider=child_provider(config),
        ledger=ledger,
        headless_default=Decision.DENY,
        context_budget=attrs.asdict(budget),
        max_turns=int(config["max_turns"]),
        env=sanitized_env(),  # the children's providers need the credentials; their tools do not
        **(mcp.for_children() if mcp is not None else {}),
    )


def make_registry(
    supervisor: AgentSupervisor | None, workspace: Path, warn: Say, mcp: Started | None = None
) -> ToolRegistry:
    """The built-ins, plugins and the workspace's signed executor manifests
    (`.metis/executors/`: the plan path's catalog and the agent share one
    registry), the MCP servers' tools; a refused manifest is a warning."""
    from ..plan import catalog_for

    catalog = catalog_for(workspace, ToolRegistry.load())
    loaded = catalog.registry
    for problem in (*loaded.plugin_errors, *catalog.problems):
        warn(f"{problem}")
    extra = [
        *(mcp.tools if mcp is not None else ()),
        *(agent_tools(supervisor) if supervisor else ()),
    ]
    if not extra:
        return loaded
    try:
        return ToolRegistry([*loaded, *extra], loaded.plugin_errors)
    except MetisRuntimeError as exc:
        if mcp is not None:
            mcp.host.close()
        raise ConfigError(str(exc)) from None


def start_mcp_servers(
    workspace: Path, sources: McpSources, read: Loaded, warn: Say, info: Say
) -> Started | None:
    """Start the run's MCP servers (none configured: None), under the server
    policy of the settings hierarchy `read` (the gate's). A bad source or a
    server that does not start is a ConfigError."""
    from ..mcp import read_setup
    from ..mcp import start_mcp

    started: Started
    try:
        setup, declared = read_setup(workspace, sources, read.mcp_levels())
        for note in setup.notes:
            warn(note)
        if not setup.servers:
            return None
        info(f"starting mcp server(s): {', '.join(s.describe() for s in setup.servers)}")
        started = start_mcp(setup.servers, workspace, declared)
    except MetisRuntimeError as exc:
        raise ConfigError(str(exc)) from None
    for note in started.notes:
        warn(note)
    return started


def recorded_mcp_sources(config: Mapping[str, Any]) -> McpSources:
    """The MCP sources a run recorded (runs from before MCP have none)."""
    raw = config.get("mcp") or {}
    settings = tuple(str(s) for s in config.get("settings", ()))
    return McpSources(
        tuple(str(c) for c in raw.get("configs", ())), settings, bool(raw.get("strict", False))
    )


def recorded_call_timeout(config: Mapping[str, Any]) -> float | None:
    """The run's per-call limit (a resumed run keeps its recorded one)."""
    value = config.get("call_timeout")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(
            f"the run's call_timeout {value!r} is unusable: it must be a positive number"
        )
    return float(value)


def dispatcher(serial: bool) -> Dispatcher:
    """`--serial`: one call at a time; else the four-class dispatcher."""
    return SerialDispatcher() if serial else FourClassDispatcher()


def make_loop(
    provider: Provider,
    registry: ToolRegistry,
    gate: Gate,
    workspace: Path,
    trace: TraceWriter,
    journal: Journal,
    *,
    config: Mapping[str, Any],
    budget: ContextBudget,
    tree: Path,
    serial: bool,
    observer: LoopObserver,
) -> AgentLoop:
    """The run's loop: its tools' context, dispatcher, limits and context control."""
    live = config["provider"] != "replay"  # a replayed run has no answers to spare for summaries
    detach = config.get("detach_jobs", False)  # runs from before the option have none
    if type(detach) is not bool:
        raise ConfigError(f"the run's detach_jobs {detach!r} is unusable: it must be true or false")
    controller = ContextController(
        budget,
        summarizer=provider_summarizer(provider) if live else None,
        offload_dir=tree / "offload",
    )
    return AgentLoop(
        provider,
        registry,
        gate,
        ToolContext(workspace, tool_env(), JobManager(), exit_dir=tree / EXITS, detach_jobs=detach),
        trace,
        journal=journal,
        dispatcher=dispatcher(serial),
        observer=observer,
        config=LoopConfig(
            max_turns=int(config["max_turns"]),
            call_timeout=recorded_call_timeout(config),
            detach_jobs=detach,
        ),
        context_hook=controller.hook(trace),
        overflow_hook=controller.retry_hook(trace),
    )
