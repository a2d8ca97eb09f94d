"""The Claude Code hook's session trace and its threading state (no click).

The hook trace is a Claude Code session file (`tool_use` lines from
PreToolUse, `tool_result` lines from the results, a `system` line per Stop)
that `metis conform --format claude-code` checks. Each hook process appends
to it under a lock (`<trace>.lock`), with the thread's last line and open
calls kept in `<trace>.state.json`.

The state is metis's own bookkeeping, so its trouble never blocks the user:
a state that cannot be read (not strict JSON, not the shape written here) is
set aside as `<state>.corrupt-<UTC time>` when it is a regular file, with a
warning, and the session's trace goes on from a fresh state (its threading
restarts there: `metis conform` may then report the calls that were open).
A state path that is not a regular file (a FIFO, a folder) is never moved:
the call is not recorded, with a warning. Errors raised here are
`TraceUnusable`, one line each; the caller warns and goes on.

It lives in the runtime, not in `metis_check`, because it writes with the
runtime's private-file and bounded-input helpers (`_private`, `_input`) and
redactor, which the checker may not import; it imports nothing else but
`metis_trace`. The CLI's hook (`metis_cli._hook_events`) calls it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import time
import uuid
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["TraceUnusable", "record_call", "record_result", "record_stop", "trace_file"]

Warn = Callable[[str], None]
RESULT_CHARS = 4000  # of a tool response kept in the trace (after redaction)

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


class TraceUnusable(Exception):
    """The hook trace cannot be written for this call; the text is one line."""


def trace_file(option: str | None, project: Path, session: str) -> Path:
    if option is not None:
        return Path(option.replace("{session_id}", session))
    return project / ".metis" / "claude-code" / f"{session}.jsonl"


@contextlib.contextmanager
def _locked(trace: Path, warn: Warn) -> Iterator[dict[str, Any]]:
    """The trace's threading state, under a lock held while the caller
    appends; written back when it is done."""
    from metis_runtime._private import open_private
    from metis_runtime._private import private_dirs
    from metis_runtime._private import write_private_json

    try:
        private_dirs(trace.parent)
        fd = open_private(trace.with_name(trace.name + ".lock"), os.O_RDWR)
    except OSError as exc:
        raise TraceUnusable(f"{trace}: {exc.strerror or exc}") from None
    state_file = trace.with_name(trace.name + ".state.json")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        state = _read_state(state_file, warn)
        yield state
        write_private_json(state_file, state)
    except OSError as exc:
        raise TraceUnusable(f"{trace}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _read_state(state_file: Path, warn: Warn) -> dict[str, Any]:
    """The threading state, read as every input is (a regular file, bounded,
    strict JSON); none yet is a new session; a bad one is set aside."""
    from metis_runtime._input import read_input_json
    from metis_trace import InputError

    try:
        info = os.lstat(state_file)
    except FileNotFoundError:
        return {}
    if not stat.S_ISREG(info.st_mode):
        raise TraceUnusable(f"{state_file}: the hook trace's state is not a regular file")
    try:
        state = read_input_json(state_file)
        problem = _shape_problem(state)
    except InputError as exc:
        problem = (f"line {exc.line}: " if exc.line else "") + exc.message
    if problem is None:
        return state  # type: ignore[no-any-return]
    aside = _set_aside(state_file)
    warn(f"{state_file}: {problem}; set aside as {aside.name}, starting a fresh state")
    return {}


def _shape_problem(state: Any) -> str | None:
    """What is wrong with a state's shape (None: it is the one written here)."""
    if not isinstance(state, dict):
        return "the hook trace's state must be a JSON object"
    threads = state.get("threads", {})
    if not isinstance(threads, dict):
        return "field 'threads' must be an object"
    for key, thread in threads.items():
        if not (
            isinstance(thread, dict)
            and all(isinstance(thread.get(f), str | None) for f in ("last", "message"))
            and isinstance(thread.get("open"), dict)
            and all(isinstance(v, str) for v in thread["open"].values())
            and isinstance(thread.get("asked", []), list)
        ):
            return f"field 'threads.{key}' is not a thread's state"
    return None


def _set_aside(state_file: Path) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = state_file.with_name(f"{state_file.name}.corrupt-{stamp}")
    n = 1
    while os.path.lexists(aside):  # never rename over a file set aside before
        n += 1
        aside = state_file.with_name(f"{state_file.name}.corrupt-{stamp}-{n}")
    os.rename(state_file, aside)
    return aside


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


def record_call(
    payload: Mapping[str, Any],
    trace: Path,
    warn: Warn,
    call: tuple[str, dict[str, Any], str],
    verdict: Mapping[str, Any],
) -> None:
    """A PreToolUse call (tool, input, id) with metis's `verdict` (decision,
    stage, rule, reason, facts, footprint); a denied call's answer too (Claude
    Code gives it). The verdict's `permissions` (the settings the gate read)
    is kept only when it differs from the last the trace recorded (AUTH-4
    reads the latest before each call)."""
    tool, tool_input, call_id = call
    verdict = dict(verdict)
    with _locked(trace, warn) as state:
        _settings_once(verdict, state)
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
            metis=dict(verdict),
        )
        _append(trace, record)
        thread["last"] = record["uuid"]
        thread["open"][call_id] = record["uuid"]
        if verdict["decision"] == "ask":
            thread.setdefault("asked", []).append(call_id)
        if verdict["decision"] == "deny":  # Claude Code answers a denied call itself
            _result(payload, trace, key, thread, call_id, verdict["reason"], error=True)


def _settings_once(verdict: dict[str, Any], state: dict[str, Any]) -> None:
    import hashlib
    import json

    settings = verdict.get("permissions")
    if settings is None:
        return
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()
    if state.get("permissions") == digest:
        del verdict["permissions"]
    else:
        state["permissions"] = digest


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
    block = {"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": error}
    record.update(type="user", message={"role": "user", "content": [block]})
    _append(trace, record)
    thread["last"] = record["uuid"]
    thread["message"] = None


def record_result(
    payload: Mapping[str, Any], trace: Path, warn: Warn, call_id: str, body: Any, failed: bool
) -> None:
    """A PostToolUse (or PostToolUseFailure) result, redacted, then cut."""
    import json

    from metis_runtime._private import default_redactor

    text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    text = default_redactor().text(text)  # redact before cutting
    if len(text) > RESULT_CHARS:
        text = text[:RESULT_CHARS] + f" [... {len(text) - RESULT_CHARS} characters not kept]"
    with _locked(trace, warn) as state:
        key, thread = _thread(payload, state)
        _result(payload, trace, key, thread, call_id, text, error=failed)


def _close_unanswered_asks(
    payload: Mapping[str, Any], trace: Path, key: str, thread: dict[str, Any]
) -> None:
    for call_id in thread.pop("asked", []):
        if call_id in thread["open"]:
            _result(payload, trace, key, thread, call_id, _NOT_APPROVED, error=True)


def record_stop(payload: Mapping[str, Any], trace: Path, warn: Warn, event: str) -> None:
    with _locked(trace, warn) as state:
        key, thread = _thread(payload, state)
        _close_unanswered_asks(payload, trace, key, thread)
        record = _base(payload, key, thread["last"])
        record.update(type="system", subtype=event.lower(), content=f"{event} hook")
        _append(trace, record)
        thread["last"] = record["uuid"]
        thread["message"] = None
