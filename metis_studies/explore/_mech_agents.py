"""Agent definitions (`metis_runtime/agents/_definitions.py`, `_claude.py`,
`_resolve.py`; specs/children.md): which definition a spawn gets, and what it
grants.

- `agents:definition-tools`: a Claude Code definition in the project
  (`.claude/agents/reviewer.md`, `tools: Read, Grep`) shadows the user's
  definition of the same name (explore's, every tool): the project comes
  first. The child's surface is the project's two tools; its `write` is
  outside it (an error result, AUTH-3 holds).
- `agents:definition-mode`: definitions whose `permissionMode` is
  `bypassPermissions` (more than the default parent: clamped to the
  parent's, "never more than the parent's", CHILD-2) and
  `plan` (admitted; the child runs in plan, CHILD-2's "runs in the mode it
  asked for", CHILD-3).

- `agents:definition-env`: a metis definition (`.metis/agents/deployer.md`)
  whose `env` holds a value under a secret-named key (`DEPLOY_PASSWORD`),
  not shaped like any credential format: the child's `config.json`, which
  the supervisor writes into the run's folder, must hold it redacted (the
  whole string under a secret-named key, specs/secrets.md), so the value is
  planted as a canary and TRACE-2 scans that file like the run's others.
- `agents:integrate`: a child in a `temp` workspace writes a file; the
  parent integrates it (`integrate_agent`, naming the child by its
  definition: `_child_ids.py`) in one batch with a read and a write. An
  integration is an `edit` call, Exclusive (specs/children.md): classed
  Queue under an agent's key it would overlap the other calls while writing
  files its key does not name (SCHED-2's key clause, from the decision).

Own check: a spawned child's surface holds only tools its winning definition
grants (the agent tools aside); more means the definition that should win
was lost, and the child may do what its author closed (CHILD-1, the surface
narrowing).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

from metis_trace import Mode
from metis_trace import ResultStatus
from metis_trace import Spawn

from ._child_ids import definition_of
from ._mech_case import Case
from ._mech_case import Problem
from ._mech_read import Traces
from ._mech_read import answered
from ._mech_read import script
from ._pieces import read
from ._pieces import write
from ._workload import Child
from ._workload import Workload

_AGENT_TOOLS = frozenset(
    {"spawn_agent", "kill_agent", "message_agent", "wait_agent", "list_agents"}
)
# Each project definition the workloads place: its file, the tools it grants
# (None: its tools are not restricted) and the mode it names.
DEFINITIONS: dict[str, tuple[str, frozenset[str] | None]] = {
    "reviewer": ("tools: Read, Grep\n", frozenset({"read", "grep"})),
    "escalator": ("tools: Read\npermissionMode: bypassPermissions\n", frozenset({"read"})),
    "planner": (
        "tools: Read, Grep, Write\npermissionMode: plan\n",
        frozenset({"read", "grep", "write"}),
    ),
}


# Not any credential's format: only its key's name says it is secret.
DEPLOY_PASSWORD = "deploy-" + hashlib.sha256(b"explore deployer").hexdigest()[:20]


def _definition(name: str) -> str:
    front = f"name: {name}\ndescription: explore's project {name}\n{DEFINITIONS[name][0]}"
    return f"---\n{front}---\nDo the task.\n"


def _child(name: str) -> Child:
    turns = script(
        [read("notes.txt")], [write("child.txt", "from the child\n")], final=f"{name} done"
    )
    return Child(name=name, tools=None, turns=turns)


def _spawn(name: str) -> tuple[str, dict[str, str]]:
    return ("spawn_agent", {"agent": name, "task": f"{name}: look at the notes", "mode": "sync"})


def _spawning(
    aim: str,
    names: tuple[str, ...],
    mode: Mode,
    placed: dict[str, str],
    canaries: tuple[str, ...] = (),
) -> Workload:
    """The definition workloads: the parent spawns each named definition, one
    a turn, and each child reads the notes and writes a file."""
    return Workload(
        name=f"mech-{aim}",
        aims=(aim,),
        files={"notes.txt": "notes\n"},
        turns=script(*([_spawn(n)] for n in names)),
        mode=mode,
        placed=placed,
        agents=tuple(_child(n) for n in names),
        canaries=canaries,
    )


def definition_tools() -> Workload:
    placed = {"ws/.claude/agents/reviewer.md": _definition("reviewer")}
    return _spawning("agents:definition-tools", ("reviewer",), Mode.ACCEPT_EDITS, placed)


def definition_mode() -> Workload:
    names = ("escalator", "planner")
    placed = {f"ws/.claude/agents/{n}.md": _definition(n) for n in names}
    return _spawning("agents:definition-mode", names, Mode.DEFAULT, placed)


def definition_env() -> Workload:
    front = (
        "name: deployer\ndescription: explore's deployer\ntools: Read\n"
        f"env:\n  DEPLOY_PASSWORD: {DEPLOY_PASSWORD}\n"
    )
    placed = {"ws/.metis/agents/deployer.md": f"---\n{front}---\nDeploy.\n"}
    return _spawning(
        "agents:definition-env",
        ("deployer",),
        Mode.ACCEPT_EDITS,
        placed,
        canaries=(DEPLOY_PASSWORD,),
    )


def integrate() -> Workload:
    child = Child(
        name="integrator",
        tools=None,
        turns=script([write("from-child.txt", "from the child\n")], final="integrator done"),
    )
    spawn = {"agent": "integrator", "task": "write from-child.txt", "mode": "sync"}
    return Workload(
        name="mech-agents:integrate",
        aims=("agents:integrate",),
        files={"notes.txt": "notes\n"},
        turns=script(
            [("spawn_agent", {**spawn, "worktree": "temp"})],
            [
                read("notes.txt"),
                ("integrate_agent", {"agent_id": "@@child:integrator@@"}),
                write("beside.txt", "written beside the integration\n"),
            ],
        ),
        mode=Mode.ACCEPT_EDITS,
        agents=(child,),
    )


def _spawned(traces: Traces) -> list[tuple[str, Spawn, str]]:
    """Each spawn of the root: (definition name, event, child's trace name)."""
    out = []
    for _, (header, events) in traces.items():
        if header.depth != 0:
            continue
        for e in events:
            if isinstance(e, Spawn):
                out.append((definition_of(e.agent_id), e, e.agent_id))
    return out


def reached(workload: Workload, root: Path, traces: Traces) -> Counter[str]:
    seen: Counter[str] = Counter()
    for name, spawn, _ in _spawned(traces):
        grants = DEFINITIONS.get(name, ("", None))[1]
        if grants is not None and set(spawn.child_tools) - _AGENT_TOOLS == grants:
            seen["agents:project-over-user"] += 1
        if name == "planner" and spawn.child_mode is Mode.PLAN:
            seen["agents:definition-mode-plan"] += 1
        if name == "escalator" and spawn.child_mode is spawn.parent_mode:
            seen["agents:definition-mode-clamped"] += 1  # bypassPermissions asked: the parent's
    for config in (root / "run").rglob("config.json"):
        if '"DEPLOY_PASSWORD"' in config.read_text(errors="replace"):
            seen["agents:definition-env"] += 1  # written: TRACE-2 scanned it
    for header, tool, _, r in answered(traces):
        if r.status is ResultStatus.ERROR and header.depth > 0 and tool not in header.tools:
            seen["agents:tool-outside-surface"] += 1
        if tool == "integrate_agent" and r.status is ResultStatus.OK:
            seen["agents:integrated-beside-calls"] += 1
    return seen


def check(workload: Workload, root: Path, traces: Traces) -> list[Problem]:
    out: list[Problem] = []
    for name, spawn, _ in _spawned(traces):
        grants = DEFINITIONS.get(name, ("", None))[1]
        extra = set(spawn.child_tools) - _AGENT_TOOLS - (grants or set())
        if grants is not None and extra:
            out.append(
                (
                    "CHILD-1",
                    f"child {name}'s surface holds {sorted(extra)}, which its "
                    "winning definition (the project's) does not grant",
                    "",
                )
            )
    return out


CASES = (
    Case(
        "agents:definition-tools",
        "agents",
        ("agents:project-over-user", "agents:tool-outside-surface"),
        definition_tools,
        reached,
        check,
    ),
    Case(
        "agents:definition-mode",
        "agents",
        ("agents:definition-mode-clamped", "agents:definition-mode-plan"),
        definition_mode,
        reached,
        check,
    ),
    Case("agents:definition-env", "agents", ("agents:definition-env",), definition_env, reached),
    Case("agents:integrate", "agents", ("agents:integrated-beside-calls",), integrate, reached),
)
