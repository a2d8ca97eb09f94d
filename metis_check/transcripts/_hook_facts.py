"""AUTH-4 on the Claude Code hook's trace (`metis hook claude-code`).

The hook records, on each `tool_use` line, metis's verdict (`metis`): the
decision, its facts, the paths it decided on (`footprint`) and, when they
changed since the trace last said, the settings the gate read
(`permissions`, the form `metis run` records in a trace header's
`meta.permissions`). The reference fact-deriver (`metis_model._derive`)
derives from the latest recorded settings and the call's input what it is
sure of; a verdict whose facts lack it breaks AUTH-4 (specs/permissions.md),
exactly as a decision of a metis trace does. Claude Code's input names a
file tool's path `file_path` (`notebook_path`); the deriver reads `path`.

A session file with no `metis` verdicts (Claude Code's own transcript) is
not touched. Verdicts with facts but no settings recorded before them are a
note: AUTH-4 was not checked, never a pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs
from pydantic import ValidationError

from metis_model._derive import Recorded
from metis_model._derive import facts_problem
from metis_model._derive import recorded_permissions
from metis_trace import Facts
from metis_trace import TraceHeader
from metis_trace import raw_decode_json

from .._report import Note
from .._report import Violation

__all__ = ["HookFacts", "check_hook_facts"]

_PATH_KEYS = ("file_path", "notebook_path", "path")


@attrs.frozen
class HookFacts:
    violations: tuple[Violation, ...] = ()
    checked: int = 0  # verdicts the deriver was sure of a fact for
    notes: tuple[Note, ...] = ()


def _records(lines: Iterable[str]) -> Iterable[tuple[int, dict[str, Any]]]:
    for number, text in enumerate(lines, start=1):
        text = text.strip()
        if not text:
            continue
        try:  # the session reader has refused a bad line already
            obj = raw_decode_json(text, 0, line=number)[0]
        except ValueError:
            continue
        if isinstance(obj, dict):
            yield number, obj


def _settings(metis: dict[str, Any]) -> Recorded | None:
    header = TraceHeader(run_id="hook", root_run_id="hook", meta={"permissions": metis})
    return recorded_permissions(header)


def _tool_uses(obj: dict[str, Any]) -> list[dict[str, Any]]:
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return []
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]


def _deriver_input(tool_input: dict[str, Any]) -> dict[str, Any]:
    path = next((v for k in _PATH_KEYS if isinstance(v := tool_input.get(k), str)), None)
    return {**tool_input, "path": path} if path is not None else dict(tool_input)


def check_hook_facts(lines: Iterable[str], label: str = "") -> HookFacts:
    """AUTH-4 for every verdict the hook recorded in a session file."""
    recorded: Recorded | None = None
    violations: list[Violation] = []
    unrecorded: list[int] = []
    checked = 0
    prefix = f"{label}: " if label else ""
    for number, obj in _records(lines):
        metis = obj.get("metis")
        if obj.get("type") != "assistant" or not isinstance(metis, dict):
            continue
        if "permissions" in metis:
            recorded = _settings(metis["permissions"])
        uses = _tool_uses(obj)
        if len(uses) != 1 or "facts" not in metis:
            continue
        if recorded is None:
            unrecorded.append(number)
            continue
        use = uses[0]
        try:
            facts = Facts.model_validate(metis["facts"])
        except ValidationError:
            unrecorded.append(number)
            continue
        footprint = [p for p in metis.get("footprint", []) if isinstance(p, str)]
        raw = use.get("input")
        tool_input: dict[str, Any] = raw if isinstance(raw, dict) else {}
        sure, problem = facts_problem(
            recorded, str(use.get("name", "")), _deriver_input(tool_input), facts, footprint
        )
        checked += sure
        if problem is not None:
            message = f"{prefix}{use.get('id', '?')} ({use.get('name')}): {problem}"
            violations.append(Violation("AUTH-4", number - 1, message, number))
    notes: tuple[Note, ...] = ()
    if unrecorded:
        notes = (
            Note(
                unrecorded[0],
                f"{prefix}{len(unrecorded)} hook verdict(s) with no settings recorded before them "
                "(or unreadable facts): AUTH-4 was not checked for them",
            ),
        )
    return HookFacts(tuple(violations), checked, notes)
