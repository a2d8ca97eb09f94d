"""The Claude Code hook's payloads for `hook:session` (`_mech_hook.py`): one
session, as the hooks reference documents each event's fields
(https://code.claude.com/docs/en/hooks: the common fields, PreToolUse,
PostToolUse, PostToolUseFailure, Stop, SessionEnd)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

__all__ = ["PAYLOADS", "PROJECT", "USER", "payload", "session_id"]


def session_id(root: Path) -> str:
    """One per run folder: the session's helper is found by its id."""
    return "explore-" + hashlib.sha256(str(root).encode()).hexdigest()[:16]


PROJECT = {
    "permissions": {
        "deny": ["Bash(rm *)", "Read(.env)"],
        # `*.` is subdomains at any depth, not the apex (docs; 2.1.172).
        "allow": ["Bash(npm test)", "WebFetch(domain:*.docs.example.com)"],
    }
}
API, APEX = "https://api.docs.example.com/ref", "https://docs.example.com/"
USER = {"permissions": {"ask": ["Bash(git push *)"]}}
# (event, tool, input, mode, tool_use_id); "{p}" is the project.
PAYLOADS: tuple[tuple[str, str, dict[str, Any], str, str], ...] = (
    ("PreToolUse", "Bash", {"command": "rm -rf build"}, "default", "t1"),
    ("PreToolUse", "Bash", {"command": "git push origin main"}, "default", "t2"),
    ("PreToolUse", "Bash", {"command": "npm test"}, "default", "t3"),
    ("PostToolUse", "Bash", {"command": "npm test"}, "default", "t3"),
    (
        "PreToolUse",
        "Write",
        {"file_path": "{p}/.husky/pre-commit", "content": "x"},
        "bypassPermissions",
        "t4",
    ),
    ("PreToolUse", "Write", {"file_path": "{p}/src/a.py", "content": "x"}, "plan", "t5"),
    ("PreToolUse", "Read", {"file_path": "{p}/.env"}, "default", "t6"),
    ("PreToolUse", "Read", {"file_path": "{p}/README.md"}, "default", "t7"),
    ("PreToolUse", "Grep", {"pattern": "TODO"}, "default", "t8"),
    ("PostToolUse", "Read", {"file_path": "{p}/README.md"}, "default", "t7"),
    ("PostToolUseFailure", "Grep", {"pattern": "TODO"}, "default", "t8"),
    ("PreToolUse", "Bash", {"command": "git push origin dev"}, "default", "t9"),
    ("PreToolUse", "WebFetch", {"url": API, "prompt": "p"}, "default", "t10"),
    ("PostToolUse", "WebFetch", {"url": API, "prompt": "p"}, "default", "t10"),
    ("PreToolUse", "WebFetch", {"url": APEX, "prompt": "p"}, "default", "t11"),
    ("Stop", "", {}, "default", ""),
    ("SessionEnd", "", {}, "default", ""),
)


def payload(
    root: Path, event: str, tool: str, inp: dict[str, Any], mode: str, tid: str
) -> dict[str, Any]:
    p = str(root / "ws")
    base: dict[str, Any] = {
        "session_id": session_id(root),
        "transcript_path": f"{p}/t.jsonl",
        "cwd": p,
        "permission_mode": mode,
        "hook_event_name": event,
    }
    if tool:
        filled = {k: v.replace("{p}", p) if isinstance(v, str) else v for k, v in inp.items()}
        base.update(tool_name=tool, tool_input=filled, tool_use_id=tid)
    if event == "PostToolUse":
        base["tool_response"] = {"stdout": "ok", "stderr": "", "interrupted": False}
    elif event == "PostToolUseFailure":
        base["error"] = "exit status 1"
    elif event == "Stop":
        base["stop_hook_active"] = False
    elif event == "SessionEnd":
        base["reason"] = "exit"
    return base
