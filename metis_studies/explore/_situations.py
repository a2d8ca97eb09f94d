"""Workload strategies: pieces composed into runs, model runs turned into scripts.

- `workloads(focus=...)`: one turn per piece (`_pieces.BUILDERS`), the
  focused piece first, then up to two others; the settings each piece needs
  (a plan root is in plan mode, asks come in default mode), a route and its
  headless default, the scripted answers, a context window small enough for
  the ladder when a piece fills the context, and a fault: a SIGKILL at one of
  the fail points this script reaches (after admit, after commit, before the
  result, before `results_sent`, ...), or a cancel or interrupt when a call
  starts.
- `simulated()`: `metis_model.simulate` runs (random seed and shape) whose
  batches become concrete calls of the same kinds and classes, with their
  repeated ids, cancels, interrupts and ask answers.
- `any_workload()`: either, for `metis explore`.

Hypothesis shrinks all of them: fewer pieces, calls and turns; no fault
before a fault; the first mode, route and execution before the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from metis_check import SimConfig
from metis_check import simulate
from metis_trace import AskResolved
from metis_trace import Assistant
from metis_trace import CallClass
from metis_trace import Decision
from metis_trace import DecisionEvent
from metis_trace import Mode
from metis_trace import Route

from ._pieces import BUILDERS
from ._pieces import SLOW_SAFE
from ._pieces import Piece
from ._pieces import Spec
from ._pieces import asks as ask_piece
from ._pieces import background
from ._pieces import bash
from ._pieces import canaries
from ._pieces import context_fill
from ._pieces import edit
from ._pieces import grep
from ._pieces import guarded
from ._pieces import hooked
from ._pieces import ls
from ._pieces import plan_root
from ._pieces import policy
from ._pieces import read
from ._pieces import spawns
from ._pieces import write
from ._workload import KILLS
from ._workload import Call
from ._workload import Child
from ._workload import Fault
from ._workload import Hook
from ._workload import Rule
from ._workload import Turn
from ._workload import Workload

MUTATING = ("write", "edit", "spawn_agent", "kill_agent", "message_agent")
_EXEC_WORDS = ("touch", "rm", "sleep", "mkdir", "mv", "cp")


def _mutating(call: Call) -> bool:
    """Whether the runtime journals the call's effect (a guess from its input:
    bash writing with `>` or running a command that is not read-only)."""
    if call.tool in MUTATING:
        return True
    command = str(call.input.get("command", "")) if call.tool == "bash" else ""
    words = command.split()
    return bool(words) and (">" in command or words[0] in _EXEC_WORDS)


_MODES = (Mode.ACCEPT_EDITS, Mode.DEFAULT, Mode.BYPASS, Mode.DONT_ASK)
_ROUTES = (Route.HEADLESS, Route.INTERACTIVE, Route.PROTOCOL)


def _turn(piece: Piece, t: int) -> Turn:
    ids = piece.ids or tuple(f"toolu_{t}_{i}" for i in range(len(piece.calls)))
    calls = tuple(
        Call(id=i, tool=tool, input=inp) for i, (tool, inp) in zip(ids, piece.calls, strict=True)
    )
    return Turn(calls=calls, thinking=piece.thinking)


def kill_points(turns: Sequence[Turn]) -> list[str]:
    """Every fail point the script may reach, journal points of effects first."""
    effects: list[str] = []
    others: list[str] = []
    for t, turn in enumerate(turns, 1):
        if not turn.calls:
            continue
        others += [
            f"journal:message:{t}.assistant",
            f"journal:message:{t}.results",
            f"trace:results_sent:{t}",
        ]
        for i, call in enumerate(turn.calls):
            occ = f"{t}.{i}"
            if _mutating(call):
                effects += [f"journal:admit:{occ}", f"journal:commit:{occ}", f"trace:result:{occ}"]
            others += [
                f"trace:effect_start:{occ}",
                f"trace:effect_end:{occ}",
                f"trace:result:{occ}",
            ]
    return [*effects, *others, "journal:end:"]


@st.composite
def _fault(draw: st.DrawFn, turns: Sequence[Turn], focus: str) -> Fault | None:
    occs = [f"{t}.{i}" for t, turn in enumerate(turns, 1) for i in range(len(turn.calls))]
    wanted = focus.split(":", 1)[0]
    if wanted in ("kill", "cancel", "interrupt", "fail"):
        kind = wanted
    else:
        kind = draw(st.sampled_from(["none", "kill", "cancel", "interrupt"]))
    if kind == "none" or not occs:
        return None
    if kind == "kill" and focus == "kill:recovery":
        # The recovery killed too: after a kill in a batch, its resume is killed
        # once its repair is written (before the next turn, or its request),
        # and resumed again (a repair closes its batch, RETRY/CLOSE: loop.md).
        points = [p for p in kill_points(turns) if p.split(":")[1] in ("admit", "commit")]
        point = draw(st.sampled_from(points or kill_points(turns)[:-1]))
        turn = int(point.rsplit(":", 1)[1].split(".")[0])
        again = draw(st.sampled_from([f"trace:turn_start:{turn + 1}", f"trace:request:{turn + 1}"]))
        return Fault(kind="kill", point=point, again=again)
    if kind == "kill":
        prefix = focus[len("kill:") :] if focus.startswith("kill:") else ""
        points = [p for p in kill_points(turns) if p.startswith(prefix)] or kill_points(turns)
        return Fault(kind="kill", point=draw(st.sampled_from(points)))
    return Fault(kind=kind, point=draw(st.sampled_from(occs)))


# The sweep `metis explore` starts with: each situation issue 11 lists, aimed at once.
SWEEP: tuple[str, ...] = (  # in-process first; child processes, then kills, cost more
    "queue-3",
    "exclusive-waits",
    "asks:interactive",
    "asks:protocol",
    "asks:headless-allow",
    "asks:headless-deny",
    "context",
    "overflow",
    "hooks",
    "hooks:veto",
    "hooks:failing",
    "plan-root",
    "policy",
    "policy:default",
    "policy:dontAsk",
    "policy:bypass",
    "canary",
    "background",
    "repeated-ids",
    "cancel",
    "interrupt",
    "fail",
    "turn-limit",
    "plan-child",
    "spawn",
    "spawn:escalate",
    "spawn:narrowed",
    "hooks:child",
    "guard",
    "guard:concurrent",
    "nested",
    *KILLS,
)
_ASK_ROUTES = {
    "asks:interactive": (Route.INTERACTIVE, Decision.DENY),
    "asks:protocol": (Route.PROTOCOL, Decision.DENY),
    "asks:headless-allow": (Route.HEADLESS, Decision.ALLOW),
    "asks:headless-deny": (Route.HEADLESS, Decision.DENY),
}
_EFFECTS = ("exclusive-waits", "queue-3", "background", "spawn")
_LADDER = (9_000, 9_000, 30_000, 9_000)  # result sizes that climb the whole ladder
_FULL = {
    "asks": ask_piece,
    "plan-root": plan_root,
    "canary": canaries,
    "policy": policy,
    "background": background,
}
_POLICY_MODES = {
    "policy": Mode.ACCEPT_EDITS,
    "policy:default": Mode.DEFAULT,
    "policy:dontAsk": Mode.DONT_ASK,
    "policy:bypass": Mode.BYPASS,
}


def _pieces(draw: st.DrawFn, focus: str) -> tuple[list[str], list[Piece]]:
    """The pieces' names and pieces: the focused ones first, up to two more."""
    kind = focus.split(":", 1)[0]
    first: list[str] = []
    if focus in ("context", "overflow"):
        first = ["context"] * 4  # the ladder climbs over several turns
    elif focus == "hooks:child":
        first = ["hooks", "spawn"]
    elif focus in BUILDERS or kind in ("asks", "hooks", "policy"):
        first = [kind]
    elif focus in ("plan-child", "spawn:escalate", "spawn:narrowed"):
        first = ["spawn"]
    elif focus == "guard:concurrent":
        first = ["guard"]
    elif kind == "kill":
        first = [draw(st.sampled_from(_EFFECTS))]
    elif focus == "fail":
        first = ["queue-3"]  # after its first result, the chain's later calls are open
    elif focus == "turn-limit":
        first = ["exclusive-waits", "queue-3"]
    names = list(first)
    pieces = []
    # Each further piece draws its name and its content together, so the shrinker
    # can drop one piece (the block of its draws) without scrambling the others.
    extra = draw(st.integers(0 if first else 1, 2))
    for k in range(len(first) + extra):
        if k >= len(first):
            names.append(draw(st.sampled_from(list(BUILDERS))))
        name = names[k]
        if focus == "plan-child" and k == 0:
            pieces.append(draw(spawns(k, plan=True)))
        elif focus == "spawn:escalate" and k == 0:
            pieces.append(draw(spawns(k, plan=False, asked="bypassPermissions")))
        elif focus == "spawn:narrowed" and k == 0:
            pieces.append(draw(spawns(k, plan=False, narrow=True)))
        elif focus == "guard:concurrent" and k == 0:
            pieces.append(draw(guarded(k, limit="max_concurrent")))
        elif focus == "hooks:failing" and k == 0:
            pieces.append(draw(hooked(k, veto=True, fails=True)))
        elif focus == "hooks:veto" and k == 0:
            pieces.append(draw(hooked(k, veto=True)))
        elif focus == "hooks:child" and k < 2:
            # A vetoing hook on writes, and a child that writes: it inherits the hook.
            piece = hooked(k, veto=True, matchers=("write",)) if k == 0 else spawns(k, False, "")
            pieces.append(draw(piece))
        elif focus in ("context", "overflow") and k < len(first):
            size = _LADDER[k % len(_LADDER)]
            pieces.append(draw(context_fill(k, size=size, planted=size == max(_LADDER))))
        elif k == 0 and first and name in _FULL:
            pieces.append(draw(_FULL[name](k, full=True)))  # every variant, in one turn
        else:
            pieces.append(draw(BUILDERS[name](k)))
    return names, pieces


def _mode(draw: st.DrawFn, names: Sequence[str], focus: str) -> Mode:
    if focus in _POLICY_MODES:
        return _POLICY_MODES[focus]
    if "plan-root" in names:
        return Mode.PLAN
    if "asks" in names:
        return Mode.DEFAULT
    if focus.startswith("kill"):
        return draw(st.sampled_from([Mode.ACCEPT_EDITS, Mode.BYPASS]))
    if focus == "background":
        # Its jobs are bash with a redirect: any other mode may ask, and a
        # rejected ask leaves nothing to reach (the draw used to get lucky).
        return Mode.BYPASS
    return draw(st.sampled_from(_MODES))


@st.composite
def workloads(draw: st.DrawFn, focus: str = "") -> Workload:
    """A run aimed at `focus` (one of `SWEEP`, or a piece name), or at
    whatever the draw combines when `focus` is empty."""
    names, pieces = _pieces(draw, focus)
    turns = [_turn(p, t) for t, p in enumerate(pieces, 1)]
    context = "context" in names
    if context:
        # Latest first: an overflow late in the run has turns before it to fold.
        at = draw(st.sampled_from(range(len(turns), 0, -1)))
        if focus == "overflow" or draw(st.booleans()):
            turns[at - 1] = turns[at - 1].model_copy(update={"overflow": True})
    turns.append(Turn(text="All done."))
    asks = sum(p.asks for p in pieces) + 2
    if focus in _ASK_ROUTES:
        route, default = _ASK_ROUTES[focus]
        offset = draw(st.integers(0, 1))  # answers alternate: both kinds come
        answers = tuple((i + offset) % 2 == 0 for i in range(asks))
    else:
        route = draw(st.sampled_from(_ROUTES))
        default = draw(st.sampled_from([Decision.DENY, Decision.ALLOW]))
        answers = tuple(draw(st.lists(st.booleans(), min_size=asks, max_size=asks)))
    files: dict[str, str] = {}
    for p in pieces:
        files.update(p.files)
    rules: list[Rule] = []
    for p in pieces:
        rules += [r for r in p.rules if r not in rules]
    agents: dict[str, Child] = {}
    for p in pieces:
        agents.update({c.name: c for c in p.agents})
    hooks: list[Hook] = [h for p in pieces for h in p.hooks]
    guard = {name: value for p in pieces for name, value in p.guard}
    window = draw(st.sampled_from([4_000, 1_500, 12_000])) if context else None
    aims = [focus] if focus else []
    aims += [a for p in pieces for a in p.aims]
    fault = draw(_fault(turns, focus))
    if fault is not None:
        aims.append(f"{fault.kind}:{fault.point}" if fault.kind == "kill" else fault.kind)
    if any(t.overflow for t in turns):
        aims.append("overflow")
    return Workload(
        name=f"w-{'-'.join(names)}",
        aims=tuple(dict.fromkeys(aims)),
        files=files,
        turns=tuple(turns),
        mode=_mode(draw, names, focus),
        route=route,
        headless_default=default,
        rules=tuple(rules),
        answers=answers,
        hooks=tuple(hooks),
        context_window=window,
        context_recent=draw(st.sampled_from([2, 1])) if context else 4,
        agents=tuple(agents.values()),
        fault=fault,
        canaries=tuple(c for p in pieces for c in p.canaries),
        guard=guard,
        max_turns=len(pieces) if focus == "turn-limit" else None,
    )


# --- model runs as scripts ----------------------------------------------------------

_SIM_FILES = {
    "sim/src/app.py": "def main():\n    return 'hello'\n\n# TODO: log the greeting\n",
    "sim/notes.txt": "step0\n",
    "sim/f0.txt": "v0\n",
    "sim/f1.txt": "v0\n",
}


def _concrete(tool: str, decision: DecisionEvent | None, n: int, edits: dict[str, int]) -> Spec:
    """A runtime call of the same kind and class as the model's abstract one."""
    cls = decision.cls if decision is not None else None
    key = decision.key if decision is not None else None
    if tool == "read":
        return read("sim/src/app.py")
    if tool == "grep":
        return grep("TODO", "sim")
    if tool == "ls":
        return ls("sim")
    if tool in ("edit", "write"):
        name = "f1" if key and key.endswith("f1.txt") else "f0"
        version = edits.get(name, 0)
        edits[name] = version + 1
        if tool == "write":
            return write(f"sim/{name}.txt", f"v{version + 1}\n")
        return edit(f"sim/{name}.txt", f"v{version}", f"v{version + 1}")
    if tool == "bash":
        if cls is CallClass.BACKGROUND:
            return bash(f"seq 1 100000 > sim/job{n}.txt", background=True)
        if cls is CallClass.SAFE:
            return bash(SLOW_SAFE if n % 2 else "cat sim/notes.txt")
        return bash(f"echo call{n} >> sim/log.txt")
    if tool == "spawn_agent":
        return ("spawn_agent", {"agent": "simchild", "task": f"subtask {n}", "mode": "sync"})
    return (tool, {"n": n})  # a tool the runtime does not have: an error result


@st.composite
def simulated(draw: st.DrawFn) -> Workload:
    """A random run of the model (`simulate`) turned into a script for the runtime."""
    seed = draw(st.integers(0, 2**16))
    config = SimConfig(
        turns=draw(st.integers(2, 5)),
        max_batch=draw(st.integers(1, 5)),
        route=Route.HEADLESS,
        headless_default=draw(st.sampled_from([Decision.DENY, Decision.ALLOW])),
    )
    header, events = simulate(seed, config)
    decisions = {e.occ: e for e in events if isinstance(e, DecisionEvent)}
    answers = tuple(e.approved for e in events if isinstance(e, AskResolved))
    turns: list[Turn] = []
    edits: dict[str, int] = {}
    n = 0
    for e in events:
        if not isinstance(e, Assistant) or not e.calls:
            continue
        calls = []
        for c in e.calls:
            n += 1
            tool, inp = _concrete(c.tool, decisions.get(c.occ), n, edits)
            calls.append(Call(id=c.call_id, tool=tool, input=inp))
        turns.append(Turn(calls=tuple(calls)))
    turns.append(Turn(text="Done."))
    faults: list[Fault] = []
    kinds = [e.kind for e in events]
    occs = [c.occ for t in [e for e in events if isinstance(e, Assistant)] for c in t.calls]
    if ("cancel" in kinds or "interrupt" in kinds) and occs:
        kind = "cancel" if "cancel" in kinds else "interrupt"
        faults.append(Fault(kind=kind, point=draw(st.sampled_from(occs))))
    child = Child(
        name="simchild",
        turns=(
            Turn(calls=(Call(id="s1", tool="read", input={"path": "sim/notes.txt"}),)),
            Turn(text="ok"),
        ),
    )
    spawns = any(c.tool == "spawn_agent" for t in turns for c in t.calls)
    mode = header.mode
    aims = ["simulate", f"seed:{seed}"]
    return Workload(
        name=f"sim-{seed}",
        aims=tuple(aims),
        files=dict(_SIM_FILES),
        turns=tuple(turns),
        mode=mode,
        route=Route.HEADLESS,
        headless_default=config.headless_default,
        rules=(
            Rule(behavior="allow", pattern="Bash(echo:*)"),
            Rule(behavior="allow", pattern="Bash(sleep:*)"),
        ),
        answers=answers,
        agents=(child,) if spawns else (),
        fault=faults[0] if faults else None,
    )


def any_workload() -> st.SearchStrategy[Workload]:
    """What `metis explore` draws: composed workloads, focused ones, model runs."""
    focused = st.sampled_from(SWEEP).flatmap(lambda name: workloads(focus=name))
    return st.one_of(workloads(), focused, simulated())


def describe(workload: Workload) -> dict[str, Any]:
    return {"name": workload.name, "aims": list(workload.aims), "calls": len(workload.calls)}


def simplest(strategy: st.SearchStrategy[Workload], salt: int = 0) -> Workload:
    """The first workload Hypothesis draws from `strategy` under seed `salt`
    (for a focused strategy: the situation in its simplest form)."""
    from hypothesis import HealthCheck
    from hypothesis import Phase
    from hypothesis import given
    from hypothesis import seed as hseed
    from hypothesis import settings

    got: list[Workload] = []

    @settings(
        max_examples=1,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @hseed(salt)
    @given(strategy)
    def draw(w: Workload) -> None:
        got.append(w)

    draw()
    return got[0]


def sweep() -> list[tuple[str, Workload]]:
    """The sweep's workloads, as `metis explore` (and the CI test) runs them."""
    return [(focus, simplest(workloads(focus=focus), salt)) for salt, focus in enumerate(SWEEP, 1)]
