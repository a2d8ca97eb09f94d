"""Which situations a run actually reached, read from its traces (not from its script).

A workload aims at situations; only the trace says whether the runtime got
there. Each name below is counted from events alone:

| situation | read from the trace |
|---|---|
| `queue-3` | a batch with three or more started Queue calls on one key |
| `exclusive-waits` | an Exclusive call started after an earlier sibling had (it waited behind it) |
| `ask:<route>:<approved\\|rejected>` | an `ask_resolved`, by the route its decision names |
| `context:<step>` | a `compaction` event of that context-control step |
| `hook:veto` | a decision whose facts carry a `hook:<id>` deny rule |
| `hook:veto-in-child` | the same, in a child (a hook it inherited) |
| `hook:failed` | a hook that exited 1 (a guard that failed) recorded as a veto |
| `hook:pass` | a header listing hooks, and an allowed call that one of them matches |
| `spawn`, `spawn:plan-child` | a `spawn` event (of a `plan` child) |
| `spawn:depth-2`, `guard:refused` | a grandchild's trace; a spawn refused by the spawn guard |
| `spawn:narrowed` | a spawn call narrowing its child's tools (`tools`, `disallowed_tools`) |
| `fail` | a run ended by a runtime failure mid-batch: interrupted, open calls left for repair |
| `guard:concurrent` | a spawn refused because `max_concurrent` children were running |
| `authority:refused` | a child asked for a mode more permissive than its parent's: refused |
| `plan:denied` | a mutating call denied at the `plan` stage |
| `plan:child-no-spawn` | a plan child's `spawn_agent` call answered with an error |
| `background` | a `handshake` paired with a `job_done` |
| `background:failed` | a `job_done` `error` (TRACE-3 compares it with the witnessed exit) |
| `repeated-ids` | an assistant message repeating a call id |
| `cancel`, `interrupt`, `resume` | those events |
| `cancel:sourced` | a cancel whose causes name a `signal` or `stop_request` (SCHED-5) |
| `interrupt:sourced` | the same for an interrupt |
| `kill:<where>:<kind>` | the workload killed the process there and the trace holds a `resume` |
| `kill:recovery` | the resume killed too, after its `repair`: another `resume` follows it |
| `turn-limit` | the root's run ended `failed` at the workload's turn limit |
| `canary` | a planted canary was read by a call whose result was sent |
| `canary:committed` | the same by a call the trace shows committed (its output is journaled) |
| `stage:<stage>` | a decision taken at that stage |

A mechanism's workload (`_mech.py`) adds the situations its case reads.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path

from metis_trace import MUTATING_KINDS
from metis_trace import AskResolved
from metis_trace import Assistant
from metis_trace import CallClass
from metis_trace import Commit
from metis_trace import Compaction
from metis_trace import Decision
from metis_trace import DecisionEvent
from metis_trace import EffectOutcome
from metis_trace import EffectStart
from metis_trace import HookRun
from metis_trace import Interrupt
from metis_trace import JobDone
from metis_trace import Result
from metis_trace import ResultStatus
from metis_trace import RunEnd
from metis_trace import Spawn
from metis_trace import TraceEvent
from metis_trace import TraceHeader

from ._execute import FAILED
from ._mech import mech_situations
from ._workload import KILLS
from ._workload import Workload

Traces = Mapping[str, tuple[TraceHeader, Sequence[TraceEvent]]]


def _batches(events: Sequence[TraceEvent]) -> list[list[TraceEvent]]:
    out: list[list[TraceEvent]] = []
    current: list[TraceEvent] | None = None
    for e in events:
        if isinstance(e, Assistant):
            current = [e]
            out.append(current)
        elif current is not None:
            current.append(e)
            if e.kind in ("results_sent", "repair"):
                current = None
    return out


def _batch_situations(batch: list[TraceEvent], seen: Counter[str]) -> None:
    first = batch[0]
    assert isinstance(first, Assistant)
    ids = [c.call_id for c in first.calls]
    if len(set(ids)) < len(ids):
        seen["repeated-ids"] += 1
    index = {c.occ: i for i, c in enumerate(first.calls)}
    decisions = {e.occ: e for e in batch if isinstance(e, DecisionEvent)}
    started = [e.occ for e in batch if isinstance(e, EffectStart)]
    keys = Counter(
        decisions[o].key for o in started if o in decisions and decisions[o].cls is CallClass.QUEUE
    )
    if keys and max(keys.values()) >= 3:
        seen["queue-3"] += 1
    for pos, occ in enumerate(started):
        d = decisions.get(occ)
        if (
            d is not None
            and d.cls is CallClass.EXCLUSIVE
            and any(index[o] < index[occ] for o in started[:pos])
        ):
            seen["exclusive-waits"] += 1


def _trace_situations(
    header: TraceHeader, events: Sequence[TraceEvent], seen: Counter[str]
) -> None:
    decisions: dict[str, DecisionEvent] = {}
    tools: dict[str, str] = {}
    hooks = [h.id for h in header.hooks]
    for e in events:
        if isinstance(e, Assistant):
            tools.update({c.occ: c.tool for c in e.calls})
            narrowing = ("tools", "disallowed_tools")
            if any(c.tool == "spawn_agent" and set(c.input) & set(narrowing) for c in e.calls):
                seen["spawn:narrowed"] += 1
        elif isinstance(e, DecisionEvent):
            decisions[e.occ] = e
            seen[f"stage:{e.stage}"] += 1
            if any(r.pattern.startswith("hook:") for r in e.facts.rules):
                seen["hook:veto"] += 1
                if header.depth > 0:
                    seen["hook:veto-in-child"] += 1
            elif hooks and e.decision is Decision.ALLOW:
                seen["hook:pass"] += 1
            if e.stage == "plan" and e.facts.kind in MUTATING_KINDS:
                seen["plan:denied"] += 1
        elif isinstance(e, HookRun) and e.vetoed and "exited 1" in e.reason:
            seen["hook:failed"] += 1  # a guard that failed vetoed
        elif isinstance(e, AskResolved):
            d = decisions.get(e.occ)
            route = d.route.value if d is not None else "?"
            seen[f"ask:{route}:{'approved' if e.approved else 'rejected'}"] += 1
        elif isinstance(e, Compaction):
            seen[f"context:{e.step}"] += 1
        elif isinstance(e, Spawn):
            seen["spawn"] += 1
            if e.child_mode.value == "plan":
                seen["spawn:plan-child"] += 1
        elif isinstance(e, Interrupt) and FAILED in e.reason:
            seen["fail"] += 1  # the run ended on a runtime failure mid-batch
            seen["interrupt"] += 1
        elif e.kind in ("cancel", "interrupt", "resume"):
            seen[e.kind] += 1
            if any(events[c].kind in ("signal", "stop_request") for c in e.causes):
                seen[f"{e.kind}:sourced"] += 1
        elif isinstance(e, JobDone):
            seen["background"] += 1
            if e.outcome is EffectOutcome.ERROR:
                seen["background:failed"] += 1
        elif (
            isinstance(e, Result)
            and tools.get(e.occ) == "spawn_agent"
            and e.status is ResultStatus.ERROR
            and e.content.startswith("spawn refused")
        ):
            seen["authority:refused" if "AUTHORITY" in e.content else "guard:refused"] += 1
            if "CONCURRENCY_LIMIT" in e.content:
                seen["guard:concurrent"] += 1
        elif (
            isinstance(e, Result)
            and header.mode.value == "plan"
            and header.depth > 0
            and tools.get(e.occ) == "spawn_agent"
            and e.status is ResultStatus.ERROR
        ):
            seen["plan:child-no-spawn"] += 1
    if header.depth >= 2:
        seen["spawn:depth-2"] += 1
    for batch in _batches(events):
        _batch_situations(batch, seen)


def situations(
    traces: Traces, workload: Workload | None = None, root: Path | None = None
) -> Counter[str]:
    """How many times each situation occurs in the run's traces (and, for a
    mechanism's workload, in the files its run left under `root`: `_mech`)."""
    seen: Counter[str] = Counter()
    for header, events in traces.values():
        _trace_situations(header, events, seen)
    if workload is not None:
        seen.update(mech_situations(workload, root, traces))
        if workload.max_turns is not None and any(
            isinstance(e, RunEnd) and e.status.value == "failed"
            for h, evs in traces.values()
            if h.depth == 0
            for e in evs
        ):
            seen["turn-limit"] += 1
        fault = workload.fault
        if fault is not None and fault.kind == "kill" and seen["resume"]:
            where, kind, _ = fault.point.split(":", 2)
            seen[f"kill:{where}:{kind}"] += 1
            if fault.again and _recovery_killed(traces):
                seen["kill:recovery"] += 1
        if workload.canaries:
            committed = _canary_reads(traces, workload)
            if committed:
                seen["canary"] += 1
            if any(committed):
                seen["canary:committed"] += 1
    return seen


def _recovery_killed(traces: Traces) -> bool:
    """The root trace holds a repair and, after it, another resume: the
    recovery was killed once its repair was written, and resumed again."""
    for header, events in traces.values():
        if header.depth != 0:
            continue
        kinds = [e.kind for e in events]
        if "repair" in kinds and "resume" in kinds[kinds.index("repair") :]:
            return True
    return False


def _canary_reads(traces: Traces, workload: Workload) -> list[bool]:
    """Per call whose input names a planted file (or a folder above it) and
    got an ok result: whether the trace shows it committed."""
    planted = [n for n, text in workload.files.items() if any(c in text for c in workload.canaries)]
    reads: list[bool] = []
    for _, events in traces.values():
        inputs = {c.occ: c.input for e in events if isinstance(e, Assistant) for c in e.calls}
        commits = {e.occ for e in events if isinstance(e, Commit)}
        for e in events:
            if not isinstance(e, Result) or e.status is not ResultStatus.OK:
                continue
            words = [str(v) for v in inputs.get(e.occ, {}).values()]
            for p in planted:
                if any(w == p or p.startswith(w.rstrip("/") + "/") or p in w for w in words):
                    reads.append(e.occ in commits)
                    break
    return reads


# What the CI run must reach: every situation issue 11 lists as never reached.
REQUIRED: tuple[str, ...] = (
    "queue-3",
    "exclusive-waits",
    "ask:interactive:approved",
    "ask:interactive:rejected",
    "ask:protocol:approved",
    "ask:protocol:rejected",
    "ask:headless:approved",
    "ask:headless:rejected",
    "context:prune",
    "context:snip",
    "context:offload",
    "context:collapse",
    "context:compaction",
    "context:retry",
    *KILLS,
    "hook:veto",
    "hook:pass",
    "hook:veto-in-child",
    "hook:failed",
    "spawn:plan-child",
    "plan:denied",
    "plan:child-no-spawn",
    "spawn:depth-2",
    "spawn:narrowed",
    "guard:refused",
    "guard:concurrent",
    "authority:refused",
    "canary",
    "canary:committed",
    "background",
    "background:failed",
    "repeated-ids",
    "cancel",
    "cancel:sourced",
    "fail",
    "interrupt",
    "interrupt:sourced",
    "turn-limit",
)
