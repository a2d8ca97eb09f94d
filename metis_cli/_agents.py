"""`metis agents` (definitions, tree conformance) and `metis ablate child-boundary`.

Register in `_main.py` with `cli.add_command(agents)` and
`cli.add_command(ablate)`. `guard_options` adds the spawn-guard flags to any
command (`metis run` too) and `limits_from_options` turns them into
`GuardLimits`. Exit codes: 0 everything holds, 1 a violation (or an
ablation cell off its expected outcome), 2 bad input.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from typing import TypeVar

import click
from pydantic import ValidationError

from metis_runtime import ConfigError
from metis_runtime.agents import AGENT_TOOL_NAMES
from metis_runtime.agents import GuardLimits
from metis_runtime.agents import ParentContext
from metis_runtime.agents import ProviderConfig
from metis_runtime.agents import ResolveRefusal
from metis_runtime.agents import agent_folders
from metis_runtime.agents import load_agents
from metis_runtime.agents import resolve_agent
from metis_runtime.assemble import live_provider_config
from metis_runtime.context import ContextBudget
from metis_runtime.tools import ToolRegistry
from metis_studies.child_boundary import ESCAPE_TOOLS
from metis_studies.child_boundary import run_child_boundary
from metis_trace import Mode

from ._conform import check_tree_dir
from ._output import EXIT_OK
from ._output import EXIT_VIOLATION
from ._output import count_option
from ._output import emit_json
from ._output import table
from ._params import FiniteFloat
from ._wire import WireOptionError
from ._wire import default_provider
from ._wire import wire_options
from ._wire import wire_settings

F = TypeVar("F", bound=Callable[..., Any])
_DEFAULTS = GuardLimits()


def guard_options(command: F) -> F:
    """The spawn guard's limits as options (defaults: 5, 32, 8, 4, 600 s)."""
    counts = (  # (flag, default, help): counts from 0
        ("--max-spawn-depth", _DEFAULTS.max_depth, "Deepest child depth (the root is 0)."),
        ("--max-agents", _DEFAULTS.max_total, "Agents one tree may spawn in total."),
        ("--max-children-per-agent", _DEFAULTS.max_per_parent, "Children one agent may spawn."),
        ("--max-concurrent", _DEFAULTS.max_concurrent, "Children running at once in the tree."),
    )
    options = [
        *(count_option(flag, 0, None, default, text) for flag, default, text in counts),
        click.option(
            "--agent-timeout",
            type=FiniteFloat(min=0, min_open=True),
            default=_DEFAULTS.timeout_s,
            show_default=True,
            help="Seconds before a child is killed.",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def limits_from_options(options: dict[str, Any]) -> GuardLimits:
    """GuardLimits from the values `guard_options` added (popped from `options`)."""
    return GuardLimits(
        max_depth=options.pop("max_spawn_depth"),
        max_total=options.pop("max_agents"),
        max_per_parent=options.pop("max_children_per_agent"),
        max_concurrent=options.pop("max_concurrent"),
        timeout_s=options.pop("agent_timeout"),
    )


def context_options(command: F) -> F:
    """The context budget as options: a window, and optionally each step's trigger."""
    options = [
        count_option(
            "--context-window",
            1,
            None,
            200_000,
            "Estimated tokens (about 4 characters each) the provider takes.",
        ),
        count_option(
            "--context-recent", 0, None, 4, "Trailing messages prune and snip leave alone."
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def budget_from_options(options: dict[str, Any]) -> ContextBudget:
    """The ladder's budget (triggers at 50/60/70/80/90 % of the window)."""
    return ContextBudget.for_window(
        options.pop("context_window"), recent=options.pop("context_recent")
    )


@click.group("agents")
def agents() -> None:
    """Sub-agent definitions and trees of traces."""


@agents.command("list")
@click.option(
    "--project",
    # A missing project is a usage error, not an empty list (exit 0 hid a typo).
    type=click.Path(path_type=Path, exists=True, file_okay=False),
    default=".",
    show_default=True,
    help="Project whose .metis/agents and .claude/agents are read.",
)
@click.option(
    "--user-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="User folder (default: $METIS_USER_AGENTS or ~/.metis/agents).",
)
@click.option(
    "--claude-user-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Claude Code's user agents (default: $CLAUDE_CONFIG_DIR/agents or ~/.claude/agents).",
)
@click.option(
    "--mode",
    type=click.Choice([m.value for m in Mode]),
    default="default",
    show_default=True,
    help="The parent's mode the definitions are resolved under.",
)
@click.option(
    "--provider",
    "provider_arg",
    type=click.Choice(["replay", "anthropic", "openai"]),
    help="The parent's provider (default: as `metis run`).",
)
@click.option("--model", help="The parent's model (default: the provider's default).")
@wire_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_agents(
    project: Path,
    user_dir: Path | None,
    claude_user_dir: Path | None,
    mode: str,
    provider_arg: str | None,
    model: str | None,
    as_json: bool,
    **options: Any,
) -> None:
    """List the agent definitions in force, each resolved for a child of a
    root agent (--mode, --provider, ...): its source file, tools, mode,
    model and workspace, and the fields kept but not used. Files that cannot
    be loaded are reported (exit 1); warnings do not change the exit status.
    """
    try:
        wire = wire_settings(options)
        provider_name = provider_arg or default_provider()
        if provider_name == "replay":
            provider = ProviderConfig(kind="replay", model=model, **wire)
        else:
            provider = live_provider_config({"provider": provider_name, "model": model, **wire})
    except (WireOptionError, ConfigError, ValidationError) as exc:
        raise click.UsageError(" ".join(str(exc).split())) from None
    project = Path(os.path.realpath(project))
    folders = agent_folders(project, user_dir=user_dir, claude_user_dir=claude_user_dir)
    catalog = load_agents(project, user_dir=user_dir, claude_user_dir=claude_user_dir)
    parent = ParentContext(
        Mode(mode),
        (*ToolRegistry.load().names(), *AGENT_TOOL_NAMES),
        provider,
        project,
    )
    rows: list[dict[str, Any]] = []
    for name in catalog.names():
        resolved = resolve_agent(catalog.agents[name], parent)
        if isinstance(resolved, ResolveRefusal):  # no call arguments: cannot happen
            raise click.ClickException(resolved.message)
        row = resolved.to_json()
        row["shadows"] = [d.path or d.origin for d in catalog.shadowed if d.name == name]
        rows.append(row)
    if as_json:
        emit_json(
            {
                "parent": {
                    "mode": mode,
                    "provider": provider.kind,
                    "model": provider.model,
                    "base_url": provider.base_url,
                },
                "folders": [
                    {"path": str(f.path), "origin": f.origin, "format": f.dialect} for f in folders
                ],
                "agents": rows,
                "problems": [str(p) for p in catalog.problems],
                "warnings": [str(w) for w in catalog.warnings],
            }
        )
    else:
        click.echo(
            table(
                ["name", "origin", "tools", "mode", "model", "workspace", "kept"],
                [
                    (
                        r["name"],
                        r["origin"] + (" (claude)" if r["format"] == "claude-code" else ""),
                        ",".join(r["tools"]) or "(none)",
                        r["mode"],
                        r["model"] or "-",
                        r.get("workspace") or r.get("workspace_refused", "-"),
                        ",".join(r["kept"]) or "-",
                    )
                    for r in rows
                ],
            )
        )
        for line in (*catalog.problems, *catalog.warnings):
            click.echo(f"metis agents: {line}", err=True)
    sys.exit(EXIT_VIOLATION if catalog.problems else EXIT_OK)


@agents.command("conform")
@click.argument("run_dir", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def conform_tree(run_dir: Path, as_json: bool) -> None:
    """Check every trace under RUN_DIR as one tree of agents (CHILD-1..6 across it)."""
    traces, report = check_tree_dir(run_dir)
    if as_json:
        emit_json(report.to_json())
    elif report.ok:
        click.echo(f"{run_dir}: {len(traces)} traces conform as one tree ({report.events} events)")
    else:
        for v in report.violations:
            click.echo(v.one_line())
    sys.exit(EXIT_OK if report.ok else EXIT_VIOLATION)


@click.group("ablate")
def ablate() -> None:
    """Ablations: switch a protection off and show what it was for."""


@ablate.command("child-boundary")
@count_option(
    "--seeds", 1, 100, 3, "Seeds per cell (each varies target, call order, effect position)."
)
@click.option(
    "--processes",
    is_flag=True,
    help="Run each child as a real process (default: in process, same spawn path).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def child_boundary(seeds: int, processes: bool, as_json: bool) -> None:
    """2x2: cloned gate x filtered registry; the unauthorized effect and 5 escape tools.

    Exit 0 when every cell shows its expected outcome over every seed.
    """
    cells = run_child_boundary(tuple(range(seeds)), processes=processes)
    ok = all(c.ok for c in cells)
    if as_json:
        emit_json(
            {"escape_tools": list(ESCAPE_TOOLS), "cells": [c.to_json() for c in cells], "ok": ok}
        )
    else:
        n = len(ESCAPE_TOOLS)

        def onoff(flag: bool) -> str:
            return "on" if flag else "off"

        rows = []
        for c in cells:
            j = c.to_json()
            exposed = sorted(set(j["exposed"]))
            rows.append(
                (
                    onoff(c.cloned_gate),
                    onoff(c.filtered_registry),
                    f"{j['effect_admitted']}/{j['seeds']} admitted",
                    "/".join(f"{e}/{n}" for e in exposed) + " exposed",
                    ("admitted" if c.expected_effect else "blocked")
                    + f", {c.expected_exposed}/{n} exposed",
                    "ok" if c.ok else "UNEXPECTED",
                )
            )
        click.echo(
            table(
                [
                    "cloned gate",
                    "filtered registry",
                    "effect",
                    "escape tools",
                    "expected",
                    "verdict",
                ],
                rows,
            )
        )
    sys.exit(EXIT_OK if ok else EXIT_VIOLATION)
