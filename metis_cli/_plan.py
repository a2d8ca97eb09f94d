"""`metis plan` and `metis tasks`: the plan path from the command line (specs/plan.md).

Exit codes: 0 the turn completed, or paused waiting for an answer (the
dialog to answer is printed); 1 it failed, was refused or rejected (or, for
`validate`, the framework is invalid); 2 bad input: a malformed framework,
manifest, dialog or option, a one-line error naming the place.

With no API key (or `--provider replay`) proposals come from a replay
scenario (default: the shipped `notes`), which successive turns continue
(`metis_runtime.plan._provider`). What each command does is in
`metis_runtime.plan` (`_commands`, `_provider`); this module parses the
options and prints.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import getpass
import json
import sys
from pathlib import Path
from typing import Any
from typing import NoReturn

import click

from metis_trace import DEFAULT_STEP_CAP
from metis_trace import HARD_STEP_MAX
from metis_trace import Mode
from metis_trace import ResumeAnswer

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
DEFAULT_SCENARIO = "notes"  # metis_runtime.plan.DEFAULT_SCENARIO (not imported: --help stays light)
_MODES = {m.value: m for m in Mode}


def _bad(where: str, message: str) -> NoReturn:
    click.echo(f"metis {where}: error: {message}", err=True)
    sys.exit(EXIT_BAD_INPUT)


def _pairs(where: str, option: str, values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for raw in values:
        name, sep, value = raw.partition("=")
        if not sep or not name.strip():
            _bad(where, f"{option} {raw!r}: expected NAME=VALUE")
        out[name.strip()] = value
    return out


def _owner(given: str | None) -> str:
    if given:
        return given
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "local"


def _workspace(where: str, raw: str) -> Path:
    path = Path(raw).expanduser()
    if path.exists() and not path.is_dir():
        _bad(where, f"--workspace {raw}: not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _bad(where, f"--workspace {raw}: cannot create ({exc.strerror or exc})")
    return path.resolve()


def _cap(where: str, value: int) -> int:
    if not 1 <= value <= HARD_STEP_MAX:
        _bad(where, f"--max-steps {value}: must be 1-{HARD_STEP_MAX} (the hard maximum)")
    return value


def _mode(where: str, value: str) -> Mode:
    if value not in _MODES:
        _bad(where, f"--mode {value!r}: one of {', '.join(_MODES)}")
    return _MODES[value]


# --- the provider and the runtime ------------------------------------------------------


def _provider(where: str, given: str | None, model: str | None, scenario: str, ws: Path) -> Any:
    """The turn's provider (`metis_runtime.plan.TurnProvider`); bad input exits 2."""
    from metis_runtime import MetisRuntimeError
    from metis_runtime.assemble import DEFAULT_MODELS
    from metis_runtime.plan import TurnProvider
    from metis_runtime.plan import provider_name

    name = provider_name(given)
    try:
        return TurnProvider(name, model or DEFAULT_MODELS.get(name), scenario, ws)
    except MetisRuntimeError as exc:
        _bad(where, str(exc))


def _runtime(workspace: Path, provider: Any, settings: tuple[str, ...], serial: bool) -> Any:
    from metis_runtime import MetisRuntimeError
    from metis_runtime.plan import plan_runtime

    try:
        return plan_runtime(workspace, provider, settings, serial=serial)
    except MetisRuntimeError as exc:
        _bad("plan", str(exc))


def _report(where: str, outcome: Any, as_json: bool) -> NoReturn:
    for problem in outcome.problems:
        click.echo(f"metis {where}: warning: {problem}", err=True)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "turn": outcome.turn_id,
                    "state": outcome.state,
                    "path": outcome.path,
                    "dialog": outcome.dialog,
                    "answer": outcome.answer,
                    "turn_log": str(outcome.turn_log),
                },
                indent=2,
            )
        )
    else:
        click.echo(outcome.answer)
        click.echo(
            f"turn {outcome.turn_id}: {outcome.state} (path {outcome.path or '-'}); "
            f"turn log: {outcome.turn_log}",
            err=True,
        )
    sys.exit(EXIT_OK if outcome.state in ("completed", "paused") else EXIT_FAILED)


def _path_line(outcome: Any) -> None:
    """What each path said (hit, miss and why), from the turn log."""
    from metis_runtime.plan import path_outcomes

    for line in path_outcomes(outcome):
        click.echo(f"  {line}", err=True)


def _run_turn(runtime: Any, request: str, who: Any, options: Any) -> Any:
    from metis_runtime import MetisRuntimeError

    try:
        return asyncio.run(runtime.run(request, who, options))
    except MetisRuntimeError as exc:
        _bad("plan run", str(exc))


# --- commands -------------------------------------------------------------------------


@click.group("plan")
def plan() -> None:
    """The plan path: typed frameworks, validated, guarded and run step by step
    through the same gate and dispatcher as the agent loop (specs/plan.md)."""


@plan.command("validate")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--workspace", default=".", show_default=True, help="Whose catalog (manifests).")
@click.option("--max-steps", default=DEFAULT_STEP_CAP, show_default=True, type=int)
@click.option("--json", "as_json", is_flag=True)
def validate_cmd(file: Path, workspace: str, max_steps: int, as_json: bool) -> None:
    """Check a framework (JSON or YAML) against the workspace's catalog.

    Exit 0 when valid, 1 when not (each failure with its class and step), 2
    when the file is malformed."""
    from metis_runtime import MetisRuntimeError
    from metis_runtime.plan import check_framework
    from metis_runtime.plan import read_framework

    where = "plan validate"
    cap = _cap(where, max_steps)
    try:
        framework = read_framework(file)
    except MetisRuntimeError as exc:
        _bad(where, str(exc))
    failures, catalog = check_framework(framework, Path(workspace).resolve(), cap)
    for problem in catalog.problems:
        click.echo(f"metis {where}: warning: {problem}", err=True)
    if as_json:
        click.echo(
            json.dumps(
                {"valid": not failures, "failures": [f.model_dump(mode="json") for f in failures]},
                indent=2,
            )
        )
    elif not failures:
        click.echo(f"{file}: valid ({len(framework.steps)} steps)")
    else:
        for f in failures:
            step = f"step {f.step}" if f.step is not None else "framework"
            click.echo(f"{file}: {step}: {f.cls.value}: {f.message}")
    sys.exit(EXIT_OK if not failures else EXIT_FAILED)


_WHO = [
    click.option("--owner", help="The owning user (default: the login name)."),
    click.option("--channel", default="cli", show_default=True),
    click.option("--conversation", default="default", show_default=True),
]


def _who(f: Any) -> Any:
    for option in reversed(_WHO):
        f = option(f)
    return f


@plan.command("run")
@click.argument("request")
@click.option("--workspace", required=True)
@click.option("--provider", type=click.Choice(("replay", "anthropic", "openai")))
@click.option("--model")
@click.option("--scenario", default=DEFAULT_SCENARIO, show_default=True, help="Replay scenario.")
@_who
@click.option("--mode", default="default", show_default=True)
@click.option("--settings", multiple=True, help="A permission settings file (repeatable).")
@click.option("--max-steps", default=DEFAULT_STEP_CAP, show_default=True, type=int)
@click.option("--target", "targets", multiple=True, help="An explicit target, NAME=VALUE.")
@click.option("--input", "inputs", multiple=True, help="A filler value, NAME=VALUE.")
@click.option("--serial", is_flag=True, help="Dispatch one call at a time.")
@click.option("--json", "as_json", is_flag=True)
def run_cmd(
    request: str,
    workspace: str,
    provider: str | None,
    model: str | None,
    scenario: str,
    owner: str | None,
    channel: str,
    conversation: str,
    mode: str,
    settings: tuple[str, ...],
    max_steps: int,
    targets: tuple[str, ...],
    inputs: tuple[str, ...],
    serial: bool,
    as_json: bool,
) -> None:
    """Answer REQUEST with a plan: a deterministic route, L0, L1 or the engine."""
    from metis_runtime.plan import Coordinates
    from metis_runtime.plan import TurnOptions

    where = "plan run"
    if not request.strip():
        _bad(where, "the request is empty")
    ws = _workspace(where, workspace)
    who = _owner(owner)
    chosen = _provider(where, provider, model, scenario, ws)
    runtime = _runtime(ws, chosen.provider, settings, serial)
    options = TurnOptions(
        mode=_mode(where, mode),
        cap=_cap(where, max_steps),
        targets=_pairs(where, "--target", targets),
        inputs=_pairs(where, "--input", inputs),
        live=chosen.live,
    )
    outcome = _run_turn(runtime, request, Coordinates(who, who, channel, conversation), options)
    chosen.done(ws)
    if not as_json:
        _path_line(outcome)
    _report(where, outcome, as_json)


@plan.command("resume")
@click.argument("dialog")
@click.option("--workspace", required=True)
@click.option("--approve", is_flag=True)
@click.option("--reject", is_flag=True)
@click.option("--input", "inputs", multiple=True, help="A missing value, NAME=VALUE.")
@click.option("--provider", type=click.Choice(("replay", "anthropic", "openai")))
@click.option("--model")
@click.option("--scenario", default=DEFAULT_SCENARIO, show_default=True)
@_who
@click.option("--settings", multiple=True)
@click.option("--serial", is_flag=True)
@click.option("--json", "as_json", is_flag=True)
def resume_cmd(
    dialog: str,
    workspace: str,
    approve: bool,
    reject: bool,
    inputs: tuple[str, ...],
    provider: str | None,
    model: str | None,
    scenario: str,
    owner: str | None,
    channel: str,
    conversation: str,
    settings: tuple[str, ...],
    serial: bool,
    as_json: bool,
) -> None:
    """Answer a paused turn's DIALOG (its id, its file, or `last`) and continue
    the turn from its done state."""
    from metis_runtime import MetisRuntimeError
    from metis_runtime.plan import Coordinates
    from metis_runtime.plan import dialog_path
    from metis_runtime.plan import last_dialog
    from metis_runtime.plan import load_dialog

    where = "plan resume"
    given = _pairs(where, "--input", inputs)
    if sum((approve, reject, bool(given))) != 1:
        _bad(where, "give exactly one of --approve, --reject or --input NAME=VALUE")
    answer = (
        ResumeAnswer.APPROVE if approve else ResumeAnswer.REJECT if reject else ResumeAnswer.INPUT
    )
    ws = _workspace(where, workspace)
    who = _owner(owner)
    try:
        found = load_dialog(last_dialog(ws, who) if dialog == "last" else dialog_path(ws, dialog))
    except MetisRuntimeError as exc:
        _bad(where, str(exc))
    chosen = _provider(where, provider, model, scenario, ws)
    runtime = _runtime(ws, chosen.provider, settings, serial)
    try:
        outcome = asyncio.run(
            runtime.resume(found, answer, given, Coordinates(who, who, channel, conversation))
        )
    except MetisRuntimeError as exc:
        _bad(where, str(exc))
    chosen.done(ws)
    _report(where, outcome, as_json)


@plan.command("digest")
@click.argument("manifest", type=click.Path(path_type=Path))
@click.option("--write", is_flag=True, help="Write the digest into the manifest (sign it).")
def digest_cmd(manifest: Path, write: bool) -> None:
    """Print the digest MANIFEST must carry (over its fields and its program);
    with --write, sign it (a refused manifest is one whose digest does not match)."""
    from metis_runtime import MetisRuntimeError
    from metis_runtime.plan import sign_manifest

    from ._params import write_named

    try:
        digest, data = sign_manifest(manifest)
    except MetisRuntimeError as exc:
        _bad("plan digest", str(exc))
    if write:
        if manifest.suffix == ".json":
            text = json.dumps(data, indent=2) + "\n"
        else:
            import yaml

            text = yaml.safe_dump(data, sort_keys=False)
        write_named(manifest, text.encode("utf-8"), "plan digest --write")
        click.echo(f"{manifest}: signed {digest}")
    else:
        click.echo(digest)


@plan.command("feedback")
@click.argument("turn")
@click.option("--workspace", required=True)
@click.option("--good/--bad", "good", default=True)
def feedback_cmd(turn: str, workspace: str, good: bool) -> None:
    """Positive feedback makes the turn's L1 shadow plan its cluster's champion
    (negative feedback demotes it). A routing preference, never a consent."""
    from metis_runtime import MetisRuntimeError
    from metis_runtime.plan import set_feedback

    ws = _workspace("plan feedback", workspace)
    try:
        key = set_feedback(ws, turn, good)
    except MetisRuntimeError as exc:
        _bad("plan feedback", str(exc))
    click.echo(f"{key}: {'champion' if good else 'shadow'}")


@plan.command("cache")
@click.option("--workspace", required=True)
@click.option("--bump-epoch", is_flag=True, help="Start a new routing epoch: every entry misses.")
@click.option("--json", "as_json", is_flag=True)
def cache_cmd(workspace: str, bump_epoch: bool, as_json: bool) -> None:
    """List the plan cache (L0 and L1 entries, signatures, epoch)."""
    from metis_runtime.plan import cache_listing

    bumped, epoch, rows = cache_listing(_workspace("plan cache", workspace), bump_epoch)
    if bumped is not None:
        click.echo(f"routing epoch {bumped}", err=True)
    if as_json:
        click.echo(json.dumps({"epoch": epoch, "plans": rows}, indent=2))
        return
    from ._output import table

    click.echo(f"routing epoch {epoch}")
    click.echo(
        table(
            ["path", "key", "steps", "champion", "runs", "epoch", "by"],
            [
                (
                    r["path"],
                    r["key"],
                    r["steps"],
                    r["champion"],
                    r["runs"],
                    r["epoch"],
                    r["registered_by"],
                )
                for r in rows
            ],
        )
    )


# --- tasks ------------------------------------------------------------------------------


@click.group("tasks")
def tasks() -> None:
    """Scheduled tasks: persistent requests run as new turns of their owner."""


@tasks.command("add")
@click.argument("command")
@click.option("--workspace", required=True)
@click.option("--schedule", required=True, help="daily@HH:MM, every Nm or every Nh.")
@_who
@click.option("--mode", default="default", show_default=True, help="The task's authority.")
def tasks_add(
    command: str,
    workspace: str,
    schedule: str,
    owner: str | None,
    channel: str,
    conversation: str,
    mode: str,
) -> None:
    """Add a task; an ambiguous schedule is refused naming what is missing."""
    from metis_runtime import MetisRuntimeError
    from metis_runtime.plan import PlanStore
    from metis_runtime.plan import new_task
    from metis_runtime.plan import next_due

    where = "tasks add"
    ws = _workspace(where, workspace)
    with PlanStore(ws) as store:
        try:
            task = new_task(
                store,
                owner=_owner(owner),
                channel=channel,
                conversation=conversation,
                mode=_mode(where, mode).value,
                schedule=schedule,
                command=command,
                now=_local_now(None),
            )
        except MetisRuntimeError as exc:
            _bad(where, f"--schedule {exc}")
    click.echo(
        f"{task.id}: {task.schedule} {task.command!r}; next run {next_due(task).isoformat()}"
    )


@tasks.command("list")
@click.option("--workspace", required=True)
@click.option("--owner")
@click.option("--json", "as_json", is_flag=True)
def tasks_list(workspace: str, owner: str | None, as_json: bool) -> None:
    """The tasks, their next run and their outcome history."""
    from metis_runtime.plan import task_rows

    rows = task_rows(_workspace("tasks list", workspace), owner)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    from ._output import table

    click.echo(
        table(
            ["id", "owner", "schedule", "next", "last outcome", "command"],
            [
                (
                    r["id"],
                    r["owner"],
                    r["schedule"],
                    r["next"],
                    r["runs"][-1]["outcome"] if r["runs"] else "-",
                    r["command"],
                )
                for r in rows
            ],
        )
    )


def _local_now(raw: str | None) -> dt.datetime:
    if raw is None:
        return dt.datetime.now().astimezone().replace(microsecond=0, tzinfo=None)
    try:
        return dt.datetime.fromisoformat(raw).replace(tzinfo=None)
    except ValueError:
        _bad("tasks run-due", f"--now {raw!r}: not an ISO date and time (2025-01-06T08:00)")


@tasks.command("run-due")
@click.option("--workspace", required=True)
@click.option("--now", "now_text", help="The time to run at (ISO; default: now, local).")
@click.option("--provider", type=click.Choice(("replay", "anthropic", "openai")))
@click.option("--model")
@click.option("--scenario", default=DEFAULT_SCENARIO, show_default=True)
@click.option("--settings", multiple=True)
@click.option("--json", "as_json", is_flag=True)
def tasks_run_due(
    workspace: str,
    now_text: str | None,
    provider: str | None,
    model: str | None,
    scenario: str,
    settings: tuple[str, ...],
    as_json: bool,
) -> None:
    """Fire every due task once, each as a new turn of its owner with the
    task's own authority (mode, channel), whoever runs this."""
    from metis_runtime.plan import PlanStore
    from metis_runtime.plan import due_tasks
    from metis_runtime.plan import record_fired
    from metis_runtime.plan import task_turn

    where = "tasks run-due"
    ws = _workspace(where, workspace)
    now = _local_now(now_text)
    with PlanStore(ws) as store:
        due = due_tasks(store, now)
    results = []
    for task in due:
        chosen = _provider(where, provider, model, scenario, ws)
        runtime = _runtime(ws, chosen.provider, settings, False)
        who, options = task_turn(task, chosen.live)
        outcome = _run_turn(runtime, task.command, who, options)
        chosen.done(ws)
        state = record_fired(ws, task, outcome, now)
        results.append({"task": task.id, "turn": outcome.turn_id, "outcome": state})
    if as_json:
        click.echo(json.dumps(results, indent=2))
    else:
        for r in results:
            click.echo(f"{r['task']}: turn {r['turn']}: {r['outcome']}")
        if not results:
            click.echo("no task is due")
    sys.exit(EXIT_OK)
