"""`metis permissions`: ask the production gate about one call."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from metis_model.trace import InputError, Mode, Route, Source, ToolKind, decode_json
from metis_runtime._errors import ConfigError
from metis_runtime.permissions import (
    MODE_NAMES,
    Gate,
    GateDecision,
    Loaded,
    Policy,
    SettingsFile,
    hierarchy,
    load_hierarchy,
    named_files,
    parse_mode,
    settings_root,
    stricter_than_claude_code,
)
from metis_runtime.shell import analyze_command

from ._output import EXIT_OK, bad_input, emit_json

_KINDS: dict[str, ToolKind] = {
    "read": ToolKind.READ_ONLY,
    "ls": ToolKind.READ_ONLY,
    "glob": ToolKind.READ_ONLY,
    "grep": ToolKind.READ_ONLY,
    "notebookread": ToolKind.READ_ONLY,
    # WebFetch and WebSearch send data out: not read-only (ask in default,
    # deny in dontAsk; code.claude.com/docs/en/permission-modes).
    "webfetch": ToolKind.EXEC,
    "websearch": ToolKind.EXEC,
    "edit": ToolKind.EDIT,
    "write": ToolKind.EDIT,
    "multiedit": ToolKind.EDIT,
    "notebookedit": ToolKind.EDIT,
    # Agent/Task: spawning does not prompt; the sub-agent's own calls are
    # checked (code.claude.com/docs/en/permissions, "Agent"; the hook sees
    # them, with agent_id). Deny, ask and parameter rules still apply.
    "agent": ToolKind.READ_ONLY,
    "task": ToolKind.READ_ONLY,
    "exitplanmode": ToolKind.PLAN_CONTROL,
    "todowrite": ToolKind.PLAN_CONTROL,
}
_PATH_KEYS = ("file_path", "path", "notebook_path")


def infer_kind(tool: str, tool_input: dict[str, Any]) -> ToolKind:
    """The kind of a call as far as the CLI can tell; unknown tools are exec."""
    lower = tool.lower()
    if lower == "bash":
        command = tool_input.get("command")
        read_only = isinstance(command, str) and analyze_command(command).read_only
        return ToolKind.READ_ONLY if read_only else ToolKind.EXEC
    return _KINDS.get(lower, ToolKind.EXEC)


def input_paths(tool_input: dict[str, Any]) -> list[str]:
    paths = [v for k in _PATH_KEYS if isinstance(v := tool_input.get(k), str)]
    many = tool_input.get("paths")
    if isinstance(many, list):
        paths.extend(p for p in many if isinstance(p, str))
    return paths


def _choice(value: str, enum: Any, option: str) -> Any:
    try:
        return enum(value)
    except ValueError:
        choices = ", ".join(e.value for e in enum)
        bad_input(f"{option}: unknown value {value!r} (one of {choices})")


@click.group()
def permissions() -> None:
    """Ask the permission gate about a call."""


@permissions.command("check")
@click.option(
    "--settings",
    "settings_files",
    multiple=True,
    help="A settings.json file (repeatable). None: the real hierarchy (managed, "
    ".claude/settings.local.json, .claude/settings.json, ~/.claude/settings.json and the "
    ".metis/ equivalents).",
)
@click.option("--mode", default=None, help="Permission mode (default: the settings' defaultMode).")
@click.option("--tool", required=True, help="Tool name: bash, read, edit, webfetch, mcp__s__t...")
@click.option("--input", "input_json", default="{}", help="The tool input as a JSON object.")
@click.option(
    "--workspace",
    default=None,
    help="Workspace and project root (default: the first settings file's project root, "
    "else the current directory).",
)
@click.option(
    "--source",
    default=None,
    help="Source of every --settings file's rules (default: by location: managed files "
    "policy, project and local files project, user files persisted, others cli).",
)
@click.option("--kind", default=None, help="Tool kind (default: inferred from the tool).")
@click.option("--json", "as_json", is_flag=True, help="Print the decision as JSON.")
def check(
    settings_files: tuple[str, ...],
    mode: str | None,
    tool: str,
    input_json: str,
    workspace: str | None,
    source: str | None,
    kind: str | None,
    as_json: bool,
) -> None:
    """Print the decision, the deciding stage, the matching rule and the file it came from."""
    try:
        tool_input = decode_json(input_json)  # strict JSON
    except InputError as exc:
        bad_input(f"--input: {exc.message}")
    if not isinstance(tool_input, dict):
        bad_input("--input: must be a JSON object")
    src: Source | None = _choice(source, Source, "--source") if source is not None else None
    if workspace is not None:
        root = Path(workspace)
    elif settings_files:
        root = settings_root(Path(settings_files[0]))
    else:
        root = Path.cwd()
    if not root.is_dir():
        bad_input(f"--workspace: {root}: not a directory")
    files = _files(settings_files, root, src)
    try:
        loaded = load_hierarchy(files)
    except ConfigError as exc:
        bad_input(str(exc))
    policy = loaded.policy
    if mode is not None:
        try:
            chosen, auto = parse_mode(mode, "--mode")
        except ConfigError:
            choices = ", ".join(MODE_NAMES)
            bad_input(f"--mode: unknown value {mode!r} (one of {choices})")
    else:
        chosen, auto = loaded.mode or Mode.DEFAULT, loaded.auto
    if auto and policy.auto_disabled:
        bad_input("--mode: auto is disabled by disableAutoMode")
    call_kind: ToolKind = (
        _choice(kind, ToolKind, "--kind") if kind is not None else infer_kind(tool, tool_input)
    )
    try:
        gate = Gate(policy, chosen, root, Route.HEADLESS, auto=auto)
    except ConfigError as exc:
        bad_input(str(exc))
    command = tool_input.get("command") if isinstance(tool_input.get("command"), str) else None
    decision = gate.decide(tool, tool_input, call_kind, input_paths(tool_input), command)
    stricter = stricter_than_claude_code(decision, auto=auto)
    if as_json:
        emit_json(_payload(decision, policy, loaded, stricter))
    else:
        _print(decision, policy, loaded, stricter)
    raise SystemExit(EXIT_OK)


def _files(named: tuple[str, ...], root: Path, source: Source | None) -> list[SettingsFile]:
    """The files to read: the hierarchy, or the named files, each at its level
    when it lies at one of the real locations (else a command-line file)."""
    home = Path(os.path.expanduser("~"))
    if not named:
        return hierarchy(root, home)
    return named_files(named, root, home, source)


def _origin(decision: GateDecision, policy: Policy) -> str:
    if decision.rule is None:
        return ""
    for rule in policy.rules:
        if rule.recency == decision.rule.recency:
            return rule.origin
    return ""


def _payload(
    decision: GateDecision, policy: Policy, loaded: Loaded, stricter: list[str]
) -> dict[str, Any]:
    rule = decision.rule.model_dump(mode="json") if decision.rule is not None else None
    if rule is not None:
        rule["origin"] = _origin(decision, policy)
    return {
        "decision": decision.decision.value,
        "stage": decision.stage.value,
        "rule": rule,
        "facts": decision.facts.model_dump(mode="json"),
        "route": decision.route.value,
        "detail": decision.detail,
        "settings": [
            {"path": str(f.path), "level": f.level, "source": f.source.value} for f in loaded.files
        ],
        "notes": list(loaded.notes),
        "stricter_than_claude_code": stricter,
    }


def _print(decision: GateDecision, policy: Policy, loaded: Loaded, stricter: list[str]) -> None:
    click.echo(f"decision: {decision.decision.value}")
    click.echo(f"stage:    {decision.stage.value}")
    if decision.rule is not None:
        r = decision.rule
        where = _origin(decision, policy)
        click.echo(f"rule:     {r.pattern} ({r.behavior.value}, {r.source.value}; {where})")
    else:
        click.echo("rule:     none")
    facts = decision.facts
    click.echo(
        f"facts:    mode={facts.mode.value} kind={facts.kind.value} "
        f"protected={facts.protected} secret={facts.secret} in_scope={facts.in_scope}"
    )
    if decision.detail:
        click.echo(f"detail:   {decision.detail}")
    for f in loaded.files:
        click.echo(f"settings: {f.path} ({f.level}, {f.source.value})")
    if not loaded.files:
        click.echo("settings: none found")
    for note in loaded.notes:
        click.echo(f"note:     {note}")
    if stricter:
        click.echo("stricter than Claude Code: " + "; ".join(stricter))
