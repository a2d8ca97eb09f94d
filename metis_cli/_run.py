"""`metis run`: run the agent on a task in a workspace, recording a trace.

Register in `_main.py` with `cli.add_command(run)`. Exit codes: 0 the run
completed, 1 it failed, was cancelled or interrupted, 2 bad input.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import click

from metis_model.trace import (
    Decision,
    EffectOutcome,
    Mode,
    ResultStatus,
    Route,
    RunStatus,
    Source,
)
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
from metis_runtime.dispatch import FourClassDispatcher, SerialDispatcher
from metis_runtime.permissions import Gate, Policy
from metis_runtime.providers import (
    AnthropicProvider,
    AssistantMessage,
    Cassette,
    OpenAIChatProvider,
    Provider,
    ReplayProvider,
    Scenario,
    builtin_scenarios,
    load_scenario,
)
from metis_runtime.tools import JobManager, ToolContext, ToolRegistry, atomic_write

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
DEFAULT_SCENARIO = "edit_files"
PROVIDERS = ("replay", "anthropic", "openai")
DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4.1"}
_MODES = {m.value: m for m in Mode}
_SECRET_ENV = re.compile(r"(?i).*_(KEY|TOKEN|SECRET)")


def _bad(message: str) -> NoReturn:
    click.echo(f"metis run: error: {message}", err=True)
    sys.exit(EXIT_BAD_INPUT)


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
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
            self._line(f"turn {turn}: {text[:100]}")

    def call_started(self, occ: str, tool: str, input: Mapping[str, Any]) -> None:
        self._line(f"  > {occ} {tool} {_short(dict(input))}")

    def call_finished(
        self, occ: str, tool: str, status: ResultStatus, content: str, seconds: float | None
    ) -> None:
        took = f" {seconds:.2f}s" if seconds is not None else ""
        detail = ""
        if status is not ResultStatus.OK:
            detail = ": " + " ".join(content.split())[:80]
        self._line(f"  < {occ} {tool} {status.value}{took}{detail}")

    def job_finished(self, occ: str, job: str, outcome: EffectOutcome) -> None:
        self._line(f"  * {occ} background {job} {outcome.value}")

    def note(self, text: str) -> None:
        self._line(text)


def _provider_default() -> str:
    if os.environ.get("ANTHROPIC_API_KEY"):
        return "anthropic"
    if os.environ.get("OPENAI_API_KEY"):
        return "openai"
    return "replay"


def _scenario(spec: str) -> Scenario:
    shipped = builtin_scenarios()
    path = shipped.get(spec, Path(spec))
    if spec not in shipped and not path.is_file():
        _bad(f"--scenario {spec!r}: no such scenario (shipped: {', '.join(shipped)}) or file")
    try:
        return load_scenario(path)
    except MetisRuntimeError as exc:
        _bad(str(exc))


def _seed(workspace: Path, files: Mapping[str, str]) -> None:
    """Write the scenario's files; refuse to overwrite a different existing one."""
    for name, content in files.items():
        target = workspace / name
        if target.is_symlink() or (target.exists() and not target.is_file()):
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
    for name, content in files.items():
        target = workspace / name
        if not target.exists():
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                atomic_write(target, content.encode("utf-8"))  # whole files or none
            except OSError as exc:
                _bad(f"{target}: cannot write: {exc.strerror or exc}")


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


def _build_provider(config: Mapping[str, Any], skip: int = 0) -> Provider:
    name = config["provider"]
    if name == "replay":
        scenario = _scenario(config["scenario"])
        cassette = scenario.cassette
        # A resumed run continues after the answers it already has.
        return ReplayProvider(Cassette(cassette.path, cassette.interactions[skip:]))
    model = config.get("model") or DEFAULT_MODELS[name]
    if name == "anthropic":
        return AnthropicProvider(model)
    return OpenAIChatProvider(model)


def _tool_env() -> dict[str, str]:
    # Subprocesses of tools never see credentials.
    return {k: v for k, v in os.environ.items() if not _SECRET_ENV.fullmatch(k)}


def _gate(mode: Mode, workspace: Path, headless: bool, settings: tuple[str, ...]) -> Gate:
    policy = Policy()
    try:
        for path in settings:
            policy.load(path, Source.CLI)
        return Gate(
            policy,
            mode,
            workspace,
            Route.HEADLESS if headless else Route.INTERACTIVE,
            headless_default=Decision.DENY,
        )
    except MetisRuntimeError as exc:
        _bad(str(exc))


def _execute(loop: AgentLoop, start: Any, trace_path: Path, quiet: bool) -> NoReturn:
    try:
        result: RunResult = asyncio.run(start)
    except KeyboardInterrupt:
        click.echo(
            f"metis run: interrupted; resume with: metis run --resume --trace {trace_path}",
            err=True,
        )
        sys.exit(EXIT_FAILED)
    except MetisRuntimeError as exc:  # the trace or journal could not be written
        click.echo(f"metis run: error: {exc}", err=True)
        sys.exit(EXIT_FAILED)
    finally:
        loop.trace.close()
        if loop.journal is not None:
            loop.journal.close()
    if result.status is RunStatus.COMPLETED:
        if result.text:
            click.echo(result.text)
        if not quiet:
            click.echo(f"run completed in {result.turns} turn(s); trace: {trace_path}", err=True)
        sys.exit(EXIT_OK)
    click.echo(
        f"metis run: run {result.status.value} after {result.turns} turn(s): "
        f"{result.error or 'no reason given'}; trace: {trace_path}",
        err=True,
    )
    sys.exit(EXIT_FAILED)


def _journal_path(trace: Path) -> Path:
    return trace.with_name(trace.name + ".journal")


@click.command("run")
@click.argument("task", required=False)
@click.option("--workspace", "workspace_arg", metavar="DIR", help="Directory the tools work in.")
@click.option("--mode", default="default", show_default=True, help=f"One of {', '.join(_MODES)}.")
@click.option(
    "--provider",
    "provider_arg",
    help="replay, anthropic or openai (default: replay "
    "unless ANTHROPIC_API_KEY or OPENAI_API_KEY is set).",
)
@click.option("--model", help="Model name for a live provider.")
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
@click.option("--max-turns", default=50, show_default=True, type=int)
@click.option("--settings", multiple=True, metavar="FILE", help="Permission settings (cli source).")
@click.option("--resume", is_flag=True, help="Continue the run of --trace after its process died.")
@click.option("--serial", is_flag=True, help="Run calls one at a time (default: four-class).")
@click.option("--quiet", "-q", is_flag=True, help="No progress lines.")
def run(
    task: str | None,
    workspace_arg: str | None,
    mode: str,
    provider_arg: str | None,
    model: str | None,
    scenario: str,
    trace_arg: str | None,
    headless: bool,
    max_turns: int,
    settings: tuple[str, ...],
    resume: bool,
    serial: bool,
    quiet: bool,
) -> None:
    """Run the agent on TASK in a workspace and record its trace.

    With the replay provider the scenario's recorded answers drive the run
    and its files seed the workspace. Progress (one line per call start and
    end) goes to stderr, the final answer to stdout. Exit 0 completed, 1
    failed/cancelled/interrupted, 2 bad input.
    """
    if resume:
        _resume(trace_arg, workspace_arg, quiet, serial)
    if mode not in _MODES:
        _bad(f"--mode {mode!r}: unknown mode (one of {', '.join(_MODES)})")
    if max_turns < 1:
        _bad(f"--max-turns {max_turns}: must be at least 1")
    provider_name = provider_arg or _provider_default()
    if provider_name not in PROVIDERS:
        _bad(f"--provider {provider_name!r}: unknown provider (one of {', '.join(PROVIDERS)})")
    if workspace_arg is None:
        _bad("--workspace DIR is required")
    loaded = _scenario(scenario) if provider_name == "replay" else None
    workspace = _workspace(workspace_arg)
    scenario_path = ""
    if loaded is not None:
        scenario_path = str(loaded.path)
        task = task or loaded.prompt
        _seed(workspace, loaded.workspace_files)
    if not task:
        _bad("TASK is required with a live provider")
    run_id = uuid.uuid4().hex
    trace_path = (
        Path(trace_arg) if trace_arg else workspace / ".metis" / "runs" / run_id / "trace.jsonl"
    )
    journal_path = _journal_path(trace_path)
    for p in (trace_path, journal_path):
        if p.exists() and p.stat().st_size > 0:
            _bad(f"{p}: already exists (use --resume to continue that run, or another --trace)")
    registry = ToolRegistry.load()
    for problem in registry.plugin_errors:
        click.echo(f"metis run: warning: {problem}", err=True)
    gate = _gate(_MODES[mode], workspace, headless, settings)
    config = {
        "task": task,
        "provider": provider_name,
        "model": model,
        "scenario": scenario_path,
        "workspace": str(workspace),
        "max_turns": max_turns,
        "settings": list(settings),
    }
    provider = _build_provider(config)
    header = make_header(
        mode=_MODES[mode],
        tools=registry.names(),
        route=gate.route,
        headless_default=Decision.DENY,
        run_id=run_id,
        meta={"task": task, "provider": provider_name, "workspace": str(workspace)},
    )
    try:
        trace = TraceWriter(trace_path, header)
        journal = Journal.create(journal_path, run_id, config)
    except MetisRuntimeError as exc:
        _bad(str(exc))
    if not quiet:
        click.echo(f"metis run: {run_id} ({provider_name}); trace: {trace_path}", err=True)
    loop = AgentLoop(
        provider,
        registry,
        gate,
        ToolContext(workspace, _tool_env(), JobManager()),
        trace,
        journal=journal,
        dispatcher=_dispatcher(serial),
        observer=_Progress(quiet),
        config=LoopConfig(max_turns=max_turns),
    )
    _execute(loop, loop.run(task), trace_path, quiet)


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
    trace_arg: str | None, workspace_arg: str | None, quiet: bool, serial: bool
) -> NoReturn:
    if trace_arg is None:
        if workspace_arg is None:
            _bad("--resume needs --trace PATH (or --workspace DIR to pick its latest run)")
        trace_path = _latest_trace(Path(workspace_arg))
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
        max_turns = int(cfg["max_turns"])
        settings = tuple(str(s) for s in cfg.get("settings", ()))
        provider_name = str(cfg["provider"])
    except (KeyError, TypeError, ValueError) as exc:
        _bad(f"{journal_path}: the run entry lacks a usable config ({exc})")
    if not workspace.is_dir():
        _bad(f"{workspace}: the run's workspace is gone")
    header = trace.header
    registry = ToolRegistry.load()
    gate = _gate(header.mode, workspace, header.route is Route.HEADLESS, settings)
    provider = _build_provider(cfg, skip=len(scan.assistant_turns))
    if not quiet:
        click.echo(
            f"metis run: resuming {header.run_id} ({provider_name}); trace: {trace_path}", err=True
        )
    loop = AgentLoop(
        provider,
        registry,
        gate,
        ToolContext(workspace, _tool_env(), JobManager()),
        trace,
        journal=journal,
        dispatcher=_dispatcher(serial),
        observer=_Progress(quiet),
        config=LoopConfig(max_turns=max_turns),
    )
    _execute(loop, loop.resume(state, scan), trace_path, quiet)


if __name__ == "__main__":  # `python -m metis_cli._run` until `metis run` is registered
    run()
