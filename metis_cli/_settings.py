"""`metis settings check [FILE ...]`: a static reading of a settings
hierarchy (issue 25), with the model's reference matcher of Claude Code's
documented semantics (`metis_model._settings_lint`).

Exit codes: 0 no finding, 1 findings, 2 a file that cannot be read.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from metis_model._settings_lint import SettingsSource, check_settings
from metis_model.trace import InputError, decode_json
from metis_runtime._input import read_input_text
from metis_runtime.permissions import SettingsFile, hierarchy, named_files

from ._output import EXIT_OK, EXIT_VIOLATION, bad_input, emit_json


@click.group()
def settings() -> None:
    """Analyse Claude Code / metis settings files."""


def _source(f: SettingsFile) -> SettingsSource:
    try:
        data = decode_json(read_input_text(f.path), source=str(f.path))
    except InputError as exc:
        bad_input(exc.describe(str(f.path)))
    if not isinstance(data, dict):
        bad_input(f"{f.path}: settings must be a JSON object")
    perms = data.get("permissions", {})
    if not isinstance(perms, dict):
        bad_input(f"{f.path}: permissions: must be an object")
    lists: dict[str, tuple[str, ...]] = {}
    for name in ("allow", "ask", "deny", "additionalDirectories"):
        value = perms.get(name, [])
        if not isinstance(value, list):
            bad_input(f"{f.path}: permissions.{name}: must be a list")
        lists[name] = tuple(value)
    dirs = tuple(str(d) for d in lists.pop("additionalDirectories") if isinstance(d, str))
    root = os.path.realpath(f.root)
    return SettingsSource(str(f.path), root, f.source.value, lists, dirs)


@settings.command("check")
@click.argument("files", nargs=-1, type=click.Path(dir_okay=False))
@click.option("--project", type=click.Path(file_okay=False), default=".", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
def check(files: tuple[str, ...], project: str, as_json: bool) -> None:
    """Report shadowed, duplicate and never-matching rules and scope notes.

    With no FILE, reads the hierarchy `metis run` reads (managed, user,
    project and local files of PROJECT); with FILEs, those, each at its level
    when it lies at a real location. Matching is Claude Code's documented
    semantics, not metis's stricter gate. Bypass witnesses are not searched.
    """
    root = Path(os.path.realpath(project))
    home = os.path.expanduser("~")
    found = named_files(list(files), root) if files else hierarchy(root)
    for f in found:
        if not f.path.is_file():
            bad_input(f"{f.path}: cannot read settings: not a regular file")
    sources = [_source(f) for f in found]
    findings = check_settings(sources, str(root), home)
    if as_json:
        payload: dict[str, Any] = {
            "files": [s.path for s in sources],
            "findings": [
                {
                    "kind": x.kind,
                    "file": x.file,
                    "where": x.where,
                    "rule": x.rule,
                    "message": x.message,
                }
                for x in findings
            ],
        }
        emit_json(payload)
    else:
        for x in findings:
            click.echo(x.line())
        click.echo(f"{len(sources)} file(s), {len(findings)} finding(s)", err=True)
    sys.exit(EXIT_VIOLATION if findings else EXIT_OK)
