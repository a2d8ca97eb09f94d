"""The shell analysis's read-only verdict (specs/permissions.md, "Bash";
`metis_runtime/shell/_readonly.py`, `_analyze.py`, `permissions/_shellfiles.py`).

- `shell:plan-writes`: in `plan` mode, Bash lines that only read (allowed)
  beside lines that write through an operand or a redirection the shell
  defines (`uniq in out`, `[n]<>file`, `tee`, `2>`, `>|`): those must be
  denied at the `plan` stage. Two sides check it. From the trace, AUTH-4's
  deriver (`surely_writes` in `metis_model/_derive_shell.py`) knows each of
  these lines may write, so a decision whose facts call one `read_only`
  breaks AUTH-4. From the world, this module's check looks at the workspace
  after the run: a file a plan run wrote is PERM-4 ("plan admits no mutating
  effect"), whatever the trace says.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from metis_trace import Decision
from metis_trace import Mode

from ._mech_case import Case
from ._mech_case import Problem
from ._mech_read import Traces
from ._mech_read import calls_of
from ._mech_read import changed_files
from ._mech_read import decisions_of
from ._mech_read import script
from ._pieces import bash
from ._workload import Workload

FILES = {"notes.txt": "b\na\na\n", "docs/readme.md": "r\n"}
READS = ("uniq notes.txt", "sort notes.txt | uniq -c", "cat notes.txt docs/readme.md")
WRITES = {
    "uniq notes.txt out.txt": "out.txt",
    "cat <> made.txt": "made.txt",
    "cat 0<> docs/readme.md": None,  # exists: opened, not changed by cat
    "sort notes.txt | tee sorted.txt": "sorted.txt",
    "ls missing 2> err.txt": "err.txt",
    "echo forced >| forced.txt": "forced.txt",
}


def plan_writes() -> Workload:
    return Workload(
        name="mech-shell:plan-writes",
        aims=("shell:plan-writes",),
        files=FILES,
        turns=script([bash(c) for c in READS], [bash(c) for c in WRITES]),
        mode=Mode.PLAN,
    )


def reached(workload: Workload, root: Path, traces: Traces) -> Counter[str]:
    seen: Counter[str] = Counter()
    calls: dict[str, str] = {}
    for _, events in traces.values():
        calls.update({occ: str(i.get("command")) for occ, (t, i) in calls_of(events).items()})
    for _, d in decisions_of(traces):
        line = calls.get(d.occ)
        if line in READS and d.decision is Decision.ALLOW:
            seen["shell:read-allowed"] += 1
        elif line in WRITES and d.decision is Decision.DENY and d.stage == "plan":
            seen["shell:write-denied"] += 1
    return seen


def check(workload: Workload, root: Path, traces: Traces) -> list[Problem]:
    """The workspace after a plan run: no file appeared, none changed."""
    ws = root / "ws"
    return [
        ("PERM-4", f"{name} was written by a plan-mode run", "")
        for name in changed_files(ws, workload.files, ws, skip=".metis")
    ]


CASES = (
    Case(
        "shell:plan-writes",
        "shell",
        ("shell:read-allowed", "shell:write-denied"),
        plan_writes,
        reached,
        check,
    ),
)
