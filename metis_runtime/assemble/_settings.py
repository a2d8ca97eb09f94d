"""A run's settings and its gate: the settings hierarchy read, the mode
chosen, what the trace header records of them, and the permission gate
(agent tools pre-allowed unless asked for, the run's own files protected);
and those files: the trace, its journal beside it, and the agent tree
(`metis_runtime._layout`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from metis_trace import Decision
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import Source

from .._errors import ConfigError
from .._errors import MetisRuntimeError
from .._layout import tree_dir
from ..permissions import MODE_NAMES
from ..permissions import Gate
from ..permissions import Loaded
from ..permissions import Policy
from ..permissions import load_hierarchy
from ..permissions import parse_mode
from ..permissions import run_files
from ..tools._exits import EXITS
from ._scenario import STDIN_SCENARIO

Say = Callable[[str], None]  # a line for the user: a warning, or progress
# Agent tools that start, stop or steer processes (kind exec); list/wait are read-only.
AGENT_EXEC_TOOLS = ("spawn_agent", "kill_agent", "message_agent")


def read_settings(named: tuple[str, ...], workspace: Path, real: bool, warn: Say) -> Loaded:
    """The run's settings: the hierarchy of the workspace (managed, `--settings`,
    local and shared project, user; specs/permissions.md), or with `real`
    false only the `--settings` files. A rule lost on the way is a warning."""
    try:
        loaded = load_hierarchy(run_files(named, workspace, real=real))
    except MetisRuntimeError as exc:
        raise ConfigError(str(exc)) from None
    for note in loaded.notes:
        if " not read (" in note:  # a lost rule: the user should see it (and the header keeps it)
            warn(note)
    return loaded


def run_mode(mode: str | None, loaded: Loaded) -> tuple[Mode, bool]:
    """`--mode`, else the settings' defaultMode, else default; and whether it is auto."""
    if mode is None:
        chosen, auto = loaded.mode or Mode.DEFAULT, loaded.auto
    else:
        try:
            chosen, auto = parse_mode(mode, "--mode")
        except MetisRuntimeError:
            raise ConfigError(
                f"--mode {mode!r}: unknown mode (one of {', '.join(MODE_NAMES)})"
            ) from None
    if auto and loaded.policy.auto_disabled:
        raise ConfigError("--mode: auto is disabled by disableAutoMode")
    return chosen, auto


def settings_meta(loaded: Loaded, real: bool) -> dict[str, Any]:
    """What the trace header records of the settings: the files read, in the
    order they were loaded, and what was ignored in them."""
    meta: dict[str, Any] = {
        "settings_hierarchy": real,
        "settings": [
            {"path": str(f.path), "level": f.level, "source": f.source.value} for f in loaded.files
        ],
    }
    if loaded.notes:
        meta["settings_notes"] = list(loaded.notes)
    return meta


def make_gate(
    mode: Mode,
    workspace: Path,
    headless: bool,
    policy: Policy,
    agent_tools: str,
    trace: Path | None = None,
    auto: bool = False,
) -> Gate:
    """The run's gate; with `agent_tools` "allow", cli rules allow `AGENT_EXEC_TOOLS`."""
    try:
        if agent_tools == "allow":
            for name in AGENT_EXEC_TOOLS:
                policy.add(
                    Source.CLI,
                    RuleBehavior.ALLOW,
                    name,
                    origin="metis run: agent tools (--ask-agent-tools to ask instead)",
                )
        return Gate(
            policy,
            mode,
            workspace,
            Route.HEADLESS if headless else Route.INTERACTIVE,
            headless_default=Decision.DENY,
            protected_paths=owned_files(trace) if trace is not None else (),
            auto=auto,
            search_hides_denied=True,  # the runtime's grep, glob and ls hide them (Gate.hides)
        )
    except MetisRuntimeError as exc:
        raise ConfigError(str(exc)) from None


def journal_path(trace: Path) -> Path:
    """The write-ahead journal beside a trace: `<trace>.journal`."""
    return trace.with_name(trace.name + ".journal")


def owned_files(trace: Path) -> tuple[Path, ...]:
    """What the run itself writes, which its agents may not change: the trace,
    the journal, and the agent tree's ledger, children's traces and offloads
    (not `worktrees/`, where children work)."""
    tree = tree_dir(trace)
    owned = (
        tree / "guard.json",
        tree / "agents",
        tree / "offload",
        tree / EXITS,
        tree / STDIN_SCENARIO,
    )
    return (trace, journal_path(trace), *owned)


def latest_trace(workspace: Path) -> Path:
    """The trace of the workspace's newest run (`--resume --workspace DIR`)."""
    runs = sorted(
        (workspace / ".metis" / "runs").glob("*/trace.jsonl"), key=lambda p: p.stat().st_mtime
    )
    if not runs:
        raise ConfigError(f"{workspace}: no run to resume (give --trace)")
    return runs[-1]
