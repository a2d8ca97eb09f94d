"""`metis permissions`: ask the production gate about one call."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click

from metis_runtime._errors import ConfigError
from metis_runtime.permissions import MODE_NAMES
from metis_runtime.permissions import GateDecision
from metis_runtime.permissions import Loaded
from metis_runtime.permissions import Policy
from metis_runtime.permissions import SettingsFile
from metis_runtime.permissions import hierarchy
from metis_runtime.permissions import load_hierarchy
from metis_runtime.permissions import named_files
from metis_runtime.permissions import parse_mode
from metis_runtime.permissions import settings_root
from metis_runtime.permissions import stricter_than_claude_code
from metis_trace import InputError
from metis_trace import Mode
from metis_trace import Source
from metis_trace import ToolKind
from metis_trace import decode_json

from ._call_decision import PATH_KEYS
from ._call_decision import decide_call
from ._call_decision import infer_kind
from ._call_decision import input_paths
from ._output import EXIT_OK
from ._output import bad_input
from ._output import emit_json

__all__ = ["check", "infer_kind", "input_paths", "permissions"]


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
    _refuse_nul(tool_input, settings_files, workspace)
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
    try:  # the hook decides through the same call (`_call_decision`)
        decision = decide_call(policy, chosen, root, tool, tool_input, auto=auto, kind=call_kind)
    except ConfigError as exc:
        bad_input(str(exc))
    stricter = stricter_than_claude_code(decision, auto=auto, policy=policy)
    if as_json:
        emit_json(_payload(decision, policy, loaded, stricter))
    else:
        _print(decision, policy, loaded, stricter)
    raise SystemExit(EXIT_OK)


def _refuse_nul(
    tool_input: dict[str, Any], settings_files: tuple[str, ...], workspace: str | None
) -> None:
    """No file name holds a NUL byte (the runtime's tools refuse one too,
    tools/_files.py): one line naming the field, not `realpath`'s ValueError."""
    for key in PATH_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and "\x00" in value:
            bad_input(f"--input: field '{key}' contains a NUL byte")
    many = tool_input.get("paths")
    if isinstance(many, list):
        for i, value in enumerate(many):
            if isinstance(value, str) and "\x00" in value:
                bad_input(f"--input: field 'paths[{i}]' contains a NUL byte")
    for i, name in enumerate(settings_files):
        if "\x00" in name:
            bad_input(f"--settings #{i + 1}: the path contains a NUL byte")
    if workspace is not None and "\x00" in workspace:
        bad_input("--workspace: the path contains a NUL byte")


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
