"""`metis run`: run the agent on a task in a workspace, recording a trace.

Register in `_main.py` with `cli.add_command(run)`. Exit codes: 0 the run
completed, 1 it failed, was cancelled or interrupted, 2 bad input.

The root agent has the six agent tools (`spawn_agent`, `list_agents`,
`wait_agent`, `kill_agent`, `message_agent`, `integrate_agent`) of an
`AgentSupervisor`: its
children run as processes under the spawn guard (`guard_options`), with the
root's gate cloned, in the tree directory (the trace's folder when the trace
is named `trace.jsonl`, as by default; else `<trace>.agents/`), which holds
`guard.json`, `agents/<id>/trace.jsonl`, `worktrees/` and `offload/`, so
`metis agents conform DIR` checks the whole tree. Unless
`--ask-agent-tools`, `spawn_agent`, `kill_agent` and `message_agent` are
allowed by cli rules (a child's authority is the root's cloned gate, its
number the guard's); deny and ask rules still come first. Context control
(`context_options`) runs before each request and once after an overflow.

A replay scenario may add, beside `interactions` and `workspace.files`:

    agents:                      # each child's own cassette, by agent name
      planner: coordinator/planner.yaml   # (relative to the scenario's folder;
      implementer: coordinator/implementer.yaml   # "*" for any other agent)
    workspace:
      git: true                  # `git init` a workspace that is in no repository
                                 # (`.metis/` excluded, the seed as first commit),
                                 # as `worktree: branch` needs

A child agent with no cassette fails at its first request (its parent gets
that as the spawn's result).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Coroutine, Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import attrs
import click
from pydantic import ValidationError

from metis_runtime import (
    AgentLoop,
    Dispatcher,
    Journal,
    LoopConfig,
    LoopObserver,
    MetisRuntimeError,
    RunResult,
    TraceWriter,
    make_header,
    scan_trace,
)
from metis_runtime._errors import ToolError
from metis_runtime._failpoints import inherited_failpoint
from metis_runtime._input import read_input_text
from metis_runtime._private import default_redactor, write_private
from metis_runtime._yaml import load_yaml
from metis_runtime.agents import (
    AgentIdentity,
    AgentSupervisor,
    GuardLimits,
    ProviderConfig,
    SpawnLedger,
    agent_tools,
    build_provider,
    guard_tree,
    load_agents,
    new_tree,
    sanitized_env,
    tool_env,
)
from metis_runtime.agents._process import PASSTHROUGH_ENV
from metis_runtime.agents._worktree import remove_stale_worktrees
from metis_runtime.context import ContextBudget, ContextController, provider_summarizer
from metis_runtime.dispatch import FourClassDispatcher, SerialDispatcher
from metis_runtime.mcp import Sources as McpSources
from metis_runtime.mcp import Started, header_meta
from metis_runtime.permissions import (
    MODE_NAMES,
    Gate,
    Loaded,
    Policy,
    is_protected,
    load_hierarchy,
    parse_mode,
    run_files,
)
from metis_runtime.providers import (
    AssistantMessage,
    Cassette,
    Provider,
    ReplayProvider,
    RetryPolicy,
    Scenario,
    builtin_scenarios,
    load_cassette,
    load_scenario,
)
from metis_runtime.tools import JobManager, ToolContext, ToolRegistry
from metis_runtime.tools._contain import Roots, write_at
from metis_runtime.tools._exits import EXITS
from metis_trace import (
    Decision,
    EffectOutcome,
    InputError,
    Mode,
    ResultStatus,
    Route,
    RuleBehavior,
    RunStatus,
    Source,
)
from metis_witness._launch import WITNESSED_ENV

from ._agents import budget_from_options, context_options, guard_options, limits_from_options
from ._output import count_option
from ._wire import (
    WireOptionError,
    default_provider,
    live_provider_config,
    wire_options,
    wire_settings,
)

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
STANDALONE = False  # set by `metis_cli.main` and `python -m metis_cli._run`
DEFAULT_SCENARIO = "edit_files"
STDIN = "-"
STDIN_SCENARIO = "scenario.yaml"  # `--scenario -`, kept in the run's folder
_TRACE_NOT_STDIN = (
    "--trace -: a run writes its trace to a file and appends to it (its journal "
    "beside it, which --resume needs): give a path"
)
PROVIDERS = ("replay", "anthropic", "openai")
DEFAULT_MAX_RETRIES = RetryPolicy().max_retries
# Agent tools that start, stop or steer processes (kind exec); list/wait are read-only.
AGENT_EXEC_TOOLS = ("spawn_agent", "kill_agent", "message_agent")
_GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "metis",
    "GIT_AUTHOR_EMAIL": "metis@localhost",
    "GIT_COMMITTER_NAME": "metis",
    "GIT_COMMITTER_EMAIL": "metis@localhost",
}


def _bad(message: str) -> NoReturn:
    click.echo(f"metis run: error: {message}", err=True)
    sys.exit(EXIT_BAD_INPUT)


class _OneLineErrors(click.Command):
    """A bad option value is one line and exit 2, like every other bad input."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["metis_run_args"] = list(args)  # `--witness` runs the same command under it
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            _bad(" ".join(exc.format_message().split()))


def _short(value: Any, limit: int = 60) -> str:
    # Redacted before it is cut: a cut must not leave a credential's head unflagged.
    text = default_redactor().json_line(value) if isinstance(value, dict) else str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Progress(LoopObserver):
    """One line per call start and end on stderr; the answer on stdout."""

    def __init__(self, quiet: bool) -> None:
        self._quiet = quiet

    def _line(self, text: str) -> None:
        if not self._quiet:
            click.echo(text, err=True)

    def assistant(self, turn: int, message: AssistantMessage) -> None:
        text = " ".join(message.text.split())
        if text and message.tool_uses:
            self._line(f"turn {turn}: {default_redactor().cut(text, 100)}")

    def call_started(self, occ: str, tool: str, input: Mapping[str, Any]) -> None:
        self._line(f"  > {occ} {tool} {_short(dict(input))}")

    def call_finished(
        self, occ: str, tool: str, status: ResultStatus, content: str, seconds: float | None
    ) -> None:
        took = f" {seconds:.2f}s" if seconds is not None else ""
        detail = ""
        if status is not ResultStatus.OK:
            detail = ": " + default_redactor().cut(" ".join(content.split()), 80)
        self._line(f"  < {occ} {tool} {status.value}{took}{detail}")

    def job_finished(self, occ: str, job: str, outcome: EffectOutcome) -> None:
        self._line(f"  * {occ} background {job} {outcome.value}")

    def note(self, text: str) -> None:
        self._line(text)


def _scenario(spec: str) -> tuple[Scenario, str]:
    """The scenario and its text, read once (`-`: standard input)."""
    shipped = builtin_scenarios()
    path = shipped.get(spec, Path(spec))
    if spec != STDIN and spec not in shipped and not path.exists() and not path.is_symlink():
        _bad(f"--scenario {spec!r}: no such scenario (shipped: {', '.join(shipped)}) or file")
    try:
        text = read_input_text(STDIN if spec == STDIN else path)
        return load_scenario(spec if spec == STDIN else path, text=text), text
    except InputError as exc:
        _bad(f"--scenario {exc}" if spec == STDIN else str(exc))
    except MetisRuntimeError as exc:
        _bad(str(exc))


def _keep_stdin_scenario(text: str, tree: Path) -> Path:
    """A scenario read from standard input, kept in the run's folder (0600,
    redacted like every file metis writes) so that a resume, or the run the
    witness starts again, reads it from there."""
    copy = tree / STDIN_SCENARIO
    try:
        write_private(copy, text)
    except OSError as exc:
        _bad(f"{copy}: cannot write the scenario read from stdin: {exc.strerror or exc}")
    return copy


def _seed(workspace: Path, files: Mapping[str, str]) -> None:
    """Write the scenario's files through the same checks the agent's write
    tool has: inside the workspace, no symlink followed (`Roots`), never a
    protected path (`.metis/`, `.git/`, shell start-up files, ...); refuse to
    overwrite a different existing file. All checked before any is written."""
    roots = Roots((workspace,))
    targets: dict[Path, bytes] = {}
    for name, content in files.items():
        if not name or os.path.isabs(name) or "\x00" in name:
            _bad(f"scenario file {name!r}: must be a relative path")
        # Resolved as the write tool resolves it: a symlink on the way is followed
        # here, to be checked; the write then follows none.
        target = Path(os.path.realpath(workspace / name))
        try:
            roots.locate(target, "seed")
        except ToolError:
            _bad(f"scenario file {name!r}: outside the workspace")
        if is_protected(target, (), workspace):
            _bad(f"scenario file {name!r}: a protected path; scenarios cannot seed it")
        if target.exists() and not target.is_file():
            _bad(f"{target}: exists and is not a regular file; refusing to seed over it")
        if target.exists():
            try:
                same = target.read_text(encoding="utf-8") == content
            except (OSError, UnicodeDecodeError):
                same = False
            if not same:
                _bad(
                    f"{target}: exists with other content; refusing to overwrite "
                    "(use an empty --workspace)"
                )
            continue
        targets[target] = content.encode("utf-8")
    for target, data in targets.items():
        try:
            with roots.parent(target, tool="seed", create=True) as dir_fd:
                write_at(dir_fd, target.name, data)  # whole files or none
        except (OSError, ToolError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            _bad(f"{target}: cannot write: {reason}")


@attrs.frozen
class _Extras:
    """What `metis run` reads from a scenario beyond the cassette and its files."""

    agents: dict[str, str]  # agent name -> absolute path of its cassette
    git: bool = False


def _scenario_extras(scenario: Scenario, text: str) -> _Extras:
    path = scenario.path
    # A scenario on stdin names its children's cassettes relative to the current folder.
    folder = Path.cwd() if os.fspath(path) == STDIN else path.parent
    try:
        data = load_yaml(text, source=str(path))
    except InputError as exc:
        _bad(str(exc))
    data = data if isinstance(data, dict) else {}
    workspace = data.get("workspace") or {}
    git = workspace.get("git", False) if isinstance(workspace, dict) else False
    if not isinstance(git, bool):
        _bad(f"{path}: workspace.git: must be true or false")
    raw = data.get("agents") or {}
    if not isinstance(raw, dict):
        _bad(f"{path}: agents: must be a mapping of agent name to cassette file")
    agents: dict[str, str] = {}
    for name, rel in raw.items():
        if not isinstance(name, str) or not isinstance(rel, str) or not rel:
            _bad(f"{path}: agents[{name!r}]: must name a cassette file")
        cassette = (folder / rel).resolve()
        try:
            load_cassette(cassette)  # a bad child cassette is bad input now, not a child failure
        except MetisRuntimeError as exc:
            _bad(f"{path}: agents[{name!r}]: {exc}")
        agents[name] = str(cassette)
    return _Extras(agents, git)


def _git_init(workspace: Path) -> None:
    """A repository for a workspace that is in none: `.metis/` (runs, worktrees)
    excluded, the seeded files as its first commit. A repository is left alone."""

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                ["git", "-c", f"core.hooksPath={os.devnull}", *args],  # no hook runs
                cwd=workspace,
                env={**os.environ, **_GIT_IDENTITY, "GIT_TERMINAL_PROMPT": "0"},
                capture_output=True,
                text=True,
                check=False,
                timeout=60,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            _bad(f"the scenario needs git (workspace.git): {exc}")

    if git("rev-parse", "--is-inside-work-tree").returncode == 0:
        return
    for args in (
        ("init", "-q"),
        ("add", "--all", "--", "."),
        ("commit", "-q", "--allow-empty", "-m", "metis: the scenario's workspace"),
    ):
        done = git(*args)
        if done.returncode != 0:
            _bad(f"{workspace}: git {args[0]} failed: {' '.join(done.stderr.split())[:200]}")
        if args[0] == "init":
            exclude = workspace / ".git" / "info" / "exclude"
            exclude.parent.mkdir(parents=True, exist_ok=True)
            with exclude.open("a", encoding="utf-8") as fh:
                fh.write(".metis/\n")


def _workspace(raw: str) -> Path:
    path = Path(raw).expanduser()
    if path.exists() and not path.is_dir():
        _bad(f"--workspace {raw}: not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _bad(f"--workspace {raw}: cannot create: {exc.strerror or exc}")
    if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
        _bad(f"--workspace {raw}: not readable and writable")
    return path.resolve()


def _check_provider_config(config: Mapping[str, Any]) -> None:
    """What `_build_provider` reads from a journal, strictly typed (ValueError)."""
    name = config["provider"]
    if name not in PROVIDERS:
        raise ValueError(f"provider {name!r} is not one of {', '.join(PROVIDERS)}")
    if name == "replay" and not isinstance(config.get("scenario"), str):
        raise ValueError("a replay run needs its 'scenario' (a string)")
    if not isinstance(config.get("model"), str | None):
        raise ValueError("'model' must be a string or null")
    retries = config.get("max_retries", DEFAULT_MAX_RETRIES)
    if type(retries) is not int:
        raise ValueError(f"max_retries {retries!r} is not an integer")


def _build_provider(config: Mapping[str, Any], skip: int = 0) -> Provider:
    name = config["provider"]
    if name == "replay":
        scenario, _ = _scenario(config["scenario"])
        cassette = scenario.cassette
        # A resumed run continues after the answers it already has.
        return ReplayProvider(Cassette(cassette.path, cassette.interactions[skip:]))
    # The root's provider is built as its children's are, from the same settings.
    try:
        return build_provider(_child_provider(config), {"agent": "root"})
    except MetisRuntimeError as exc:
        _bad(str(exc))


def _live(config: Mapping[str, Any]) -> ProviderConfig:
    """The run's live provider settings; runs recorded before --max-retries
    existed retry as the default does."""
    config = {"max_retries": DEFAULT_MAX_RETRIES, **config}
    try:
        RetryPolicy(max_retries=config["max_retries"])  # its one-line error for a bad value
        # The endpoint: --base-url, else ANTHROPIC_BASE_URL / OPENAI_BASE_URL.
        return live_provider_config(config)
    except (WireOptionError, ValidationError, ValueError) as exc:
        _bad(" ".join(str(exc).split()))


def _pass_env(names: tuple[str, ...]) -> None:
    """`--pass-env`: the names join $METIS_TOOL_ENV_PASSTHROUGH, which the
    tools' environment (`tool_env`) of this run and of its children honours."""
    for name in names:
        if not name or "," in name or "=" in name:
            _bad(f"--pass-env {name!r}: not a variable name")
    if names:
        old = [n for n in os.environ.get(PASSTHROUGH_ENV, "").split(",") if n]
        os.environ[PASSTHROUGH_ENV] = ",".join(dict.fromkeys([*old, *names]))


def _child_provider(config: Mapping[str, Any]) -> ProviderConfig:
    """The children's provider: the scenario's per-agent cassettes, or the run's live one."""
    name = str(config["provider"])
    if name == "replay":
        scenarios = {str(k): str(v) for k, v in (config.get("agent_scenarios") or {}).items()}
        return ProviderConfig(kind="replay", scenarios=scenarios)
    return _live(config)


def _settings(named: tuple[str, ...], workspace: Path, real: bool) -> Loaded:
    """The run's settings: the hierarchy of the workspace (managed, `--settings`,
    local and shared project, user; specs/permissions.md), or with `real`
    false only the `--settings` files."""
    try:
        loaded = load_hierarchy(run_files(named, workspace, real=real))
    except MetisRuntimeError as exc:
        _bad(str(exc))
    for note in loaded.notes:
        if " not read (" in note:  # a lost rule: the user should see it (and the header keeps it)
            click.echo(f"metis run: warning: {note}", err=True)
    return loaded


def _run_mode(mode: str | None, loaded: Loaded) -> tuple[Mode, bool]:
    """`--mode`, else the settings' defaultMode, else default; and whether it is auto."""
    if mode is None:
        chosen, auto = loaded.mode or Mode.DEFAULT, loaded.auto
    else:
        try:
            chosen, auto = parse_mode(mode, "--mode")
        except MetisRuntimeError:
            _bad(f"--mode {mode!r}: unknown mode (one of {', '.join(MODE_NAMES)})")
    if auto and loaded.policy.auto_disabled:
        _bad("--mode: auto is disabled by disableAutoMode")
    return chosen, auto


def _settings_meta(loaded: Loaded, real: bool) -> dict[str, Any]:
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


def _gate(
    mode: Mode,
    workspace: Path,
    headless: bool,
    policy: Policy,
    agent_tools: str,
    trace: Path | None = None,
    auto: bool = False,
) -> Gate:
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
            protected_paths=_run_files(trace) if trace is not None else (),
            auto=auto,
            search_hides_denied=True,  # the runtime's grep, glob and ls hide them (Gate.hides)
        )
    except MetisRuntimeError as exc:
        _bad(str(exc))


def _run_files(trace: Path) -> tuple[Path, ...]:
    """What the run itself writes, which its agents may not change: the trace,
    the journal, and the agent tree's ledger, children's traces and offloads
    (not `worktrees/`, where children work)."""
    tree = _tree_dir(trace)
    owned = (
        tree / "guard.json",
        tree / "agents",
        tree / "offload",
        tree / EXITS,
        tree / STDIN_SCENARIO,
    )
    return (trace, _journal_path(trace), *owned)


def _tree_dir(trace: Path) -> Path:
    """Where the run's agent tree lives (ledger, children, worktrees, offloads):
    the runtime's layout (`metis_runtime._layout`)."""
    from metis_runtime._layout import tree_dir

    return tree_dir(trace)


def _limits(config: Mapping[str, Any], where: Path) -> GuardLimits:
    try:
        return GuardLimits(**dict(config.get("guard") or {}))
    except (TypeError, MetisRuntimeError) as exc:
        _bad(f"{where}: the run's guard limits are unusable: {exc}")


def _budget(config: Mapping[str, Any], where: Path) -> ContextBudget:
    context = dict(config.get("context") or {})
    try:
        if not context:
            return ContextBudget()
        return ContextBudget.for_window(int(context["window"]), recent=int(context["recent"]))
    except (KeyError, TypeError, ValueError, MetisRuntimeError) as exc:
        _bad(f"{where}: the run's context budget is unusable: {exc}")


def _supervisor(
    identity: AgentIdentity,
    ledger: SpawnLedger,
    workspace: Path,
    gate: Gate,
    config: Mapping[str, Any],
    budget: ContextBudget,
    mcp: Started | None = None,
) -> AgentSupervisor:
    catalog = load_agents(workspace)
    for problem in catalog.problems:
        click.echo(f"metis run: warning: {problem}", err=True)
    return AgentSupervisor(
        identity,
        workspace=workspace,
        gate=gate,
        visible_tools=(),
        catalog=catalog,
        provider=_child_provider(config),
        ledger=ledger,
        headless_default=Decision.DENY,
        context_budget=attrs.asdict(budget),
        max_turns=int(config["max_turns"]),
        env=sanitized_env(),  # the children's providers need the credentials; their tools do not
        **(mcp.for_children() if mcp is not None else {}),
    )


def _registry(
    supervisor: AgentSupervisor | None, workspace: Path, mcp: Started | None = None
) -> ToolRegistry:
    """The built-ins, plugins and the workspace's signed executor manifests
    (`.metis/executors/`: the plan path's catalog and the agent share one
    registry), the MCP servers' tools; a refused manifest is a warning."""
    from metis_runtime.plan import catalog_for

    catalog = catalog_for(workspace, ToolRegistry.load())
    loaded = catalog.registry
    for problem in (*loaded.plugin_errors, *catalog.problems):
        click.echo(f"metis run: warning: {problem}", err=True)
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
        _bad(str(exc))


def _mcp(workspace: Path, sources: McpSources, quiet: bool, read: Loaded) -> Started | None:
    """Start the run's MCP servers (none configured: None), under the server
    policy of the settings hierarchy `read` (the gate's). A bad source or a
    server that does not start is one line and exit 2."""
    from metis_runtime.mcp import read_setup, start_mcp

    started: Started
    try:
        setup, declared = read_setup(workspace, sources, read.mcp_levels())
        for note in setup.notes:
            click.echo(f"metis run: warning: {note}", err=True)
        if not setup.servers:
            return None
        if not quiet:
            names = ", ".join(s.describe() for s in setup.servers)
            click.echo(f"metis run: starting mcp server(s): {names}", err=True)
        started = start_mcp(setup.servers, workspace, declared)
    except MetisRuntimeError as exc:
        _bad(str(exc))
    for note in started.notes:
        click.echo(f"metis run: warning: {note}", err=True)
    return started


def _mcp_sources(config: Mapping[str, Any]) -> McpSources:
    """The MCP sources a run recorded (runs from before MCP have none)."""
    raw = config.get("mcp") or {}
    settings = tuple(str(s) for s in config.get("settings", ()))
    return McpSources(
        tuple(str(c) for c in raw.get("configs", ())), settings, bool(raw.get("strict", False))
    )


def _call_timeout(config: Mapping[str, Any]) -> float | None:
    """The run's per-call limit (a resumed run keeps its recorded one)."""
    value = config.get("call_timeout")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        _bad(f"the run's call_timeout {value!r} is unusable: it must be a positive number")
    return float(value)


def _loop(
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
    quiet: bool,
) -> AgentLoop:
    live = config["provider"] != "replay"  # a replayed run has no answers to spare for summaries
    detach = config.get("detach_jobs", False)  # runs from before the option have none
    if type(detach) is not bool:
        _bad(f"the run's detach_jobs {detach!r} is unusable: it must be true or false")
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
        dispatcher=_dispatcher(serial),
        observer=_Progress(quiet),
        config=LoopConfig(
            max_turns=int(config["max_turns"]),
            call_timeout=_call_timeout(config),
            detach_jobs=detach,
        ),
        context_hook=controller.hook(trace),
        overflow_hook=controller.retry_hook(trace),
    )


def _execute(
    loop: AgentLoop,
    start: Coroutine[Any, Any, RunResult],
    supervisor: AgentSupervisor | None,
    trace_path: Path,
    quiet: bool,
    as_json: bool = False,
    mcp: Started | None = None,
) -> NoReturn:
    # Every process the run starts dies with it, even on SIGKILL (the tree's
    # mark, subreaper, cgroup and shepherd: agents/_process.py). Only where
    # `metis run` is the process's program: it changes the whole process
    # (a subreaper, in a cgroup of its own), which a host embedding the
    # command (a test's CliRunner) must not inherit.
    if STANDALONE:
        guard_tree()

    async def main() -> RunResult:
        if main_thread:
            # Ctrl-C: the signal is recorded first (the source the interrupt
            # names, SCHED-5), then the run's task is cancelled, as asyncio's
            # own handler would.
            me = asyncio.current_task()

            def on_sigint() -> None:
                loop.signal_received(signal.SIGINT)
                if me is not None:
                    me.cancel()

            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, on_sigint)
        try:
            return await start
        finally:
            if supervisor is not None:
                # Children still running are killed; kept worktrees are removed.
                await supervisor.close()

    # Ctrl-C goes to asyncio, which cancels the run: the loop records the interrupt
    # and `close()` kills the children. (The agents' reaper would raise
    # KeyboardInterrupt in the middle of a callback instead; SIGTERM, SIGHUP and
    # the exit handler stay its own.)
    main_thread = threading.current_thread() is threading.main_thread()
    reaper = signal.getsignal(signal.SIGINT) if main_thread else None
    if main_thread:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        result: RunResult = asyncio.run(main())
    except (KeyboardInterrupt, asyncio.CancelledError):
        loop.trace.close()
        if loop.journal is not None:
            loop.journal.close()
        click.echo(
            f"metis run: interrupted; resume with: metis run --resume --trace {trace_path}",
            err=True,
        )
        # At interpreter shutdown asyncio may log a task it cancelled as
        # "destroyed but pending", after the line that tells how to resume.
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)
        sys.exit(EXIT_FAILED)
    except MetisRuntimeError as exc:  # the trace or journal could not be written
        click.echo(f"metis run: error: {exc}", err=True)
        sys.exit(EXIT_FAILED)
    finally:
        if main_thread and reaper is not None:
            signal.signal(signal.SIGINT, reaper)
        if mcp is not None:
            mcp.host.close()  # the servers stop with the run
        loop.trace.close()
        if loop.journal is not None:
            loop.journal.close()
    spawned = supervisor is not None and bool(supervisor.children)
    code = EXIT_OK if result.status is RunStatus.COMPLETED else EXIT_FAILED
    if as_json:
        click.echo(json.dumps(_summary(result, trace_path, spawned, code), indent=2))
        sys.exit(code)
    if result.status is RunStatus.COMPLETED:
        if result.text:
            click.echo(result.text)
        if not quiet:
            where = f"; agent tree: {_tree_dir(trace_path)}" if spawned else ""
            click.echo(
                f"run completed in {result.turns} turn(s); trace: {trace_path}{where}", err=True
            )
        sys.exit(EXIT_OK)
    click.echo(
        f"metis run: run {result.status.value} after {result.turns} turn(s): "
        f"{result.error or 'no reason given'}; trace: {trace_path}",
        err=True,
    )
    sys.exit(EXIT_FAILED)


def _summary(result: RunResult, trace_path: Path, spawned: bool, code: int) -> dict[str, Any]:
    """`metis run --json`: the run's outcome, and its calls counted by result status."""
    from collections import Counter

    from metis_runtime._input import input_lines, read_input_text
    from metis_trace import Result, read_trace_numbered

    statuses: Counter[str] = Counter()
    header, events, _ = read_trace_numbered(input_lines(read_input_text(trace_path)))
    for event in events:
        if isinstance(event, Result):
            statuses[event.status.value] += 1
    return {
        "run_id": header.run_id,
        "status": result.status.value,
        "turns": result.turns,
        "text": result.text,
        "error": result.error,
        "calls": sum(statuses.values()),
        "results": dict(sorted(statuses.items())),
        "events": len(events),
        "trace": str(trace_path),
        "journal": str(_journal_path(trace_path)),
        "agent_tree": str(_tree_dir(trace_path)) if spawned else None,
        "exit": code,
    }


def _journal_path(trace: Path) -> Path:
    return trace.with_name(trace.name + ".journal")


def _witnessed(
    witness_arg: str | None,
    trace_path: Path,
    workspace: Path,
    run_id: str,
    again: Sequence[str] = (),
) -> None:
    """With `--witness` (when `metis` did not start the witness already, see
    `witness._launch.early`): become the witness (exec), which starts this
    same command (`again` appended), with this trace and run id, once it
    watches (specs/witness.md). Its exit status is the run's. Nothing of the
    runtime ran yet."""
    if witness_arg is None:
        return
    from metis_witness import witness_path
    from metis_witness._launch import exec_witness

    out = Path(witness_arg) if witness_arg != "-" else witness_path(trace_path)
    if out.exists() and not out.is_file():
        _bad(f"--witness {out}: not a regular file")
    args = [*click.get_current_context().meta.get("metis_run_args", ()), *again]
    # A fail point armed for this run (METIS_FAILPOINT, taken out of the
    # environment when the runtime was imported) is armed again in the run.
    env = {**os.environ, **inherited_failpoint()}
    try:
        exec_witness(witness_arg, trace_path, workspace, args, run_id, env)
    except OSError as exc:
        _bad(f"--witness {out}: cannot create its folder: {exc.strerror or exc}")


@click.command("run", cls=_OneLineErrors)
@click.argument("task", required=False)
@click.option("--workspace", "workspace_arg", metavar="DIR", help="Directory the tools work in.")
@click.option(
    "--mode",
    default=None,
    help=f"One of {', '.join(MODE_NAMES)} (default: the settings' defaultMode, else default).",
)
@click.option(
    "--provider",
    "provider_arg",
    help="replay, anthropic or openai (default: replay "
    "unless ANTHROPIC_API_KEY or OPENAI_API_KEY is set).",
)
@click.option("--model", help="Model name for a live provider (the children use it too).")
@click.option(
    "--scenario",
    default=DEFAULT_SCENARIO,
    show_default=True,
    help="Replay scenario: a shipped name or a YAML path.",
)
@click.option(
    "--trace",
    "trace_arg",
    metavar="PATH",
    help="Trace file (default: DIR/.metis/runs/<run id>/trace.jsonl).",
)
@click.option("--headless", is_flag=True, help="Never ask: asks resolve to deny.")
@click.option("--max-turns", default=50, show_default=True, type=click.IntRange(1))
@click.option(
    "--call-timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Cancel a call whose effect runs longer (that call only; recorded as a "
    "timeout cancel). Default: no limit beyond each tool's own.",
)
@click.option(
    "--detach-jobs",
    is_flag=True,
    help="At the end, leave background bash jobs still running on purpose (recorded as "
    "job_done detached, with their process group) instead of waiting for and killing them. "
    "Default: they are waited for, then killed.",
)
@count_option(
    "--max-retries",
    0,
    100,
    DEFAULT_MAX_RETRIES,
    "Retries of a live request that failed transiently (429, 5xx, 529) "
    "before any answer arrived; 0 disables.",
)
@click.option(
    "--settings",
    multiple=True,
    metavar="FILE",
    help="Permission settings at the command-line level (repeatable; a file at one of "
    "the real locations keeps its own level).",
)
@click.option(
    "--settings-hierarchy/--no-settings-hierarchy",
    "settings_hierarchy",
    default=True,
    envvar="METIS_SETTINGS_HIERARCHY",
    show_default=True,
    help="Also read the real settings hierarchy: managed, .claude/settings.local.json, "
    ".claude/settings.json and ~/.claude/settings.json of the workspace, and the .metis/ "
    "equivalents. --no-settings-hierarchy (or METIS_SETTINGS_HIERARCHY=0) reads only "
    "--settings, for a run that does not depend on the machine.",
)
@click.option(
    "--ask-agent-tools",
    is_flag=True,
    help="Do not pre-allow spawn_agent, kill_agent, message_agent: "
    "the gate asks for them like any exec tool.",
)
@wire_options
@guard_options
@context_options
@click.option(
    "--pass-env",
    "pass_env",
    multiple=True,
    metavar="NAME",
    help="Let tools' subprocesses see this secret-named environment variable "
    "(they see none by default: *_KEY, *_TOKEN, *_SECRET, *_PASSWORD, DATABASE_URL, ...).",
)
@click.option(
    "--mcp-config",
    "mcp_configs",
    multiple=True,
    metavar="FILE|JSON",
    help='MCP servers ({"mcpServers": {...}}, as in .mcp.json), from a file or inline JSON; '
    "besides .mcp.json (approved in --settings) and mcpServers in --settings files.",
)
@click.option(
    "--strict-mcp-config",
    is_flag=True,
    help="Start only the servers of --mcp-config (not .mcp.json, not --settings).",
)
@click.option("--resume", is_flag=True, help="Continue the run of --trace after its process died.")
@click.option("--serial", is_flag=True, help="Run calls one at a time (default: four-class).")
@click.option("--quiet", "-q", is_flag=True, help="No progress lines.")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the run's summary as JSON (implies -q)."
)
@click.option(
    "--witness",
    "witness_arg",
    is_flag=False,
    flag_value="-",
    default=None,
    metavar="[FILE]",
    help="Record the run's effects from outside the runtime (file changes, process "
    "execution) in FILE (default: <trace>.witness); `metis conform` checks them. "
    "Write --witness=FILE or put it after the task.",
)
def run(
    task: str | None,
    workspace_arg: str | None,
    mode: str | None,
    provider_arg: str | None,
    model: str | None,
    scenario: str,
    trace_arg: str | None,
    headless: bool,
    max_turns: int,
    call_timeout: float | None,
    detach_jobs: bool,
    max_retries: int,
    settings: tuple[str, ...],
    settings_hierarchy: bool,
    ask_agent_tools: bool,
    pass_env: tuple[str, ...],
    mcp_configs: tuple[str, ...],
    strict_mcp_config: bool,
    resume: bool,
    serial: bool,
    quiet: bool,
    as_json: bool,
    witness_arg: str | None,
    **options: Any,
) -> None:
    """Run the agent on TASK in a workspace and record its trace.

    With the replay provider the scenario's recorded answers drive the run
    and its files seed the workspace. The agent may spawn sub-agents
    (spawn_agent, ...) within the spawn guard's limits; their traces go
    under the run's folder (check the tree with `metis agents conform`).
    Progress (one line per call start and end) goes to stderr, the final
    answer to stdout. Exit 0 completed, 1 failed/cancelled/interrupted, 2
    bad input.
    """
    quiet = quiet or as_json
    if resume:
        # A resumed run keeps its recorded limits, budget, agent tools and --pass-env.
        _resume(trace_arg, workspace_arg, quiet, serial, as_json, witness_arg)
    _pass_env(pass_env)
    try:
        limits = limits_from_options(options)
        budget = budget_from_options(options)
        wire = wire_settings(options)
    except (MetisRuntimeError, WireOptionError) as exc:
        _bad(str(exc))
    if mode is not None and mode not in MODE_NAMES:
        _bad(f"--mode {mode!r}: unknown mode (one of {', '.join(MODE_NAMES)})")
    if max_turns < 1:
        _bad(f"--max-turns {max_turns}: must be at least 1")
    if max_retries < 0:
        _bad(f"--max-retries {max_retries}: must be 0 or more")
    provider_name = provider_arg or default_provider()
    if provider_name not in PROVIDERS:
        _bad(f"--provider {provider_name!r}: unknown provider (one of {', '.join(PROVIDERS)})")
    if workspace_arg is None:
        _bad("--workspace DIR is required")
    if trace_arg == STDIN:
        _bad(_TRACE_NOT_STDIN)
    loaded, scenario_text = _scenario(scenario) if provider_name == "replay" else (None, "")
    extras = _scenario_extras(loaded, scenario_text) if loaded is not None else _Extras({})
    workspace = _workspace(workspace_arg)
    scenario_path = ""
    if loaded is not None:
        scenario_path = str(loaded.path)
        task = task or loaded.prompt
        _seed(workspace, loaded.workspace_files)
        if extras.git:
            _git_init(workspace)
    if not task:
        _bad("TASK is required with a live provider")
    remove_stale_worktrees(workspace)  # what runs that died left behind
    witnessed_id = os.environ.pop(WITNESSED_ENV, None)  # set when the witness started us
    run_id = witnessed_id or uuid.uuid4().hex
    trace_path = (
        Path(trace_arg) if trace_arg else workspace / ".metis" / "runs" / run_id / "trace.jsonl"
    )
    journal_path = _journal_path(trace_path)
    for p in (trace_path, journal_path):
        if p.exists() and p.stat().st_size > 0:
            _bad(f"{p}: already exists (use --resume to continue that run, or another --trace)")
    tree = _tree_dir(trace_path)
    if (tree / "guard.json").exists():
        _bad(f"{tree}: holds another run's agent tree (guard.json); use another --trace")
    if loaded is not None and os.fspath(loaded.path) == STDIN:
        scenario_path = str(_keep_stdin_scenario(scenario_text, tree))
    if witnessed_id is None:
        # Standard input is read: the run the witness starts reads the kept copy.
        again = ["--scenario", scenario_path] if scenario == STDIN else []
        _witnessed(witness_arg, trace_path, workspace, run_id, again)
    agent_tools = "ask" if ask_agent_tools else "allow"
    read = _settings(settings, workspace, settings_hierarchy)
    chosen, auto = _run_mode(mode, read)
    gate = _gate(chosen, workspace, headless, read.policy, agent_tools, trace_path, auto)
    mcp_sources = McpSources(mcp_configs, settings, strict_mcp_config)
    config = {
        "task": task,
        "provider": provider_name,
        "model": model,
        "scenario": scenario_path,
        "agent_scenarios": extras.agents,
        "workspace": str(workspace),
        "max_turns": max_turns,
        "call_timeout": call_timeout,
        "detach_jobs": detach_jobs,
        "max_retries": max_retries,
        "settings": list(settings),
        "settings_hierarchy": settings_hierarchy,
        "auto": auto,
        "agent_tools": agent_tools,
        "pass_env": list(pass_env),
        "mcp": mcp_sources.to_json(),
        "guard": limits.to_json(),
        "context": {"window": budget.window, "recent": budget.recent},
        **wire,
    }
    provider = _build_provider(config)
    mcp = _mcp(workspace, mcp_sources, quiet, read)  # before anything of the run is written
    try:
        identity, ledger = new_tree(tree, limits, root_run_id=run_id)
    except (OSError, MetisRuntimeError) as exc:
        if mcp is not None:
            mcp.host.close()
        _bad(f"{tree}: cannot make the agent tree: {exc}")
    supervisor = _supervisor(identity, ledger, workspace, gate, config, budget, mcp)
    registry = _registry(supervisor, workspace, mcp)
    header = make_header(
        mode=chosen,
        tools=registry.names(),
        route=gate.route,
        headless_default=Decision.DENY,
        run_id=run_id,
        hooks=supervisor.header_hooks(),
        meta={
            "task": task,
            "provider": provider_name,
            "workspace": str(workspace),
            **_settings_meta(read, settings_hierarchy),
            **({"auto_mode": True} if auto else {}),
            **supervisor.header_meta(),
            **({"mcp": header_meta(mcp)} if mcp is not None else {}),
        },
    )
    try:
        trace = TraceWriter(trace_path, header)
        journal = Journal.create(journal_path, run_id, config)
    except MetisRuntimeError as exc:
        if mcp is not None:
            mcp.host.close()
        _bad(str(exc))
    supervisor.bind(registry.names, trace)
    if not quiet:
        click.echo(f"metis run: {run_id} ({provider_name}); trace: {trace_path}", err=True)
    loop = _loop(
        provider,
        registry,
        gate,
        workspace,
        trace,
        journal,
        config=config,
        budget=budget,
        tree=tree,
        serial=serial,
        quiet=quiet,
    )
    _execute(loop, loop.run(task), supervisor, trace_path, quiet, as_json, mcp)


def _latest_trace(workspace: Path) -> Path:
    runs = sorted(
        (workspace / ".metis" / "runs").glob("*/trace.jsonl"), key=lambda p: p.stat().st_mtime
    )
    if not runs:
        _bad(f"{workspace}: no run to resume (give --trace)")
    return runs[-1]


def _dispatcher(serial: bool) -> Dispatcher:
    return SerialDispatcher() if serial else FourClassDispatcher()


def _resume(
    trace_arg: str | None,
    workspace_arg: str | None,
    quiet: bool,
    serial: bool,
    as_json: bool,
    witness_arg: str | None = None,
) -> NoReturn:
    if trace_arg is None:
        if workspace_arg is None:
            _bad("--resume needs --trace PATH (or --workspace DIR to pick its latest run)")
        trace_path = _latest_trace(Path(workspace_arg))
    elif trace_arg == STDIN:
        _bad(_TRACE_NOT_STDIN)
    else:
        trace_path = Path(trace_arg)
    journal_path = _journal_path(trace_path)
    try:
        # The journal first: its lock refuses a resume while the run's process lives.
        journal, state = Journal.open(journal_path)
        trace = TraceWriter(trace_path)
    except MetisRuntimeError as exc:
        _bad(str(exc))
    scan = scan_trace(trace.events)
    if scan.phase == "ended":
        _bad(f"{trace_path}: the run already ended ({scan.status}); nothing to resume")
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
        _check_provider_config(cfg)
    except (KeyError, TypeError, ValueError) as exc:
        _bad(f"{journal_path}: the run entry lacks a usable config ({exc})")
    if not workspace.is_dir():
        _bad(f"{workspace}: the run's workspace is gone")
    _pass_env(tuple(str(n) for n in cfg.get("pass_env", ())))
    remove_stale_worktrees(workspace)
    header = trace.header
    if witness_arg is not None and os.environ.pop(WITNESSED_ENV, None) is None:
        trace.close()  # the witness starts this resume again, under it
        journal.close()
        _witnessed(witness_arg, trace_path, workspace, header.run_id)
    # Runs recorded before sub-agents were wired have no agent tools: keep it so.
    agent_tools = str(cfg.get("agent_tools", "ask"))
    read = _settings(settings, workspace, real)
    headless = header.route is Route.HEADLESS
    gate = _gate(header.mode, workspace, headless, read.policy, agent_tools, trace_path, auto)
    provider = _build_provider(cfg, skip=len(scan.assistant_turns))
    tree = _tree_dir(trace_path)
    budget = _budget(cfg, journal_path)
    supervisor: AgentSupervisor | None = None
    if "spawn_agent" in header.tools:
        try:
            # The ledger is the tree's: its counts and task hashes carry over.
            identity, ledger = new_tree(
                tree, _limits(cfg, journal_path), root_run_id=header.root_run_id
            )
        except (OSError, MetisRuntimeError) as exc:
            _bad(f"{tree}: cannot open the agent tree: {exc}")
    mcp = _mcp(workspace, _mcp_sources(cfg), quiet, read) if "mcp" in header.meta else None
    if "spawn_agent" in header.tools:
        supervisor = _supervisor(identity, ledger, workspace, gate, cfg, budget, mcp)
    registry = _registry(supervisor, workspace, mcp)
    if supervisor is not None:
        supervisor.bind(registry.names, trace)
    if not quiet:
        click.echo(
            f"metis run: resuming {header.run_id} ({provider_name}); trace: {trace_path}", err=True
        )
    loop = _loop(
        provider,
        registry,
        gate,
        workspace,
        trace,
        journal,
        config=cfg,
        budget=budget,
        tree=tree,
        serial=serial,
        quiet=quiet,
    )
    _execute(loop, loop.resume(state, scan), supervisor, trace_path, quiet, as_json, mcp)


if __name__ == "__main__":  # `python -m metis_cli._run` until `metis run` is registered
    STANDALONE = True
    run()
