"""The Claude Code hook's answer to one payload (no click; the command, the
fast client and the session helper all call `answer`).

https://code.claude.com/docs/en/hooks: the payload is a JSON object on stdin;
`hook_event_name` says which event. For PreToolUse a decision is the
documented JSON on stdout (`hookSpecificOutput.permissionDecision` with a
`permissionDecisionReason` the model reads), exit 0. Exit 2 would block:
for a Stop it makes Claude Code refuse to end the turn, so metis never uses it.

metis's own trouble never blocks the user; each is one warning line on
stderr and exit 0:
- an event metis does not handle, a mistyped field of a result or a stop,
  a session id metis cannot name a trace after: nothing done or recorded;
- an unknown `permission_mode`: decided as `default` (Claude Code's Manual
  mode), and only a deny is given (what a deny rule refuses, it refuses in
  every mode; an ask depends on the mode), so no decision otherwise;
- a hook trace or state that cannot be used (`metis_runtime._hook_session`): set aside or
  not recorded; the decision stands.
A PreToolUse call metis cannot decide (the payload unreadable, a field
missing, a settings file that cannot be read, an internal error) is denied
with the reason, unless its tool has no effect (Read, Grep, Glob, LS, ...):
then there is no decision, and Claude Code's own rules decide.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attrs import frozen

__all__ = ["EVENTS", "HookAnswer", "HookOptions", "answer"]

_PRE = "PreToolUse"
_RESULTS = ("PostToolUse", "PostToolUseFailure")
_STOPS = ("Stop", "SubagentStop")
# Handled by the client and the helper (the helper starts or ends), nothing to record.
_QUIET = ("SessionStart", "SessionEnd")
EVENTS = (_PRE, *_RESULTS, *_STOPS, *_QUIET)
_SESSION = re.compile(r"[A-Za-z0-9_.-]{1,128}")
_PREFIX = "metis hook claude-code: "


@frozen
class HookOptions:
    trace: str | None = None  # the --trace pattern ({session_id} replaced)
    pass_allow: bool = False
    record: bool = True


@frozen
class HookAnswer:
    output: dict[str, Any] | None  # the JSON to print on stdout, if any
    warnings: tuple[str, ...] = ()
    code: int = 0

    def stdout(self) -> str:
        return "" if self.output is None else json.dumps(self.output, ensure_ascii=False) + "\n"

    def stderr(self) -> str:
        return "".join(f"{_PREFIX}{w}\n" for w in self.warnings)


class _Undecidable(Exception):
    """A PreToolUse call metis cannot decide; the text is the reason."""


def _deny(reason: str) -> dict[str, Any]:
    return _decision("deny", reason)


def _decision(decision: str, reason: str) -> dict[str, Any]:
    return {
        "hookSpecificOutput": {
            "hookEventName": _PRE,
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        }
    }


def answer(data: bytes, options: HookOptions) -> HookAnswer:
    """The answer to one payload (its raw bytes)."""
    warnings: list[str] = []
    try:
        payload = _payload(data)
    except _Undecidable as exc:
        if b'"PreToolUse"' in data:  # most likely a call: refuse it, saying why
            why = f"metis: deny: the hook input cannot be read ({exc}), so the call is not decided"
            return HookAnswer(_deny(why), (str(exc),))
        return HookAnswer(None, (f"{exc}; nothing done",))
    event = payload.get("hook_event_name")
    try:
        if event == _PRE:
            output = _pre_tool_use(payload, options, warnings.append)
        elif event in _RESULTS or event in _STOPS:
            _record_event(payload, str(event), options, warnings.append)
            output = None
        elif event in _QUIET:
            output = None
        else:
            warnings.append(
                f"<stdin>: hook_event_name {event!r} is not one metis handles "
                f"({', '.join(EVENTS)}); nothing done"
            )
            output = None
    except Exception as exc:  # metis's own bug: never a traceback, never a wedge
        problem = f"internal error ({type(exc).__name__}: {exc})"
        warnings.append(problem)
        output = _undecided(payload, problem) if event == _PRE else None
    return HookAnswer(output, tuple(warnings))


def _payload(data: bytes) -> dict[str, Any]:
    from metis_runtime._input import decode_text
    from metis_runtime._input import input_json_limits
    from metis_runtime._input import max_input_bytes
    from metis_trace import InputError
    from metis_trace import decode_json

    try:
        if len(data) > max_input_bytes():
            raise _Undecidable(f"<stdin>: larger than {max_input_bytes()} bytes")
        text = decode_text(data, "<stdin>")
        obj = decode_json(text, source="<stdin>", limits=input_json_limits())
    except InputError as exc:
        raise _Undecidable(str(exc)) from None
    if not isinstance(obj, dict):
        raise _Undecidable("<stdin>: the hook input must be a JSON object")
    return obj


def _field(payload: Mapping[str, Any], name: str, kind: type, *, required: bool = True) -> Any:
    if name not in payload:
        if not required:
            return None
        raise _Undecidable(f"<stdin>: field '{name}' is missing")
    value = payload[name]
    if not isinstance(value, kind):
        raise _Undecidable(f"<stdin>: field '{name}' must be {_KIND_NAMES[kind]}")
    return value


_KIND_NAMES: dict[type, str] = {str: "a string", dict: "an object", bool: "a boolean"}


def _trace(payload: Mapping[str, Any], options: HookOptions, warn: Any) -> Path | None:
    """Where this payload is recorded (None: not at all, with a warning why)."""
    if not options.record:
        return None
    session = payload.get("session_id")
    if not isinstance(session, str) or not _SESSION.fullmatch(session):
        warn("<stdin>: field 'session_id' must be 1-128 of [A-Za-z0-9_.-]; not recorded")
        return None
    cwd = payload.get("cwd")
    if not isinstance(cwd, str) or not os.path.isabs(cwd):
        warn(f"<stdin>: field 'cwd': {cwd!r} is not an absolute path; not recorded")
        return None
    from metis_runtime._hook_session import trace_file

    return trace_file(options.trace, Path(os.environ.get("CLAUDE_PROJECT_DIR") or cwd), session)


def _undecided(payload: Mapping[str, Any], problem: str) -> dict[str, Any] | None:
    from ._call_decision import READ_ONLY_TOOLS

    tool = payload.get("tool_name")
    if isinstance(tool, str) and tool.lower() in READ_ONLY_TOOLS:
        return None  # no effect to let slip: Claude Code's own rules decide
    return _deny(f"metis: deny: metis cannot decide this call ({problem}), so it is refused")


def _pre_tool_use(payload: Mapping[str, Any], options: HookOptions, warn: Any) -> Any:
    try:
        tool = _field(payload, "tool_name", str)
        tool_input = _field(payload, "tool_input", dict)
        call_id = _field(payload, "tool_use_id", str)
        cwd = _field(payload, "cwd", str)
        if not os.path.isabs(cwd) or not os.path.isdir(cwd):
            raise _Undecidable(f"<stdin>: field 'cwd': {cwd!r} is not an absolute directory")
        verdict = _decide(payload, tool, tool_input, Path(cwd), warn)
    except _Undecidable as exc:
        warn(str(exc))
        return _undecided(payload, str(exc))
    trace = _trace(payload, options, warn)
    if trace is not None:
        from metis_runtime._hook_session import TraceUnusable
        from metis_runtime._hook_session import record_call

        try:
            record_call(payload, trace, warn, (tool, tool_input, call_id), verdict)
        except TraceUnusable as exc:
            warn(f"{exc}; this call is not recorded")
        except Exception as exc:  # the decision stands whatever befalls the trace
            warn(f"{trace}: internal error ({type(exc).__name__}: {exc}); not recorded")
    if verdict["decision"] == "allow" and not options.pass_allow:
        return None  # Claude Code's own rules and prompts still decide
    return _decision(verdict["decision"], verdict["reason"])


def _decide(
    payload: Mapping[str, Any], tool: str, tool_input: dict[str, Any], cwd: Path, warn: Any
) -> dict[str, Any]:
    from metis_runtime._errors import ConfigError
    from metis_runtime.permissions import hierarchy
    from metis_runtime.permissions import load_hierarchy
    from metis_runtime.permissions import parse_mode
    from metis_runtime.permissions import stricter_than_claude_code

    from ._call_decision import call_gate
    from ._call_decision import call_paths
    from ._call_decision import decide_call

    raw_mode = payload.get("permission_mode") or "default"
    known = True
    try:
        mode, auto = parse_mode(raw_mode, "<stdin>: field 'permission_mode'")
    except ConfigError as exc:
        warn(f"{exc}; decided as default, and only a deny is given")
        mode, auto, known = *parse_mode("default", "default"), False
    project = Path(os.environ.get("CLAUDE_PROJECT_DIR") or cwd)
    try:
        loaded = load_hierarchy(hierarchy(project, Path(os.path.expanduser("~"))))
        gate = call_gate(loaded.policy, mode, cwd, auto=auto)
        d = decide_call(loaded.policy, mode, cwd, tool, tool_input, auto=auto, gate=gate)
    except ConfigError as exc:
        raise _Undecidable(str(exc)) from None
    parts = [f"metis: {d.decision.value} at {d.stage.value}"]
    if d.rule is not None:
        origin = next((r.origin for r in loaded.policy.rules if r.recency == d.rule.recency), "")
        parts.append(f"rule {d.rule.pattern}" + (f" ({origin})" if origin else ""))
    if d.detail:
        parts.append(d.detail)
    stricter = stricter_than_claude_code(d, auto=auto, policy=loaded.policy)
    if stricter:
        parts.append("stricter than Claude Code: " + "; ".join(stricter))
    decision = d.decision.value
    if not known and decision == "ask":  # an ask depends on the mode; a deny rule does not
        decision = "allow"
        parts.append(f"unknown mode {raw_mode!r}: an ask is not given")
    # What AUTH-4 derives from (specs/permissions.md): the settings read, as
    # `metis run`'s header records them, and the facts on the paths decided.
    paths = [os.path.realpath(os.path.join(cwd, os.path.expanduser(p)))
             for p in call_paths(tool, tool_input, cwd)]  # fmt: skip
    return {
        "decision": decision,
        "stage": d.stage.value,
        "rule": d.rule.pattern if d.rule is not None else None,
        "reason": "; ".join(parts),
        "facts": d.facts.model_dump(mode="json"),
        "footprint": paths,
        "permissions": gate.header_meta(),
    }


def _record_event(payload: Mapping[str, Any], event: str, options: HookOptions, warn: Any) -> None:
    from metis_runtime._hook_session import TraceUnusable
    from metis_runtime._hook_session import record_result
    from metis_runtime._hook_session import record_stop

    trace = _trace(payload, options, warn)
    if trace is None:
        return
    try:
        if event in _RESULTS:
            call_id = _field(payload, "tool_use_id", str)
            failed = event == "PostToolUseFailure"
            if failed:
                body: Any = _field(payload, "error", str, required=False) or "the tool failed"
            elif "tool_response" not in payload:
                raise _Undecidable("<stdin>: field 'tool_response' is missing")
            else:
                body = payload["tool_response"]
            record_result(payload, trace, warn, call_id, body, failed)
        else:
            record_stop(payload, trace, warn, event)
    except _Undecidable as exc:
        warn(f"{exc}; not recorded")
    except TraceUnusable as exc:
        warn(f"{exc}; this {event} is not recorded")
