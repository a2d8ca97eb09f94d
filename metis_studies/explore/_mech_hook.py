"""The Claude Code hook (`metis hook claude-code`: `metis_cli/_hook*.py`,
`metis_runtime/_hook_session.py`; specs/permissions.md, "The Claude Code hook").

`hook:session` is a probe: one session's payloads, as the hooks reference
documents them (https://code.claude.com/docs/en/hooks), each sent to its own
`python -m metis_cli hook claude-code` process under a HOME and managed folder
of the run's own, with the session's helper process (`METIS_HOOK_HELPER=1`,
as users get it: later calls are answered by it; it ends with the session),
with project and user settings placed (`_mech_hook_payloads.py`): PreToolUse
calls that a project deny, a user ask, a protected path, plan mode and
nothing decide; two calls open at once, closed by PostToolUse and
PostToolUseFailure; an ask still open at Stop; SessionEnd. Every hook output is kept in
`run/hook-outputs.jsonl`.

Checked: the hook's trace (`ws/.metis/claude-code/<session>.jsonl`, a Claude
Code session file) with `check_claude_code_tree` (closure: CLOSE-*; a call
still open at its end counts, since the session was ended: an ask left open
at Stop must be closed as not approved); and each
PreToolUse output against the model's reference deriver over the *placed*
settings (`metis_model.derive`, not the hook's gate): a call a placed deny
rule matches must be denied (PERM-2), one an ask rule matches asked or
denied (PERM-1); a write in plan mode denied (PERM-4); a write to a
protected path (`.husky/`) never let through, in bypassPermissions too (PERM-3);
a WebFetch of `docs.example.com` under the allow `WebFetch(domain:*.docs.example.com)`
(subdomains only, by the docs) not allowed (PERM-1), its subdomain allowed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from metis_model import Recorded
from metis_model import derive
from metis_model import parse_recorded_rule
from metis_trace import InputError

from ._mech_case import Case
from ._mech_case import Problem
from ._mech_hook_payloads import PAYLOADS
from ._mech_hook_payloads import PROJECT
from ._mech_hook_payloads import USER
from ._mech_hook_payloads import payload
from ._mech_hook_payloads import session_id
from ._mech_read import Traces
from ._mech_read import script
from ._mech_run import MANAGED_ENV
from ._workload import Workload

_TOOLS = {
    "Bash": "bash",
    "Read": "read",
    "Write": "write",
    "Edit": "edit",
    "Grep": "grep",
    "WebFetch": "webfetch",
}


def session() -> Workload:
    return Workload(
        name="mech-hook:session",
        aims=("hook:session",),
        files={"README.md": "# readme\n", ".env": "KEY=1\n"},
        turns=script(),
        probe="claude-code-hook",
        placed={
            "ws/.claude/settings.json": json.dumps(PROJECT),
            "home/.claude/settings.json": json.dumps(USER),
        },
    )


def run(workload: Workload, root: Path, timeout: float) -> tuple[list[str], str | None]:
    env = {k: v for k, v in os.environ.items() if k != "CLAUDE_PROJECT_DIR"}
    here = str(Path(__file__).resolve().parents[2])
    env.update(HOME=str(root / "home"), METIS_HOOK_HELPER="1", PYTHONPATH=here)
    env[MANAGED_ENV] = str(root / "managed")
    argv = [sys.executable, "-m", "metis_cli", "hook", "claude-code"]
    out = (root / "run" / "hook-outputs.jsonl").open("w", encoding="utf-8")
    with out:
        for event, tool, inp, mode, tid in PAYLOADS:
            sent = payload(root, event, tool, inp, mode, tid)
            done = subprocess.run(
                argv,
                input=json.dumps(sent),
                capture_output=True,
                text=True,
                env=env,
                timeout=timeout,
                check=False,
            )
            if done.returncode != 0 or "Traceback" in done.stderr:
                return [" ".join(argv)], f"exit {done.returncode}: {done.stderr.strip()[-300:]}"
            answer = json.loads(done.stdout) if done.stdout.strip() else None
            out.write(json.dumps({"payload": sent, "output": answer}) + "\n")
    return [f"{' '.join(argv)} x{len(PAYLOADS)}"], None


def _outputs(root: Path) -> list[dict[str, Any]]:
    path = root / "run" / "hook-outputs.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _decision(item: dict[str, Any]) -> str:
    specific = (item.get("output") or {}).get("hookSpecificOutput") or {}
    return str(specific.get("permissionDecision", "none"))


def _recorded(root: Path) -> Recorded:
    ws, home = str(root / "ws"), str(root / "home")
    items = []
    for source, base, settings in (
        ("project", ws, PROJECT),
        ("persisted", f"{home}/.claude", USER),
    ):
        for behavior, patterns in settings["permissions"].items():
            items += [
                {"behavior": behavior, "source": source, "pattern": p, "base": base}
                for p in patterns
            ]
    rules = [parse_recorded_rule({**r, "recency": n}, ws) for n, r in enumerate(items, 1)]
    return Recorded(ws, home, (ws,), (), False, tuple(r for r in rules if r is not None))


def _expected(recorded: Recorded, payload: dict[str, Any]) -> tuple[str, set[str]] | None:
    """(ID, decisions the model admits) for one PreToolUse, where it is sure."""
    tool, inp = _TOOLS.get(payload["tool_name"], ""), dict(payload["tool_input"])
    if "file_path" in inp:
        inp["path"] = inp.pop("file_path")
    derived = derive(recorded, tool, inp, {str(inp.get("path"))})
    behaviors = {r.behavior.value for r in derived.rules}
    if "deny" in behaviors:
        return "PERM-2", {"deny"}
    if tool in ("write", "edit") and payload["permission_mode"] == "plan":
        return "PERM-4", {"deny"}
    if tool in ("write", "edit") and "/.husky/" in str(inp.get("path")):
        return "PERM-3", {"ask", "deny"}
    if "ask" in behaviors:
        return "PERM-1", {"ask", "deny"}
    allows = [r.ref for r in recorded.rules if r.tool == tool and r.ref.behavior.value == "allow"]
    if tool == "webfetch" and allows and set(allows) <= derived.unmatched:
        return "PERM-1", {"ask", "none"}  # no allow rule applies to this host
    return None


def check(workload: Workload, root: Path, traces: Traces) -> list[Problem]:
    from metis_check.transcripts import check_claude_code_tree

    out: list[Problem] = []
    trace = root / "ws" / ".metis" / "claude-code" / f"{session_id(root)}.jsonl"
    if not trace.exists():
        return [("CLOSE-2", "the hook wrote no session trace", str(trace))]
    try:
        report = check_claude_code_tree(trace.read_text(), {}, source=trace.name)
        out += [(v.invariant, v.message, trace.name) for v in report.violations]
        # The session ended (Stop, SessionEnd were sent): a call open at the
        # end is not a live or cut input but one the hook never closed.
        out += [
            (u.invariant, u.message, trace.name)
            for u in report.undecided
            if u.status == "open-at-end"
        ]
    except InputError as exc:  # not a session file: unreadable, not an invariant
        out.append(("FORMAT", exc.describe(trace.name), trace.name))
    recorded = _recorded(root)
    for item in _outputs(root):
        payload = item["payload"]
        if payload["hook_event_name"] != "PreToolUse":
            continue
        want = _expected(recorded, payload)
        if want is not None and _decision(item) not in want[1]:
            out.append(
                (
                    want[0],
                    f"hook answered {_decision(item)} to {payload['tool_name']} "
                    f"{payload['tool_input']} in {payload['permission_mode']}; the model admits "
                    f"{sorted(want[1])}",
                    "hook-outputs.jsonl",
                )
            )
    return out


def reached(workload: Workload, root: Path, traces: Traces) -> Counter[str]:
    seen: Counter[str] = Counter()
    trace = root / "ws" / ".metis" / "claude-code" / f"{session_id(root)}.jsonl"
    lines = [json.loads(x) for x in trace.read_text().splitlines()] if trace.exists() else []
    for line in lines:
        record = line.get("metis") or {}
        if record.get("decision"):
            seen[f"hook-cc:{record['decision']}"] += 1
        if line.get("type") == "system" and line.get("subtype") == "stop":
            seen["hook-cc:stop"] += 1
        for block in (line.get("message") or {}).get("content") or []:
            if (
                isinstance(block, dict)
                and block.get("type") == "tool_result"
                and block.get("tool_use_id") in ("t7", "t8")
            ):
                seen["hook-cc:overlapping-closed"] += 1
    return seen


CASES = (
    Case(
        "hook:session",
        "hook",
        (
            "hook-cc:deny",
            "hook-cc:ask",
            "hook-cc:allow",
            "hook-cc:stop",
            "hook-cc:overlapping-closed",
        ),
        session,
        reached,
        check,
        run,
    ),
)
