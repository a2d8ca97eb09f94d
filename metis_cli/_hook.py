"""`metis hook claude-code`: metis's gate as a Claude Code hook
(https://code.claude.com/docs/en/hooks).

One command for every event; the payload's `hook_event_name` says which:

- `PreToolUse`: decide the call with metis's gate, reading the user's real
  settings hierarchy (`CLAUDE_PROJECT_DIR`, else the payload's `cwd`, as the
  project; `~/.claude`, the managed files, and the `.metis/` equivalents).
  A deny or ask is the documented decision JSON on stdout
  (`hookSpecificOutput.permissionDecision`, with the stage, the rule and the
  file it came from as `permissionDecisionReason`); an allow says nothing, so
  Claude Code's own rules and prompts still decide (`--pass-allow` says
  `allow` instead). metis is a second line of defence: it never loosens.
- `PostToolUse`, `PostToolUseFailure`, `Stop`, `SubagentStop`: append to the
  session's hook trace, a Claude Code session file (`tool_use` lines from
  PreToolUse, `tool_result` lines from the results) that `metis conform`
  checks. PreToolUse appends its call there too.

Bad input (not JSON, a missing or mistyped field, an unknown event or mode,
a malformed settings file) is a one-line error on stderr and exit 2: for
PreToolUse, exit 2 blocks the call (fail closed).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import click

from ._output import EXIT_BAD_INPUT, EXIT_OK

_PRE = "PreToolUse"
_RESULTS = ("PostToolUse", "PostToolUseFailure")
_STOPS = ("Stop", "SubagentStop")
EVENTS = (_PRE, *_RESULTS, *_STOPS)
_SESSION = re.compile(r"[A-Za-z0-9_.-]{1,128}")
_RESULT_CHARS = 4000  # of a tool response kept in the trace (after redaction)


class HookInputError(ValueError):
    """The payload is not what Claude Code documents; the text is one line."""


@click.group()
def hook() -> None:
    """Run metis as a hook of another agent runtime."""


@hook.command("claude-code")
@click.option(
    "--trace",
    "trace_path",
    default=None,
    help="The session's hook trace ({session_id} is replaced; default: "
    "<project>/.metis/claude-code/<session_id>.jsonl).",
)
@click.option("--pass-allow", is_flag=True, help="Say allow when metis allows.")
@click.option("--no-trace", is_flag=True, help="Decide only; append nothing to the hook trace.")
def claude_code(trace_path: str | None, pass_allow: bool, no_trace: bool) -> None:
    """Read the hook payload on stdin; for PreToolUse print the decision JSON."""
    try:
        payload = read_payload()
        out = handle(payload, trace_path=None if no_trace else trace_path, pass_allow=pass_allow,
                     record=not no_trace)  # fmt: skip
    except HookInputError as exc:
        click.echo(f"metis hook claude-code: {exc}", err=True)
        raise SystemExit(EXIT_BAD_INPUT) from None
    if out is not None:
        click.echo(json.dumps(out, ensure_ascii=False))
    raise SystemExit(EXIT_OK)


def read_payload() -> dict[str, Any]:
    """The hook input on stdin: one strict JSON object, bounded."""
    from metis_runtime._input import decode_text, input_json_limits, read_input_bytes
    from metis_trace import InputError, decode_json

    try:
        text = decode_text(read_input_bytes("-"), "<stdin>")
        data = decode_json(text, source="<stdin>", limits=input_json_limits())
    except InputError as exc:
        raise HookInputError(str(exc)) from None
    if not isinstance(data, dict):
        raise HookInputError("<stdin>: the hook input must be a JSON object")
    return data


def _field(payload: Mapping[str, Any], name: str, kind: type, *, required: bool = True) -> Any:
    if name not in payload:
        if required:
            raise HookInputError(f"<stdin>: field '{name}' is missing")
        return None
    value = payload[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise HookInputError(f"<stdin>: field '{name}' must be {_KIND_NAMES[kind]}")
    return value


_KIND_NAMES: dict[type, str] = {
    str: "a string",
    dict: "an object",
    bool: "a boolean",
    int: "a number",
}


def handle(
    payload: Mapping[str, Any],
    *,
    trace_path: str | None = None,
    pass_allow: bool = False,
    record: bool = True,
) -> dict[str, Any] | None:
    """The hook's answer to one payload (None: print nothing)."""
    event = _field(payload, "hook_event_name", str)
    if event not in EVENTS:
        raise HookInputError(
            f"<stdin>: hook_event_name {event!r} is not one of {', '.join(EVENTS)}"
        )
    session = _field(payload, "session_id", str)
    if not _SESSION.fullmatch(session):
        raise HookInputError("<stdin>: field 'session_id' must be 1-128 of [A-Za-z0-9_.-]")
    cwd = _field(payload, "cwd", str)
    if not os.path.isabs(cwd) or not os.path.isdir(cwd):
        raise HookInputError(f"<stdin>: field 'cwd': {cwd!r} is not an absolute directory")
    project = Path(os.environ.get("CLAUDE_PROJECT_DIR") or cwd)
    trace = _trace_file(trace_path, project, session) if record else None
    if event == _PRE:
        return _pre_tool_use(payload, Path(cwd), project, trace, pass_allow)
    if trace is not None:
        if event in _RESULTS:
            _record_result(payload, trace, failed=event == "PostToolUseFailure")
        else:
            _field(payload, "stop_hook_active", bool, required=False)
            _record_stop(payload, trace, event)
    return None


def _trace_file(option: str | None, project: Path, session: str) -> Path:
    if option is not None:
        return Path(option.replace("{session_id}", session))
    return project / ".metis" / "claude-code" / f"{session}.jsonl"


# --- PreToolUse ----------------------------------------------------------------------


def _pre_tool_use(
    payload: Mapping[str, Any], cwd: Path, project: Path, trace: Path | None, pass_allow: bool
) -> dict[str, Any] | None:
    from metis_runtime._errors import ConfigError
    from metis_runtime.permissions import (
        Gate,
        hierarchy,
        load_hierarchy,
        parse_mode,
        stricter_than_claude_code,
    )
    from metis_trace import Decision, Route

    from ._permissions import infer_kind, input_paths

    tool = _field(payload, "tool_name", str)
    tool_input = _field(payload, "tool_input", dict)
    call_id = _field(payload, "tool_use_id", str)
    raw_mode = _field(payload, "permission_mode", str, required=False) or "default"
    try:
        mode, auto = parse_mode(raw_mode, "<stdin>: field 'permission_mode'")
        loaded = load_hierarchy(hierarchy(project, Path(os.path.expanduser("~"))))
        gate = Gate(loaded.policy, mode, cwd, Route.HEADLESS, auto=auto)
    except ConfigError as exc:
        raise HookInputError(str(exc)) from None
    paths = input_paths(tool_input)
    if tool.lower() in ("grep", "glob") and not paths:
        paths = [str(cwd)]  # a search without a path is rooted at the working directory
    command = tool_input.get("command") if isinstance(tool_input.get("command"), str) else None
    d = gate.decide(tool, tool_input, infer_kind(tool, tool_input), paths, command)
    reason = _reason(d, loaded.policy, stricter_than_claude_code(d, auto=auto))
    if trace is not None:
        _record_call(payload, trace, tool, tool_input, call_id, d, reason)
    if d.decision is Decision.ALLOW and not pass_allow:
        return None
    return {
        "hookSpecificOutput": {
            "hookEventName": _PRE,
            "permissionDecision": d.decision.value,
            "permissionDecisionReason": reason,
        }
    }


def _reason(decision: Any, policy: Any, stricter: list[str]) -> str:
    parts = [f"metis: {decision.decision.value} at {decision.stage.value}"]
    if decision.rule is not None:
        origin = next((r.origin for r in policy.rules if r.recency == decision.rule.recency), "")
        parts.append(f"rule {decision.rule.pattern}" + (f" ({origin})" if origin else ""))
    if decision.detail:
        parts.append(decision.detail)
    if stricter:
        parts.append("stricter than Claude Code: " + "; ".join(stricter))
    return "; ".join(parts)


# --- the hook trace ------------------------------------------------------------------


@contextlib.contextmanager
def _locked(trace: Path) -> Iterator[dict[str, Any]]:
    """The trace's threading state (`<trace>.state.json`), under a lock held
    while the caller appends; written back when it is done."""
    from metis_runtime._private import open_private, private_dirs, write_private_json

    private_dirs(trace.parent)
    fd = open_private(trace.with_name(trace.name + ".lock"), os.O_RDWR)
    state_file = trace.with_name(trace.name + ".state.json")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        state = _read_state(state_file)
        yield state
        write_private_json(state_file, state)
    finally:
        os.close(fd)


def _read_state(state_file: Path) -> dict[str, Any]:
    """The threading state, read as every input is (a regular file, bounded,
    strict JSON); none yet is a new session. A state that cannot be read is an
    error, not a fresh start: starting over would thread the calls wrongly."""
    from metis_runtime._input import read_input_json
    from metis_trace import InputError

    if not os.path.lexists(state_file):
        return {}
    try:
        state = read_input_json(state_file)
    except InputError as exc:
        raise HookInputError(f"{exc} (the hook trace's state; remove it to start over)") from None
    if not isinstance(state, dict):
        raise HookInputError(f"{state_file}: the hook trace's state must be a JSON object")
    return state


def _append(trace: Path, record: dict[str, Any]) -> None:
    from metis_runtime._private import append_private_jsonl

    append_private_jsonl(trace, record)


def _thread(payload: Mapping[str, Any], state: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The state of the thread the payload belongs to (a subagent's own)."""
    agent = payload.get("agent_id")
    key = agent if isinstance(agent, str) and agent else "main"
    threads = state.setdefault("threads", {})
    return key, threads.setdefault(key, {"last": None, "message": None, "open": {}})


def _base(payload: Mapping[str, Any], key: str, parent: str | None) -> dict[str, Any]:
    return {
        "uuid": str(uuid.uuid4()),
        "parentUuid": parent,
        "sessionId": payload["session_id"],
        "isSidechain": key != "main",
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "cwd": payload["cwd"],
    }


def _record_call(
    payload: Mapping[str, Any],
    trace: Path,
    tool: str,
    tool_input: dict[str, Any],
    call_id: str,
    decision: Any,
    reason: str,
) -> None:
    from metis_trace import Decision

    with _locked(trace) as state:
        key, thread = _thread(payload, state)
        if thread["message"] is None:  # a new assistant message (no result since the last call)
            _close_unanswered_asks(payload, trace, key, thread)
            thread["message"] = f"msg_hook_{uuid.uuid4().hex[:16]}"
        record = _base(payload, key, thread["last"])
        record.update(
            type="assistant",
            message={
                "id": thread["message"],
                "role": "assistant",
                "content": [{"type": "tool_use", "id": call_id, "name": tool, "input": tool_input}],
            },
            metis={
                "decision": decision.decision.value,
                "stage": decision.stage.value,
                "rule": decision.rule.pattern if decision.rule is not None else None,
                "reason": reason,
            },
        )
        _append(trace, record)
        thread["last"] = record["uuid"]
        thread["open"][call_id] = record["uuid"]
        if decision.decision is Decision.ASK:
            thread.setdefault("asked", []).append(call_id)
        if decision.decision is Decision.DENY:  # Claude Code answers a denied call itself
            _result(payload, trace, key, thread, call_id, reason, error=True)


def _result(
    payload: Mapping[str, Any],
    trace: Path,
    key: str,
    thread: dict[str, Any],
    call_id: str,
    content: str,
    error: bool,
) -> None:
    parent = thread["open"].pop(call_id, None) or thread["last"]
    record = _base(payload, key, parent)
    record.update(
        type="user",
        message={
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": call_id,
                    "content": content,
                    "is_error": error,
                }
            ],
        },
    )
    _append(trace, record)
    thread["last"] = record["uuid"]
    thread["message"] = None


def _record_result(payload: Mapping[str, Any], trace: Path, failed: bool) -> None:
    from metis_runtime._private import default_redactor

    call_id = _field(payload, "tool_use_id", str)
    _field(payload, "tool_name", str)
    if failed:
        body: Any = _field(payload, "error", str, required=False) or "the tool failed"
    else:
        if "tool_response" not in payload:
            raise HookInputError("<stdin>: field 'tool_response' is missing")
        body = payload["tool_response"]
    text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    text = default_redactor().text(text)  # redact before cutting
    if len(text) > _RESULT_CHARS:
        text = text[:_RESULT_CHARS] + f" [... {len(text) - _RESULT_CHARS} characters not kept]"
    with _locked(trace) as state:
        key, thread = _thread(payload, state)
        _result(payload, trace, key, thread, call_id, text, error=failed)


# Claude Code runs no PostToolUse hook for a call its user rejected in the
# permission dialog (https://code.claude.com/docs/en/hooks: PostToolUse runs
# "after a tool completes successfully"), yet it answers the model with an error
# result. The hook writes that answer itself, or its trace would hold a false
# CLOSE-2; only for calls metis sent to the dialog (ask): any other call left
# without a result is still reported.
_NOT_APPROVED = (
    "[metis hook: no PostToolUse came for this call, which went to Claude Code's "
    "permission dialog: the user did not approve it]"
)


def _close_unanswered_asks(
    payload: Mapping[str, Any], trace: Path, key: str, thread: dict[str, Any]
) -> None:
    for call_id in thread.pop("asked", []):
        if call_id in thread["open"]:
            _result(payload, trace, key, thread, call_id, _NOT_APPROVED, error=True)


def _record_stop(payload: Mapping[str, Any], trace: Path, event: str) -> None:
    with _locked(trace) as state:
        key, thread = _thread(payload, state)
        _close_unanswered_asks(payload, trace, key, thread)
        record = _base(payload, key, thread["last"])
        record.update(type="system", subtype=event.lower(), content=f"{event} hook")
        _append(trace, record)
        thread["last"] = record["uuid"]
        thread["message"] = None
