"""`metis plan` and `metis tasks`: the plan path from the command line (specs/plan.md).

Exit codes: 0 the turn completed, or paused waiting for an answer (the
dialog to answer is printed); 1 it failed, was refused or rejected (or, for
`validate`, the framework is invalid); 2 bad input: a malformed framework,
manifest, dialog or option, a one-line error naming the place.

With no API key (or `--provider replay`) proposals come from a replay
scenario (default: the shipped `notes`, whose files are seeded into an empty
workspace); the position in its recording is kept in the workspace's plan
store, so successive turns continue it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import getpass
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NoReturn

import click

from metis_trace import (
    DEFAULT_STEP_CAP,
    HARD_STEP_MAX,
    InputError,
    Mode,
    ResumeAnswer,
    Route,
    TaskRef,
    parse_framework,
)

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
PLAN_SCENARIOS = Path(__file__).resolve().parent.parent / "metis_runtime" / "scenarios" / "plan"
DEFAULT_SCENARIO = "notes"
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


# --- the provider ---------------------------------------------------------------------


def _provider_name(given: str | None) -> str:
    if given:
        return given
    if os.environ.get("ANTHROPIC_API_KEY"):
        return "anthropic"
    if os.environ.get("OPENAI_API_KEY"):
        return "openai"
    return "replay"


def _scenario_path(where: str, spec: str) -> Path:
    shipped = PLAN_SCENARIOS / f"{spec}.yaml"
    if shipped.is_file():
        return shipped
    path = Path(spec)
    if not path.is_file():
        names = ", ".join(sorted(p.stem for p in PLAN_SCENARIOS.glob("*.yaml")))
        _bad(where, f"--scenario {spec!r}: no such plan scenario (shipped: {names}) or file")
    return path.resolve()


def _seed(where: str, workspace: Path, files: Mapping[str, str]) -> None:
    """Create the scenario's files that the workspace does not have yet; the
    ones it has (a manifest you changed, say) are left as they are."""
    from metis_runtime.tools import atomic_write

    for name, content in files.items():
        target = workspace / name
        if target.exists() or target.is_symlink():
            continue
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, content.encode("utf-8"))
        except OSError as exc:
            _bad(where, f"{target}: cannot write ({exc.strerror or exc})")


class _Provider:
    """The turn's provider; for a replay, where the recording has got to."""

    def __init__(self, where: str, name: str, model: str | None, scenario: str, workspace: Path):
        from metis_runtime.plan import PlanStore
        from metis_runtime.providers import (
            AnthropicProvider,
            Cassette,
            OpenAIChatProvider,
            ReplayProvider,
            load_scenario,
        )

        from ._wire import DEFAULT_MODELS

        self.name = name
        self.replay: Any = None
        self.key = ""
        if name == "replay":
            path = _scenario_path(where, scenario)
            try:
                loaded = load_scenario(path)
            except Exception as exc:  # a bad scenario file is bad input
                _bad(where, str(exc))
            _seed(where, workspace, loaded.workspace_files)
            self.key = str(path)
            with PlanStore(workspace) as store:
                self.start = store.replay_position(self.key)
            rest = loaded.cassette.interactions[self.start :]
            self.replay = ReplayProvider(Cassette(loaded.cassette.path, rest))
            self.provider: Any = self.replay
        elif name == "anthropic":
            self.provider = AnthropicProvider(model or DEFAULT_MODELS["anthropic"])
        elif name == "openai":
            self.provider = OpenAIChatProvider(model or DEFAULT_MODELS["openai"])
        else:
            _bad(where, f"--provider {name!r}: one of replay, anthropic, openai")

    @property
    def live(self) -> bool:
        return self.name != "replay"

    def done(self, workspace: Path) -> None:
        if self.replay is None:
            return
        from metis_runtime.plan import PlanStore

        used = len(self.replay.cassette.interactions) - self.replay.remaining
        with PlanStore(workspace) as store:
            store.set_replay_position(self.key, self.start + used)


def _runtime(workspace: Path, provider: Any, settings: tuple[str, ...], serial: bool) -> Any:
    from metis_runtime import MetisRuntimeError
    from metis_runtime.agents import tool_env
    from metis_runtime.permissions import Gate, Policy
    from metis_runtime.plan import PlanRuntime
    from metis_runtime.tools import ToolRegistry
    from metis_trace import Decision, Source

    policy = Policy()
    try:
        for path in settings:
            policy.load(path, Source.CLI)
    except MetisRuntimeError as exc:
        _bad("plan", str(exc))

    def gate_for(mode: Mode, route: Route) -> Any:
        return Gate(policy, mode, workspace, route, headless_default=Decision.DENY)

    return PlanRuntime(
        workspace, ToolRegistry.load(), gate_for, provider=provider, env=tool_env(), serial=serial
    )


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
    from metis_trace import PathRecord, read_turn_log

    try:
        _, records, _ = read_turn_log(Path(outcome.turn_log).read_text().splitlines())
    except (OSError, InputError):
        return
    for r in records:
        if isinstance(r, PathRecord):
            why = f" ({r.reason.value})" if r.reason else ""
            click.echo(f"  path {r.path.value}: {r.outcome.value}{why}", err=True)


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
    from metis_runtime._input import decode_text, read_input_bytes
    from metis_runtime._yaml import load_yaml
    from metis_runtime.plan import PlanRuntime
    from metis_runtime.plan._rules import validate
    from metis_trace import decode_json

    where = "plan validate"
    cap = _cap(where, max_steps)
    try:
        text = decode_text(read_input_bytes(file), str(file))
        data = (
            decode_json(text, source=str(file))
            if file.suffix == ".json"
            else load_yaml(text, source=str(file))
        )
    except InputError as exc:
        _bad(where, exc.describe(str(file)))
    try:
        framework = parse_framework(data, source=str(file))
    except ValueError as exc:
        _bad(where, f"{file}: {exc}")
    ws = Path(workspace).resolve()
    catalog = PlanRuntime(ws, _registry(), _no_gate, provider=None, env={}).catalog()
    for problem in catalog.problems:
        click.echo(f"metis {where}: warning: {problem}", err=True)
    failures = validate(framework, catalog.infos, cap)
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


def _no_gate(mode: Mode, route: Route) -> Any:
    raise AssertionError("validation runs nothing")


def _registry() -> Any:
    from metis_runtime.tools import ToolRegistry

    return ToolRegistry.load()


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
    from metis_runtime.plan import Coordinates, TurnOptions

    where = "plan run"
    if not request.strip():
        _bad(where, "the request is empty")
    ws = _workspace(where, workspace)
    who = _owner(owner)
    chosen = _Provider(where, _provider_name(provider), model, scenario, ws)
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
    from metis_runtime.plan import Coordinates, dialog_path, load_dialog

    where = "plan resume"
    given = _pairs(where, "--input", inputs)
    if sum((approve, reject, bool(given))) != 1:
        _bad(where, "give exactly one of --approve, --reject or --input NAME=VALUE")
    answer = (
        ResumeAnswer.APPROVE if approve else ResumeAnswer.REJECT if reject else ResumeAnswer.INPUT
    )
    ws = _workspace(where, workspace)
    who = _owner(owner)
    path = _last_dialog(where, ws, who) if dialog == "last" else dialog_path(ws, dialog)
    try:
        found = load_dialog(path)
    except MetisRuntimeError as exc:
        _bad(where, str(exc))
    chosen = _Provider(where, _provider_name(provider), model, scenario, ws)
    runtime = _runtime(ws, chosen.provider, settings, serial)
    try:
        outcome = asyncio.run(
            runtime.resume(found, answer, given, Coordinates(who, who, channel, conversation))
        )
    except MetisRuntimeError as exc:
        _bad(where, str(exc))
    chosen.done(ws)
    _report(where, outcome, as_json)


def _last_dialog(where: str, workspace: Path, owner: str) -> Path:
    """The newest unanswered dialog of `owner` in the workspace."""
    from metis_runtime import MetisRuntimeError
    from metis_runtime.plan import load_dialog
    from metis_runtime.plan._state import dialogs_dir

    best: tuple[str, Path] | None = None
    for path in sorted(dialogs_dir(workspace).glob("*.json")):
        try:
            d = load_dialog(path)
        except MetisRuntimeError:
            continue
        if d.owner == owner and not d.answered and (best is None or d.created_at >= best[0]):
            best = (d.created_at, path)
    if best is None:
        _bad(where, f"{workspace}: no dialog of {owner} is waiting for an answer")
    return best[1]


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
    from metis_runtime.plan import PlanStore, intent_key

    ws = _workspace("plan feedback", workspace)
    with PlanStore(ws) as store:
        row = store.turn(turn)
        if row is None:
            _bad("plan feedback", f"{ws}: no finished turn {turn!r}")
        key = row["intent"]
        if not store.set_champion(key, good):
            _bad("plan feedback", f"turn {turn}: its cluster {key!r} has no L1 plan")
    click.echo(f"{key}: {'champion' if good else 'shadow'}")
    _ = intent_key


@plan.command("cache")
@click.option("--workspace", required=True)
@click.option("--bump-epoch", is_flag=True, help="Start a new routing epoch: every entry misses.")
@click.option("--json", "as_json", is_flag=True)
def cache_cmd(workspace: str, bump_epoch: bool, as_json: bool) -> None:
    """List the plan cache (L0 and L1 entries, signatures, epoch)."""
    from metis_runtime.plan import PlanStore

    ws = _workspace("plan cache", workspace)
    with PlanStore(ws) as store:
        if bump_epoch:
            click.echo(f"routing epoch {store.bump_epoch()}", err=True)
        rows = [
            {
                "path": p.path,
                "key": p.key,
                "steps": len(p.framework.steps),
                "champion": p.champion,
                "runs": p.runs,
                "epoch": p.signatures.epoch,
                "executors": p.signatures.executors,
                "registered_by": p.registered_by,
            }
            for p in store.plans()
        ]
        epoch = store.epoch
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
    from metis_runtime.plan import PlanStore, new_task, next_due

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
    from metis_runtime.plan import PlanStore, next_due

    ws = _workspace("tasks list", workspace)
    with PlanStore(ws) as store:
        rows: list[dict[str, Any]] = [
            {
                "id": t.id,
                "owner": t.owner,
                "channel": t.channel,
                "mode": t.mode,
                "schedule": t.schedule,
                "command": t.command,
                "next": next_due(t).isoformat(),
                "runs": [{"turn": r[0], "at": r[1], "outcome": r[2]} for r in store.runs(t.id)],
            }
            for t in store.tasks(owner)
        ]
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
    from metis_runtime.plan import Coordinates, PlanStore, TurnOptions, due_tasks

    where = "tasks run-due"
    ws = _workspace(where, workspace)
    now = _local_now(now_text)
    with PlanStore(ws) as store:
        due = due_tasks(store, now)
    results = []
    for task in due:
        chosen = _Provider(where, _provider_name(provider), model, scenario, ws)
        runtime = _runtime(ws, chosen.provider, settings, False)
        options = TurnOptions(
            mode=Mode(task.mode),
            route=Route.BACKGROUND,
            task=TaskRef(id=task.id, owner=task.owner, channel=task.channel, mode=Mode(task.mode)),
            live=chosen.live,
        )
        who = Coordinates(task.owner, "scheduler", task.channel, task.conversation)
        outcome = _run_turn(runtime, task.command, who, options)
        chosen.done(ws)
        with PlanStore(ws) as store:
            state = outcome.state + (f" (dialog {outcome.dialog})" if outcome.dialog else "")
            store.fired(task.id, outcome.turn_id, now.isoformat(), state)
        results.append({"task": task.id, "turn": outcome.turn_id, "outcome": state})
    if as_json:
        click.echo(json.dumps(results, indent=2))
    else:
        for r in results:
            click.echo(f"{r['task']}: turn {r['turn']}: {r['outcome']}")
        if not results:
            click.echo("no task is due")
    sys.exit(EXIT_OK)
