"""MCP servers (`metis_runtime/mcp/`; specs/mcp.md): one registry, one gate,
one scheduler, whatever the server says about its tools.

`mcp:server` runs `metis run --mcp-config` with a real stdio server
(`_mcp_server`), a settings file allowing the server's tools
(`mcp__explore`) but denying one (`mcp__explore__reveal`, PERM-2), and:

- turn 1: `slow` (read-only: Safe), `purge` (read-only *and* destructive:
  Exclusive, the destructive hint wins), `lookup` (Safe), `reveal` (denied):
  the Exclusive call waits for the Safe one before it (SCHED-1, SCHED-3);
- turn 2: `crash` (the server dies mid-call: an error result, the run goes on)
  and `lookup` after it (the server is gone: an error, never a hang).

Own checks, from what the workload knows rather than what the trace claims:
the server logs each call of the denied tool it receives, before acting, and
a call the gate did not allow must not be in that log (AUTH-1, seen from the server's side); a
call the settings' deny rule names must be denied (PERM-2); a tool the
server annotates destructive, or not at all, must be classified Exclusive
(SCHED-1: a Safe classification would let it overlap).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

from metis_trace import CallClass
from metis_trace import Decision
from metis_trace import EffectStart
from metis_trace import Mode
from metis_trace import ResultStatus

from ._mech_case import Case
from ._mech_case import Problem
from ._mech_read import Spec
from ._mech_read import Traces
from ._mech_read import calls_of
from ._mech_read import decisions_of
from ._mech_read import results_of
from ._mech_read import script
from ._workload import Rule
from ._workload import Workload

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
        (f"{_TOOL}reveal", {"name": "deploy"}),
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
            Rule(behavior="deny", pattern=f"{_TOOL}reveal"),
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


# What the server's annotations make each tool (specs/mcp.md, "Classification").
CLASSES = {
    "lookup": CallClass.SAFE,
    "slow": CallClass.SAFE,
    "purge": CallClass.EXCLUSIVE,  # read-only but destructive: the destructive hint wins
    "reveal": CallClass.EXCLUSIVE,
    "crash": CallClass.EXCLUSIVE,
}


def check(workload: Workload, root: Path, traces: Traces) -> list[Problem]:
    log = root / LOG
    ran = {line.split(" ", 1)[0] for line in (log.read_text().splitlines() if log.exists() else [])}
    denies = [r.pattern for r in workload.rules if r.behavior == "deny"]
    allowed = {
        calls_of(events).get(d.occ, ("", {}))[0][len(_TOOL) :]
        for header, events in traces.values()
        for _, d in decisions_of({"": (header, events)})
        if d.decision is Decision.ALLOW
    }
    out: list[Problem] = []
    for name, (header, events) in traces.items():
        calls = calls_of(events)
        for _, d in decisions_of({name: (header, events)}):
            tool = calls.get(d.occ, ("", {}))[0]
            short = tool[len(_TOOL) :]
            if not tool.startswith(_TOOL):
                continue
            if d.decision is not Decision.ALLOW and short in ran - allowed:
                out.append(("AUTH-1", f"the server ran {short} ({d.occ}), not allowed", name))
            named = any(tool == p or tool.startswith(p + "__") for p in denies)
            if named and d.decision is not Decision.DENY:
                out.append(
                    ("PERM-2", f"{tool} ({d.occ}): a deny rule names it; {d.decision}", name)
                )
            want = CLASSES.get(short)
            if want is CallClass.EXCLUSIVE and d.cls is not want:
                out.append(
                    (
                        "SCHED-1",
                        f"{tool} ({d.occ}) is destructive or unannotated, so"
                        f" Exclusive; recorded {d.cls.value}, it may overlap others",
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
