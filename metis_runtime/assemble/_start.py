"""A new run assembled from what `metis run` was given, in the order the
command needs: after `prepare_run` (`_scenario`), `place_run` (the trace,
journal and agent tree, none of them another run's), then, once a witness
(if any) watches, `assemble_run` from the `Request` (settings, gate,
provider, MCP servers, agent tree, registry, trace header, journal)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from metis_trace import Decision

from .._errors import ConfigError
from .._errors import MetisRuntimeError
from .._journal import Journal
from .._layout import tree_dir
from .._loop import make_header
from .._trace import TraceWriter
from ..agents import GuardLimits
from ..agents import new_tree
from ..context import ContextBudget
from ..mcp import Sources as McpSources
from ..mcp import header_meta
from ._assembly import Assembly
from ._parts import make_registry
from ._parts import make_supervisor
from ._parts import start_mcp_servers
from ._provider import root_provider
from ._scenario import STDIN
from ._scenario import Prepared
from ._scenario import keep_stdin_scenario
from ._settings import Say
from ._settings import journal_path
from ._settings import make_gate
from ._settings import read_settings
from ._settings import run_mode
from ._settings import settings_meta


@attrs.frozen
class Request:
    """The options of a new run, parsed and checked (the task, scenario,
    workspace and trace are `prepare_run`'s and `place_run`'s)."""

    provider: str
    model: str | None
    mode: str | None
    headless: bool
    max_turns: int
    call_timeout: float | None
    detach_jobs: bool
    max_retries: int
    settings: tuple[str, ...]
    settings_hierarchy: bool
    ask_agent_tools: bool
    pass_env: tuple[str, ...]
    mcp_configs: tuple[str, ...]
    strict_mcp_config: bool
    limits: GuardLimits
    budget: ContextBudget
    wire: Mapping[str, Any]


@attrs.frozen
class Placed:
    """Where the run's files go: its run id, trace and agent tree."""

    prepared: Prepared
    run_id: str
    trace_path: Path
    tree: Path
    scenario_path: str  # a scenario read from stdin: the copy kept in the tree


def place_run(prepared: Prepared, trace_arg: str | None, run_id: str) -> Placed:
    """The run's trace (`--trace`, else `.metis/runs/<run id>/trace.jsonl`),
    refused when it, its journal or its agent tree is another run's."""
    raw = trace_arg
    trace_path = (
        Path(raw) if raw else prepared.workspace / ".metis" / "runs" / run_id / "trace.jsonl"
    )
    for p in (trace_path, journal_path(trace_path)):
        if p.exists() and p.stat().st_size > 0:
            raise ConfigError(
                f"{p}: already exists (use --resume to continue that run, or another --trace)"
            )
    tree = tree_dir(trace_path)
    if (tree / "guard.json").exists():
        raise ConfigError(
            f"{tree}: holds another run's agent tree (guard.json); use another --trace"
        )
    scenario_path = prepared.scenario_path
    if prepared.scenario is not None and os.fspath(prepared.scenario.path) == STDIN:
        scenario_path = str(keep_stdin_scenario(prepared.scenario_text, tree))
    return Placed(prepared, run_id, trace_path, tree, scenario_path)


def assemble_run(request: Request, placed: Placed, warn: Say, info: Say) -> Assembly:
    """Everything of the run before its loop: settings (a lost rule: `warn`),
    gate, the config its journal records, provider, MCP servers (`info`
    names them), agent tree, registry, the trace with its header, the journal."""
    prepared, run_id, trace_path, tree = (
        placed.prepared,
        placed.run_id,
        placed.trace_path,
        placed.tree,
    )
    workspace, task = prepared.workspace, prepared.task
    agent_tools = "ask" if request.ask_agent_tools else "allow"
    read = read_settings(request.settings, workspace, request.settings_hierarchy, warn)
    chosen, auto = run_mode(request.mode, read)
    gate = make_gate(
        chosen, workspace, request.headless, read.policy, agent_tools, trace_path, auto
    )
    mcp_sources = McpSources(request.mcp_configs, request.settings, request.strict_mcp_config)
    config = {
        "task": task,
        "provider": request.provider,
        "model": request.model,
        "scenario": placed.scenario_path,
        "agent_scenarios": prepared.extras.agents,
        "workspace": str(workspace),
        "max_turns": request.max_turns,
        "call_timeout": request.call_timeout,
        "detach_jobs": request.detach_jobs,
        "max_retries": request.max_retries,
        "settings": list(request.settings),
        "settings_hierarchy": request.settings_hierarchy,
        "auto": auto,
        "agent_tools": agent_tools,
        "pass_env": list(request.pass_env),
        "mcp": mcp_sources.to_json(),
        "guard": request.limits.to_json(),
        "context": {"window": request.budget.window, "recent": request.budget.recent},
        **request.wire,
    }
    provider = root_provider(config)
    # Before anything of the run is written.
    mcp = start_mcp_servers(workspace, mcp_sources, read, warn, info)
    try:
        identity, ledger = new_tree(tree, request.limits, root_run_id=run_id)
    except (OSError, MetisRuntimeError) as exc:
        if mcp is not None:
            mcp.host.close()
        raise ConfigError(f"{tree}: cannot make the agent tree: {exc}") from None
    supervisor = make_supervisor(
        identity, ledger, workspace, gate, config, request.budget, warn, mcp
    )
    registry = make_registry(supervisor, workspace, warn, mcp)
    header = make_header(
        mode=chosen,
        tools=registry.names(),
        route=gate.route,
        headless_default=Decision.DENY,
        run_id=run_id,
        hooks=supervisor.header_hooks(),
        meta={
            "task": task,
            "provider": request.provider,
            "workspace": str(workspace),
            **settings_meta(read, request.settings_hierarchy),
            **({"auto_mode": True} if auto else {}),
            **supervisor.header_meta(),
            **({"mcp": header_meta(mcp)} if mcp is not None else {}),
        },
    )
    try:
        trace = TraceWriter(trace_path, header)
        journal = Journal.create(journal_path(trace_path), run_id, config)
    except MetisRuntimeError as exc:
        if mcp is not None:
            mcp.host.close()
        raise ConfigError(str(exc)) from None
    supervisor.bind(registry.names, trace)
    return Assembly(
        run_id,
        request.provider,
        trace_path,
        tree,
        workspace,
        config,
        provider,
        registry,
        gate,
        trace,
        journal,
        request.budget,
        supervisor,
        mcp,
        task=task,
    )
