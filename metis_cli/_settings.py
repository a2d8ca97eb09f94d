"""`metis settings check [FILE ...]`: a static reading of a settings
hierarchy (issue 25), with the model's reference matcher of Claude Code's
documented semantics (`metis_check._settings_lint`).

Exit codes: 0 no finding, 1 findings, 2 a file that cannot be read.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import click

from metis_check._settings_bypass import bypass_witnesses
from metis_check._settings_lint import Finding
from metis_check._settings_lint import SettingsSource
from metis_check._settings_lint import check_settings
from metis_runtime._input import read_input_text
from metis_runtime.permissions import SettingsFile
from metis_runtime.permissions import hierarchy
from metis_runtime.permissions import named_files
from metis_trace import InputError
from metis_trace import decode_json

from ._output import EXIT_OK
from ._output import EXIT_VIOLATION
from ._output import bad_input
from ._output import emit_json


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
@click.option(
    "--output",
    type=click.Choice(["text", "json", "sarif"]),
    default=None,
    help="text (default), json, or SARIF 2.1.0 (locations at the rule's line and column).",
)
def check(files: tuple[str, ...], project: str, as_json: bool, output: str | None) -> None:
    """Report shadowed, duplicate and never-matching rules and scope notes.

    With no FILE, reads the hierarchy `metis run` reads (managed, user,
    project and local files of PROJECT); with FILEs, those, each at its level
    when it lies at a real location. Matching is Claude Code's documented
    semantics, not metis's stricter gate; each bypass witness (a bounded
    enumeration of shell forms) is also put to metis's own gate.
    """
    root = Path(os.path.realpath(project))
    home = os.path.expanduser("~")
    found = named_files(list(files), root) if files else hierarchy(root)
    for f in found:
        if not f.path.is_file():
            bad_input(f"{f.path}: cannot read settings: not a regular file")
    sources = [_source(f) for f in found]
    findings = check_settings(sources, str(root), home)
    findings += _witnesses(sources, found, root)
    output = output or ("json" if as_json else "text")
    if output == "sarif":
        click.echo(json.dumps(_sarif(findings), indent=2))
    elif output == "json":
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


def _witnesses(
    sources: list[SettingsSource], found: list[SettingsFile], root: Path
) -> list[Finding]:
    """Bypass witnesses (`_settings_bypass`), each confirmed against
    metis's own gate over the same files: does the hook close the hole?"""
    rules = [(b, t) for s in sources for b in ("allow", "ask", "deny") for t in s.lists.get(b, ())]
    home = os.path.expanduser("~")
    witnesses = bypass_witnesses([(b, t) for b, t in rules if isinstance(t, str)], str(root), home)
    if not witnesses:
        return []
    from metis_runtime._errors import ConfigError
    from metis_runtime.permissions import Gate
    from metis_runtime.permissions import load_hierarchy
    from metis_trace import Mode
    from metis_trace import Route
    from metis_trace import ToolKind

    try:
        gate: Gate | None = Gate(load_hierarchy(found).policy, Mode.DEFAULT, root, Route.HEADLESS)
    except ConfigError:
        gate = None  # a file metis refuses (a malformed rule): no second opinion
    out = []
    for w in witnesses:
        where = next(
            (s.path, f"permissions.deny[{i}]")
            for s in sources
            for i, t in enumerate(s.lists.get("deny", ()))
            if isinstance(t, str) and t.strip() == w.deny
        )
        if gate is None:
            verdict = "metis's gate was not asked (it refuses these files)"
        else:
            d = gate.decide("bash", {"command": w.line}, ToolKind.EXEC, (), w.line).decision
            verdict = f"metis's gate (and so `metis hook claude-code`) says {d.value}: " + (
                "closed by the hook" if d.value != "allow" else "open there too"
            )
        message = (
            f"bypass witness: {w.line!r} runs the denied command; under Claude Code's "
            f"documented matching {w.allow} allows it and no deny or ask rule matches "
            f"(confirmed by the reference deriver); {verdict}"
        )
        out.append(Finding("bypass", where[0], where[1], w.deny, message))
    return out


_KINDS = {
    "shadowed": "An allow (or ask) rule that a deny or ask rule covers: it never takes effect.",
    "duplicate": "A rule written twice in the hierarchy.",
    "never-matches": "A rule Claude Code never consults, or skips as malformed.",
    "scope": "A scope note: a directory outside the project, or an allow naming a protected path.",
    "bypass": "A command line that runs a denied command and that an allow rule admits under "
    "Claude Code's documented matching.",
}


def _position(finding: Finding) -> tuple[int, int]:
    """The 1-based line and column of the finding's rule in its file: the
    rule's JSON string after its list's key (the n-th, for a repeated text);
    the file's start when it cannot be placed."""
    try:
        text = Path(finding.file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return 1, 1
    m = re.fullmatch(r"permissions\.(\w+)(?:\[(\d+)\])?", finding.where)
    key = m.group(1) if m else ""
    start = text.find(f'"{key}"', max(text.find('"permissions"'), 0)) if key else -1
    if start < 0:
        return 1, 1
    needle = json.dumps(finding.rule)
    at = text.find(needle, start)
    index = int(m.group(2)) if m and m.group(2) else 0
    for _ in range(_earlier_same(text, start, needle, index)):
        at = text.find(needle, at + 1)
    if at < 0:
        at = start
    line = text.count("\n", 0, at) + 1
    return line, at - (text.rfind("\n", 0, at) + 1) + 1


def _earlier_same(text: str, start: int, needle: str, index: int) -> int:
    """How many elements before `index` of the list at `start` are the same text."""
    end = text.find("]", start)
    try:
        items = json.loads(text[text.find("[", start) : end + 1])
    except ValueError:
        return 0
    if not isinstance(items, list):
        return 0
    return sum(1 for x in items[:index] if json.dumps(x) == needle)


def _sarif(findings: list[Finding]) -> dict[str, Any]:
    """SARIF 2.1.0 as `metis conform --output sarif` writes it (`_sarif`,
    `_sarif_places`): URIs relative to the files' git root, fingerprints that
    survive a line inserted above, plus the rule's column."""
    from ._sarif import SCHEMA_URI
    from ._sarif import sarif_driver
    from ._sarif import sarif_result
    from ._sarif_places import Places
    from ._sarif_rules import settings_rule

    places = Places(sorted({f.file for f in findings}))
    results = []
    for f in findings:
        line, column = _position(f)
        results.append(
            sarif_result(
                places,
                f"settings/{f.kind}",
                "warning",
                f"{f.rule}: {f.message}",
                f.file,
                line,
                column,
            )
        )
    rules = [settings_rule(k, v) for k, v in _KINDS.items()]
    run: dict[str, Any] = {"tool": {"driver": sarif_driver("metis settings check", rules)}}
    if places.base_ids():
        run["originalUriBaseIds"] = places.base_ids()
    run["results"] = results
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
