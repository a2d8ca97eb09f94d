"""A workload as a replay scenario: Anthropic Messages SSE bodies in a cassette
(or, for a root whose `wire` is `openai-responses`, Responses streams: `_responses.py`).

The scenario is the shipped format of `metis run --scenario` (interactions
whose `response.body.string` is the raw SSE body, `workspace.files`, and
`agents:` naming each child's own cassette). The stream follows Anthropic's
documented event order (https://docs.anthropic.com/en/api/messages-streaming):
`message_start`, per block `content_block_start` / `*_delta` /
`content_block_stop`, `message_delta` with the stop reason, `message_stop`.
A turn with `overflow` is preceded by a 413 `request_too_large` error
interaction, which the runtime reads as a context overflow.

The workload itself is kept in the scenario's `explore:` section (which
`metis run` ignores), so a written scenario is both runnable and reloadable.
Child definitions go in `<scenario>.definitions/` (the user's agents folder
for the run: `METIS_USER_AGENTS`), since a scenario may not seed `.metis/`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from ._responses import RESPONSES_URI
from ._responses import responses_body
from ._workload import Turn
from ._workload import Wire
from ._workload import Workload

URI = "https://api.anthropic.com/v1/messages"
BASE_URL = "https://api.anthropic.com"
MODEL = "claude-sonnet-4-5"
SIGNATURE = "RXhwbG9yZVNpZ25hdHVyZQ=="  # opaque; the runtime sends it back as is
GUARD_FLAGS = {  # `metis run`'s options for the spawn guard's limits
    "max_depth": "--max-spawn-depth",
    "max_total": "--max-agents",
    "max_per_parent": "--max-children-per-agent",
    "max_concurrent": "--max-concurrent",
}
_OVERFLOW = {
    "type": "error",
    "error": {"type": "request_too_large", "message": "prompt is too long: request too large"},
}


def _sse(event: str, data: Mapping[str, Any]) -> str:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def _block_events(
    index: int, kind: str, start: dict[str, Any], deltas: Sequence[dict[str, Any]]
) -> Iterator[str]:
    yield _sse(
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": start},
    )
    for delta in deltas:
        yield _sse(
            "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        )
    yield _sse("content_block_stop", {"type": "content_block_stop", "index": index})


def sse_body(turn: Turn, message_id: str) -> str:
    """The SSE body of one assistant answer."""
    usage = {"input_tokens": 100, "output_tokens": 1}
    message: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    out = [_sse("message_start", {"type": "message_start", "message": message})]
    index = 0
    if turn.thinking:
        out += _block_events(
            index,
            "thinking",
            {"type": "thinking", "thinking": "", "signature": ""},
            [
                {"type": "thinking_delta", "thinking": turn.thinking},
                {"type": "signature_delta", "signature": SIGNATURE},
            ],
        )
        index += 1
    if turn.text:
        out += _block_events(
            index, "text", {"type": "text", "text": ""}, [{"type": "text_delta", "text": turn.text}]
        )
        index += 1
    for call in turn.calls:
        arguments = json.dumps(call.input, separators=(",", ":"))
        out += _block_events(
            index,
            "tool_use",
            {"type": "tool_use", "id": call.id, "name": call.tool, "input": {}},
            [{"type": "input_json_delta", "partial_json": arguments}],
        )
        index += 1
    if index == 0:  # an answer is never empty
        out += _block_events(
            0, "text", {"type": "text", "text": ""}, [{"type": "text_delta", "text": "Done."}]
        )
    stop = "tool_use" if turn.calls else "end_turn"
    out.append(
        _sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 10},
            },
        )
    )
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return "".join(out)


def _interactions(
    turns: Sequence[Turn], prefix: str, wire: Wire = "anthropic"
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    responses = wire == "openai-responses"
    uri = RESPONSES_URI if responses else URI
    for n, turn in enumerate(turns, 1):
        if turn.overflow:
            items.append(
                {
                    "request": {"method": "POST", "uri": URI},
                    "response": {
                        "status": {"code": 413, "message": "Request Entity Too Large"},
                        "headers": {"content-type": ["application/json"]},
                        "body": {"string": json.dumps(_OVERFLOW)},
                    },
                }
            )
        answer_id = f"{'resp' if responses else 'msg'}_{prefix}_{n:03d}"
        body = responses_body(turn, answer_id) if responses else sse_body(turn, answer_id)
        items.append(
            {
                "request": {"method": "POST", "uri": uri},
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"content-type": ["text/event-stream"]},
                    "body": {"string": body},
                },
            }
        )
    return items


def turn_starts(turns: Sequence[Turn]) -> list[int]:
    """For each turn (1-based, index 0 unused), the index of its first interaction."""
    starts = [0]
    at = 0
    for turn in turns:
        starts.append(at)
        at += 2 if turn.overflow else 1
    starts.append(at)
    return starts


class _Dumper(yaml.SafeDumper):
    pass


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def dump_yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def settings_of(workload: Workload) -> dict[str, Any] | None:
    """The permission rules as a Claude Code settings file, or None."""
    if not workload.rules:
        return None
    lists: dict[str, list[str]] = {"allow": [], "ask": [], "deny": []}
    for rule in workload.rules:
        lists[rule.behavior].append(rule.pattern)
    return {"permissions": {k: v for k, v in lists.items() if v}}


def definition_of(name: str, tools: Sequence[str] | None) -> str:
    """A sub-agent definition file (Markdown with YAML front matter)."""
    front: dict[str, Any] = {"name": name, "description": f"explore's {name} agent"}
    if tools is not None:
        front["tools"] = list(tools)
    return f"---\n{dump_yaml(front)}---\nFollow the task.\n"


def definitions_dir(scenario: Path) -> Path:
    """Where a scenario's child definitions go: `metis run` reads them as the
    user's (`METIS_USER_AGENTS`), since `.metis/` is not the scenario's to seed."""
    return scenario.with_name(f"{scenario.stem}.definitions")


def write_definitions(workload: Workload, folder: Path) -> list[Path]:
    written = []
    for child in workload.agents:
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{child.name}.md"
        target.write_text(definition_of(child.name, child.tools))
        written.append(target)
    return written


def command_line(workload: Workload, scenario: Path) -> str:
    """How to run this scenario with `metis run` (what it can express)."""
    parts = [
        "metis run",
        f"--scenario {scenario.name}",
        "--workspace DIR",
        f"--mode {workload.mode.value}",
    ]
    if workload.agents:
        parts.insert(0, f"METIS_USER_AGENTS={definitions_dir(scenario).name}")
    if workload.route.value == "headless":
        parts.append("--headless")
    if workload.rules:
        parts.append(f"--settings {scenario.stem}.settings.json")
    if workload.context_window is not None:
        parts.append(
            f"--context-window {workload.context_window} --context-recent {workload.context_recent}"
        )
    if workload.dispatcher == "serial":
        parts.append("--serial")
    parts += [f"{GUARD_FLAGS[k]} {v}" for k, v in sorted(workload.guard.items())]
    if workload.max_turns is not None:
        parts.append(f"--max-turns {workload.max_turns}")
    return " ".join(parts)


def write_scenario(workload: Workload, path: Path) -> list[Path]:
    """Write `path` (the scenario), each child's cassette beside it and the
    settings file; return every file written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    written = [path]
    agents: dict[str, str] = {}
    for child in workload.agents:
        rel = f"{path.stem}.agents/{child.name}.yaml"
        target = path.parent / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(dump_yaml({"interactions": _interactions(child.turns, child.name)}))
        agents[child.name] = rel
        written.append(target)
    settings = settings_of(workload)
    if settings is not None:
        target = path.with_name(f"{path.stem}.settings.json")
        target.write_text(json.dumps(settings, indent=2) + "\n")
        written.append(target)
    data: dict[str, Any] = {
        "description": f"metis explore workload {workload.name} ({', '.join(workload.aims)})",
        "prompt": workload.prompt,
    }
    if agents:
        data["agents"] = agents
    written += write_definitions(workload, definitions_dir(path))
    data["workspace"] = {"files": dict(workload.files)}
    data["interactions"] = _interactions(workload.turns, "root", workload.wire)
    data["explore"] = workload.to_json()
    notes = [
        f"# Written by metis explore: workload {workload.name}.",
        f"# Run: {command_line(workload, path)}",
    ]
    if (
        workload.hooks
        or workload.route.value == "protocol"
        or workload.headless_default.value == "allow"
    ):
        notes.append(
            "# (hooks, the protocol route and an allow default: metis explore --replay FILE)"
        )
    if workload.route.value == "interactive" and workload.answers:
        answers = " ".join("y" if a else "n" for a in workload.answers)
        notes.append(f"# Answer the asks on stdin, in order: {answers}")
    path.write_text("\n".join(notes) + "\n" + dump_yaml(data))
    return written
