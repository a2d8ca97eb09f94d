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

The run itself is assembled by `metis_runtime.assemble` (scenario and
workspace, provider, settings and gate, agent tree, registry, MCP servers,
loop); this command parses the options, starts the witness between the
assembly's steps, and prints. The assembly's bad input (`ConfigError`) is
one line here and exit 2.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import uuid
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from typing import NoReturn
from typing import TypeVar

import click

from metis_runtime import ConfigError
from metis_runtime import LoopObserver
from metis_runtime import MetisRuntimeError
from metis_runtime import RunResult
from metis_runtime import assemble
from metis_runtime._failpoints import inherited_failpoint
from metis_runtime._layout import tree_dir
from metis_runtime._private import default_redactor
from metis_runtime.agents import guard_tree
from metis_runtime.assemble import DEFAULT_MAX_RETRIES
from metis_runtime.assemble import PROVIDERS
from metis_runtime.permissions import MODE_NAMES
from metis_runtime.providers import AssistantMessage
from metis_trace import EffectOutcome
from metis_trace import ResultStatus
from metis_trace import RunStatus
from metis_witness._launch import WITNESSED_ENV

from ._agents import budget_from_options
from ._agents import context_options
from ._agents import guard_options
from ._agents import limits_from_options
from ._output import count_option
from ._wire import WireOptionError
from ._wire import default_provider
from ._wire import wire_options
from ._wire import wire_settings

T = TypeVar("T")
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
STANDALONE = False  # set by `metis_cli.main` and `python -m metis_cli._run`
DEFAULT_SCENARIO = "edit_files"
STDIN = assemble.STDIN
_TRACE_NOT_STDIN = (
    "--trace -: a run writes its trace to a file and appends to it (its journal "
    "beside it, which --resume needs): give a path"
)


def _bad(message: str) -> NoReturn:
    click.echo(f"metis run: error: {message}", err=True)
    sys.exit(EXIT_BAD_INPUT)


def _or_bad(make: Callable[[], T]) -> T:
    """What the assembly makes; its bad input (ConfigError) is one line, exit 2."""
    try:
        return make()
    except ConfigError as exc:
        _bad(str(exc))


def _warn(text: str) -> None:
    click.echo(f"metis run: warning: {text}", err=True)


def _info(quiet: bool) -> assemble.Say:
    def say(text: str) -> None:
        if not quiet:
            click.echo(f"metis run: {text}", err=True)

    return say


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
    _or_bad(lambda: assemble.pass_env(pass_env))
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
    request = assemble.Request(
        provider=provider_name,
        model=model,
        mode=mode,
        headless=headless,
        max_turns=max_turns,
        call_timeout=call_timeout,
        detach_jobs=detach_jobs,
        max_retries=max_retries,
        settings=settings,
        settings_hierarchy=settings_hierarchy,
        ask_agent_tools=ask_agent_tools,
        pass_env=pass_env,
        mcp_configs=mcp_configs,
        strict_mcp_config=strict_mcp_config,
        limits=limits,
        budget=budget,
        wire=wire,
    )
    workspace = workspace_arg
    prepared = _or_bad(lambda: assemble.prepare_run(provider_name, scenario, workspace, task))
    witnessed_id = os.environ.pop(WITNESSED_ENV, None)  # set when the witness started us
    run_id = witnessed_id or uuid.uuid4().hex
    placed = _or_bad(lambda: assemble.place_run(prepared, trace_arg, run_id))
    if witnessed_id is None:
        # Standard input is read: the run the witness starts reads the kept copy.
        again = ["--scenario", placed.scenario_path] if scenario == STDIN else []
        _witnessed(witness_arg, placed.trace_path, prepared.workspace, run_id, again)
    made = _or_bad(lambda: assemble.assemble_run(request, placed, _warn, _info(quiet)))
    if not quiet:
        click.echo(f"metis run: {run_id} ({provider_name}); trace: {made.trace_path}", err=True)
    _execute(made, quiet, serial, as_json)


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
        workspace = Path(workspace_arg)
        trace_path = _or_bad(lambda: assemble.latest_trace(workspace))
    elif trace_arg == STDIN:
        _bad(_TRACE_NOT_STDIN)
    else:
        trace_path = Path(trace_arg)
    reopened = _or_bad(lambda: assemble.reopen_run(trace_path))
    header = reopened.trace.header
    if witness_arg is not None and os.environ.pop(WITNESSED_ENV, None) is None:
        reopened.trace.close()  # the witness starts this resume again, under it
        reopened.journal.close()
        _witnessed(witness_arg, trace_path, reopened.workspace, header.run_id)
    made = _or_bad(lambda: assemble.assemble_resume(reopened, _warn, _info(quiet)))
    if not quiet:
        click.echo(
            f"metis run: resuming {header.run_id} ({made.provider_name}); trace: {trace_path}",
            err=True,
        )
    _execute(made, quiet, serial, as_json)


def _execute(made: assemble.Assembly, quiet: bool, serial: bool, as_json: bool) -> NoReturn:
    """Drive the assembled run to its end and print its outcome (the exit status)."""
    loop = _or_bad(lambda: made.loop(_Progress(quiet), serial=serial))
    # Every process the run starts dies with it, even on SIGKILL (the tree's
    # mark, subreaper, cgroup and shepherd: agents/_process.py). Only where
    # `metis run` is the process's program: it changes the whole process
    # (a subreaper, in a cgroup of its own), which a host embedding the
    # command (a test's CliRunner) must not inherit.
    if STANDALONE:
        guard_tree()
    trace_path, supervisor = made.trace_path, made.supervisor
    try:
        result: RunResult = assemble.run_to_end(loop, made.start(loop), supervisor, made.mcp)
    except (KeyboardInterrupt, asyncio.CancelledError):
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
    spawned = supervisor is not None and bool(supervisor.children)
    code = EXIT_OK if result.status is RunStatus.COMPLETED else EXIT_FAILED
    if as_json:
        click.echo(json.dumps(_summary(result, trace_path, spawned, code), indent=2))
        sys.exit(code)
    if result.status is RunStatus.COMPLETED:
        if result.text:
            click.echo(result.text)
        if not quiet:
            where = f"; agent tree: {tree_dir(trace_path)}" if spawned else ""
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

    from metis_runtime._input import input_lines
    from metis_runtime._input import read_input_text
    from metis_trace import Result
    from metis_trace import read_trace_numbered

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
        "journal": str(assemble.journal_path(trace_path)),
        "agent_tree": str(tree_dir(trace_path)) if spawned else None,
        "exit": code,
    }


if __name__ == "__main__":  # `python -m metis_cli._run` until `metis run` is registered
    STANDALONE = True
    run()
