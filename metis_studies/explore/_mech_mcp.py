"""MCP servers (`metis_runtime/mcp/`; specs/mcp.md): one registry, one gate,
one scheduler, whatever the server says about its tools.

`mcp:server` runs `metis run --mcp-config` with a real stdio server
(`_mcp_server`), a settings file allowing the server's tools
(`mcp__explore`) but denying one (`mcp__explore__append`, PERM-2), and:

- turn 1: `slow` (read-only: Safe), `purge` (read-only *and* destructive:
  Exclusive, the destructive hint wins), `lookup` (Safe), `append` (denied):
  the Exclusive call waits for the Safe one before it (SCHED-1, SCHED-3);
- turn 2: `crash` (the server dies mid-call: an error result, the run goes on)
  and `lookup` after it (the server is gone: an error, never a hang).

Own check: the server logs each call it receives, before acting. A call the
gate denied, or a call that was never allowed, must not be in that log
(AUTH-1, seen from the server's side, not the runtime's).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from metis_trace import CallClass, Decision, EffectStart, Mode, ResultStatus

from ._mech import Case, Problem
from ._mech_read import Spec, Traces, calls_of, decisions_of, results_of, script
from ._workload import Rule, Workload

LOG = "mcp-calls.log"  # in the run folder, outside the workspace
_TOOL = "mcp__explore__"


def server() -> Workload:
    entry = {
        "command": sys.executable,
        "args": ["-m", "metis_studies.explore._mcp_server", f"@ROOT@/{LOG}"],
        "env": {"PYTHONPATH": "@CODE@"},
    }
    first: list[Spec] = [
        (f"{_TOOL}slow", {"seconds": 0.4}),
        (f"{_TOOL}purge", {"name": "cache"}),
        (f"{_TOOL}lookup", {"key": "greeting"}),
        (f"{_TOOL}append", {"path": "notes.txt", "text": "denied"}),
    ]
    second: list[Spec] = [(f"{_TOOL}crash", {}), (f"{_TOOL}lookup", {"key": "after"})]
    return Workload(
        name="mech-mcp:server",
        aims=("mcp:server",),
        files={"notes.txt": "n\n"},
        turns=script(first, second),
        mode=Mode.DEFAULT,
        rules=(
            Rule(behavior="allow", pattern="mcp__explore"),
            Rule(behavior="deny", pattern=f"{_TOOL}append"),
        ),
        mcp_servers={"explore": entry},
    )


def reached(workload: Workload, root: Path, traces: Traces) -> Counter[str]:
    seen: Counter[str] = Counter()
    for header, events in traces.values():
        if header.depth != 0:
            continue
        if any(t.startswith(_TOOL) for t in header.tools):
            seen["mcp:registered"] += 1
        calls, results = calls_of(events), results_of(events)
        started = [e.occ for e in events if isinstance(e, EffectStart)]
        classes = {}
        for _, d in decisions_of({"": (header, events)}):
            tool = calls.get(d.occ, ("", {}))[0]
            if not tool.startswith(_TOOL):
                continue
            classes[d.occ] = d.cls
            if d.decision is Decision.DENY and d.stage == "deny_rule":
                seen["mcp:denied"] += 1
        for pos, occ in enumerate(started):
            if classes.get(occ) is CallClass.EXCLUSIVE and any(
                classes.get(o) is CallClass.SAFE for o in started[:pos]
            ):
                seen["mcp:exclusive-waits"] += 1
        for occ, (tool, _) in calls.items():
            r = results.get(occ)
            if r is None or not tool.startswith(_TOOL):
                continue
            if r.status is ResultStatus.OK:
                seen["mcp:call"] += 1
            elif tool.endswith("crash") and r.status is ResultStatus.ERROR:
                seen["mcp:server-died"] += 1
    return seen


def check(workload: Workload, root: Path, traces: Traces) -> list[Problem]:
    log = root / LOG
    lines = log.read_text().splitlines() if log.exists() else []
    allowed: set[str] = set()
    for _, d in decisions_of(traces):
        if d.decision is Decision.ALLOW:
            allowed.add(d.occ)
    out: list[Problem] = []
    for name, (_, events) in traces.items():
        calls = calls_of(events)
        for occ, (tool, _) in calls.items():
            if not tool.startswith(_TOOL) or occ in allowed:
                continue
            short = tool[len(_TOOL) :]
            if any(line.split(" ", 1)[0] == short for line in lines):
                out.append(
                    (
                        "AUTH-1",
                        f"the server ran {short} ({occ}), which the gate did not allow",
                        name,
                    )
                )
    return out


CASES = (
    Case(
        "mcp:server",
        "mcp",
        ("mcp:registered", "mcp:call", "mcp:denied", "mcp:exclusive-waits", "mcp:server-died"),
        server,
        reached,
        check,
    ),
)
