"""From a z3 path to our formats: trace events, ITF JSON and an event graph.

A path is the sequence of (label, state) the solver chose. The abstract
labels become concrete records here: occurrences are named `<turn>.<index>`,
job ids are invented per handshake, timestamps are 1 ms apart and each call
event is caused by the previous event of its occurrence. Queue key k is
`file:/ws/q<k>`, and a keyed Queue call writes region r as `/ws/q<k>/r<r>`,
within what its key names; one the label says is not `keyed` (SCHED-2's key
clause: only a Queue edit call with a write can be) writes it as
`/ws/elsewhere/r<r>`, which no key names. A Safe call reads region r as that
path under every key and as `/ws/elsewhere/r<r>`, so a read and a write
share a path exactly where their regions meet (SCHED-6). A call
covered by hooks gets a tool name that exactly as many header hooks cover as
the path runs for it before it is done
(`read.hooked<N>`, hooks `h<k>` matching `*.hooked[k-9]`, all nine listed once
one is used); a call outside the
tool surface is named `unlisted`; the header lists the tools and hooks used.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import attrs
import z3

from metis_check._sim_config import ALL_TOOLS
from metis_check._sim_config import TOOLS_BY_KIND
from metis_model._causes import SOURCE_KINDS
from metis_model._children import PLAN_LOCKED_REMOVED
from metis_model._children import child_surface
from metis_model._loop import step as model_step
from metis_model._loop_state import Call
from metis_model._loop_state import Divergence
from metis_model._loop_state import LoopState
from metis_model._loop_state import initial_state
from metis_model._permissions import resolve
from metis_trace import AskResolved
from metis_trace import Assistant
from metis_trace import CallClass
from metis_trace import CallRef
from metis_trace import Cancel
from metis_trace import CancelCause
from metis_trace import Commit
from metis_trace import Compaction
from metis_trace import Decision
from metis_trace import DecisionEvent
from metis_trace import EffectEnd
from metis_trace import EffectOutcome
from metis_trace import EffectStart
from metis_trace import Facts
from metis_trace import Handshake
from metis_trace import HookRef
from metis_trace import HookRun
from metis_trace import Interrupt
from metis_trace import JobDone
from metis_trace import MessageShape
from metis_trace import Mode
from metis_trace import Repair
from metis_trace import Request
from metis_trace import Result
from metis_trace import ResultsSent
from metis_trace import Resume
from metis_trace import Route
from metis_trace import RunEnd
from metis_trace import SignalReceived
from metis_trace import SinkError
from metis_trace import Spawn
from metis_trace import StopRequest
from metis_trace import StreamRepair
from metis_trace import TraceEvent
from metis_trace import TraceHeader
from metis_trace import TurnStart

from ._engine import Unrolling
from ._sorts import decode_value
from ._system_config import REGIONS

Values = Mapping[str, object]


@attrs.frozen
class PathStep:
    """One step of a path: the event label, its facts, and the state after."""

    kind: str
    params: Values
    facts: Facts
    after: Values


@attrs.frozen
class Path:
    initial: Values
    steps: tuple[PathStep, ...]

    @property
    def violation(self) -> str:
        """The ID the last state reports (`ok` if none)."""
        last = self.steps[-1].after if self.steps else self.initial
        return str(last["viol"])


def _values(model: z3.ModelRef, exprs: Mapping[str, z3.ExprRef]) -> dict[str, object]:
    return {n: decode_value(model.eval(e, model_completion=True)) for n, e in exprs.items()}


def decode_path(model: z3.ModelRef, path: Unrolling, depth: int | None = None) -> Path:
    """The first `depth` steps (default: all) of an unrolling under a model."""
    depth = path.depth if depth is None else depth
    steps = []
    for k in range(depth):
        p = path.params[k]
        params = _values(model, p.values)
        steps.append(
            PathStep(
                kind=str(params["ev"]),
                params=params,
                facts=p.facts.decode(model),
                after=_values(model, path.states[k + 1].values),
            )
        )
    return Path(_values(model, path.states[0].values), tuple(steps))


MAX_HOOKS = 9  # hooks h1..h9; a call needs at most this many (`read.hooked<N>`)
UNLISTED = "unlisted"  # a tool outside the header's surface


def _hook(k: int) -> HookRef:
    return HookRef(id=f"h{k}", matcher=f"*.hooked[{k}-9]")


def header_for(
    path: Path, run_id: str, tools: tuple[str, ...] = ALL_TOOLS, hooks: int = 0
) -> TraceHeader:
    init = path.initial
    mode, route, hdef = init["mode"], init["route"], init["hdef"]
    assert isinstance(mode, Mode) and isinstance(route, Route) and isinstance(hdef, Decision)
    return TraceHeader(
        run_id=run_id,
        root_run_id=run_id,
        mode=mode,
        route=route,
        headless_default=hdef,
        tools=tools,
        hooks=tuple(_hook(k) for k in range(1, hooks + 1)),
        producer="metis_proofs",
        meta={"source": "z3 path", "steps": len(path.steps)},
    )


def _key(cls: object, key: object) -> str | None:
    return f"file:/ws/q{int(bool(key))}" if cls is CallClass.QUEUE else None


UNKEYED = "/ws/elsewhere"  # what an unkeyed Queue call writes below: no key names it


def _footprint(
    cls: object, key: object, regions: Mapping[str, list[int]], keyed: object = True
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(reads, writes): a Queue call's writes within its key (outside every
    key when it is not `keyed`), a Safe call's reads of each region under every
    key and outside them (see the module's docstring)."""
    if cls is CallClass.QUEUE:
        folder = f"/ws/q{int(bool(key))}" if keyed else UNKEYED
        return (), tuple(f"{folder}/r{r}" for r in regions["dwr"])
    if cls is CallClass.SAFE:
        folders = (*(f"/ws/q{k}" for k in (0, 1)), UNKEYED)
        return tuple(f"{d}/r{r}" for r in regions["drd"] for d in folders), ()
    return (), ()


class _Writer:
    """Turns labels into records, keeping the names consistent along the path."""

    def __init__(self, path: Path, slots: int) -> None:
        self.path = path
        self.slots = slots
        self.events: list[TraceEvent] = []
        self.turn = 0
        self.batch_turn = 0
        self.occs: list[str] = []
        self.call_ids: dict[str, str] = {}
        self.last: dict[str, int] = {}
        self.jobs: dict[int, tuple[str, str]] = {}
        self.job_count = 0
        self.history: list[str] = []
        self.tools: set[str] = set(ALL_TOOLS)  # the header's surface: what listed calls use
        self.hooks = 0  # hooks h1..h<hooks> in the header (all of them, once one is used)
        self.hooks_run: dict[str, int] = {}  # per occurrence: hooks run so far

    def add(self, record: type[Any], /, *, occ: str | None = None, **fields: Any) -> None:
        seq = len(self.events)
        if occ is not None:
            cause = self.last.get(occ, self.last.get("@assistant", seq - 1))
            fields["occ"] = occ
            self.last[occ] = seq
        else:
            cause = seq - 1
        causes = (cause,) if 0 <= cause < seq else ()
        self.events.append(record(seq=seq, t=round(seq * 0.001, 6), causes=causes, **fields))

    def occ(self, slot: object) -> str:
        assert isinstance(slot, int)
        if slot < len(self.occs):
            return self.occs[slot]
        return f"{self.batch_turn}.{slot}"  # not a call of this batch

    def tool_for(self, k: int, slot: int, listed: bool, hooked: bool) -> str:
        """A tool of the kind the batch's later decision for `slot` records,
        covered by as many hooks as the path runs for it until it is done."""
        base = "read"
        runs, needed = 0, 0
        for step in self.path.steps[k + 1 :]:
            if step.kind == "assistant":
                break
            if step.params["slot"] != slot:
                continue
            if step.kind == "decision":
                base = TOOLS_BY_KIND[step.facts.kind][0]
                break
            if step.kind == "hook" and not needed:
                runs += 1
                if step.params["hdone"]:
                    needed = runs
        base = base if listed else UNLISTED
        if not hooked:
            return base
        n = min(needed or runs + 1, MAX_HOOKS)
        self.hooks = MAX_HOOKS
        tool = f"{base}.hooked{n}"
        if listed:
            self.tools.add(tool)
        return tool

    def step(self, k: int, before: Values, st: PathStep) -> None:
        p, kind = st.params, st.kind
        occ = self.occ(p["slot"])
        if kind == "turn_start":
            self.turn += 1 if p["turn_ok"] else 2
            self.add(TurnStart, turn=self.turn)
        elif kind == "compaction":
            removed = tuple(self.history)
            self.history.clear()
            step = "retry" if p["retry"] else "compaction"
            role = "user" if p["valid"] else "assistant"  # not provider-valid: no task first
            self.add(
                Compaction,
                turn=self.turn,
                calls_removed=(*removed, "0.0") if p["split"] else removed,
                results_removed=removed,
                step=step,
                messages=(MessageShape(role=role, blocks=("text",)),),
            )
        elif kind == "request":
            self.add(Request, turn=self.turn)
        elif kind == "stream_repair":
            self.add(
                StreamRepair,
                turn=self.turn,
                problem="truncated tool input",
                repair="closed the JSON",
            )
        elif kind == "assistant":
            n = p["n"]
            assert isinstance(n, int)
            self.batch_turn = self.turn
            occs = [f"{self.turn}.{i}" for i in range(n)]
            if p["dup"]:
                occs[-1] = occs[0]
            calls = []
            for i, o in enumerate(occs):
                call_id = f"toolu_{self.turn}_{i}"
                self.call_ids[o] = call_id
                tool = self.tool_for(k, i, bool(p[f"surf{i}"]), bool(p[f"hneed{i}"]))
                calls.append(CallRef(occ=o, call_id=call_id, tool=tool, input={"n": i}))
            self.occs = occs
            self.last = {"@assistant": len(self.events)}
            self.add(
                Assistant,
                turn=self.turn,
                message_id=f"msg_{self.turn}",
                calls=tuple(calls),
                stop_reason="tool_use" if n else "end_turn",
            )
        elif kind == "hook":
            self.hooks = MAX_HOOKS  # every run names a hook in force, or none at all
            if p["hknown"]:
                self.hooks_run[occ] = n = self.hooks_run.get(occ, 0) + 1
                hook = f"h{min(n, MAX_HOOKS)}"
            else:
                hook = "not-in-force"
            self.add(HookRun, occ=occ, hook=hook, vetoed=p["vetoed"])
        elif kind == "decision":
            facts = st.facts
            expected = resolve(facts)
            same = (expected.decision, expected.stage) == (p["d"], p["stage"])
            cls = p["dcls"]
            regions = {f: [r for r in range(REGIONS) if p[f"{f}{r}"]] for f in ("drd", "dwr")}
            reads, writes = _footprint(cls, p["dkey"], regions, p["keyed"])
            self.add(
                DecisionEvent,
                occ=occ,
                decision=p["d"],
                stage=str(p["stage"]),
                rule=expected.rule if same else None,
                facts=facts,
                route=p["droute"],
                cls=cls,
                key=_key(cls, p["dkey"]),
                reads=reads,
                writes=writes,
            )
        elif kind == "ask_resolved":
            self.add(
                AskResolved,
                occ=occ,
                approved=p["approved"],
                resolver="headless-default" if p["by_default"] else "user",
            )
        elif kind == "effect_start":
            # Every call records the limit a timeout's cancel states (0 s).
            self.add(EffectStart, occ=occ, limit_s=0.0)
        elif kind == "commit":
            self.add(Commit, occ=occ, outcome=EffectOutcome.OK)
        elif kind == "effect_end":
            self.add(EffectEnd, occ=occ, outcome=p["outcome"], committed=p["committed"])
        elif kind == "handshake":
            jslot = p["jslot"]
            assert isinstance(jslot, int)
            if jslot in self.jobs:  # the same id again: what SCHED-4 rejects
                job = self.jobs[jslot][0]
            else:
                self.job_count += 1
                job = f"job-{self.job_count}"
                self.jobs[jslot] = (job, occ)
            self.add(Handshake, occ=occ, job=job)
        elif kind == "job_done":
            jslot = p["jslot"]
            assert isinstance(jslot, int)
            if jslot in self.jobs:
                job, owner = self.jobs.pop(jslot)
                self.add(
                    JobDone,
                    occ=owner if p["occ_match"] else f"{owner}9",
                    job=job,
                    outcome=EffectOutcome.OK,
                )
            else:
                self.add(JobDone, occ="0.99", job=f"job-unknown-{jslot}", outcome=EffectOutcome.OK)
        elif kind == "result":
            self.add(Result, occ=occ, call_id=self.call_ids.get(occ, ""), status=p["status"])
        elif kind == "results_sent":
            sent = tuple(self.occs)
            if not p["inorder"]:
                sent = tuple(reversed(sent)) if len(sent) > 1 else sent + sent
            self.add(ResultsSent, turn=self.batch_turn, occs=sent, call_ids=self._ids(p, before))
            self.history.extend(self.occs)
        elif kind == "cancel":
            named = tuple(o for i, o in enumerate(self.occs) if p[f"cv{i}"])
            if p["scoped"] and not named:
                named = ("0.99",)  # not a call of the batch
            # A sourced cancel names the stop request written just before it;
            # an unsourced one names only the previous event, never a source.
            sourced = bool(p["sourced"]) and not p["timeout"]
            if sourced:
                self.add(StopRequest, via="z3-path")
            self.add(
                Cancel,
                turn=self.turn,
                cause=CancelCause.TIMEOUT if p["timeout"] else CancelCause.USER,
                occs=named if p["scoped"] else (),
                limit_s=0.0 if p["limit_ok"] else None,
                reason="user cancel",
            )
            if not sourced:
                self._unsourced()
        elif kind == "interrupt":
            if p["sourced"]:
                self.add(SignalReceived, signum=2, name="SIGINT")
            self.add(Interrupt, reason="user interrupt")
            if not p["sourced"]:
                self._unsourced()
        elif kind == "signal":
            self.add(SignalReceived, signum=15, name="SIGTERM")
        elif kind == "stop_request":
            self.add(StopRequest, via="z3-path")
        elif kind == "sink_error":
            self.add(SinkError, sink="journal", error="z3-path")
        elif kind == "resume":
            self.add(Resume)
        elif kind == "repair":
            open_occs = tuple(
                o for i, o in enumerate(self.occs) if before[f"inb{i}"] and not before[f"closed{i}"]
            )
            # inexact: stub nothing (or, with nothing open, an unknown occurrence)
            stubbed = open_occs if p["exact"] else () if open_occs else ("0.99",)
            unknown = tuple(o for i, o in enumerate(self.occs) if p[f"unk{i}"])
            if p["uextra"]:
                unknown += ("0.98",)  # not stubbed
            self.add(Repair, stubbed=stubbed, unknown=unknown, call_ids=self._ids(p, before))
        elif kind == "spawn":
            child = p["child_mode"]
            tools = set(child_surface(ALL_TOOLS))
            if child is Mode.PLAN:
                tools -= PLAN_LOCKED_REMOVED
            if p["locked"]:
                tools |= {"spawn_agent"}
            if p["tools_extra"]:
                tools |= {"not_visible_to_parent"}
            self.add(
                Spawn,
                agent_id=f"child-{k}",
                child_mode=child,
                child_tools=tuple(sorted(tools)),
                parent_mode=p["parent_mode"],
                parent_tools=ALL_TOOLS,
                requested_mode=None if p["req_none"] else p["req"],
            )
        elif kind == "run_end":
            self.add(RunEnd, status=p["rstatus"])
        else:  # pragma: no cover - EVENT_KINDS and this writer must agree
            raise ValueError(f"no writer for event kind {kind!r}")

    def _unsourced(self) -> None:
        """The event just written names no recorded source in its causes."""
        last = self.events[-1]
        kept = tuple(c for c in last.causes if self.events[c].kind not in SOURCE_KINDS)
        self.events[-1] = last.model_copy(update={"causes": kept})

    def _ids(self, p: Values, before: Values) -> tuple[str, ...]:
        """The ids a results message held: the open batch's (none when no
        batch is open), unless the label says one is stray or they are out of
        order (one left out)."""
        batch = [o for i, o in enumerate(self.occs) if before.get(f"inb{i}")]
        ids = tuple(self.call_ids[o] for o in batch)
        if not p["ids_inorder"]:
            ids = ids[:-1]
        if not p["ids_known"]:
            ids += ("toolu_stray",)
        return ids


def path_to_trace(
    path: Path, slots: int, run_id: str = "z3-path"
) -> tuple[TraceHeader, list[TraceEvent]]:
    """The trace a path stands for (header + events, `metis_trace` records)."""
    writer = _Writer(path, slots)
    before: Values = path.initial
    for k, st in enumerate(path.steps):
        writer.step(k, before, st)
        before = st.after
    header = header_for(path, run_id, tuple(sorted(writer.tools)), writer.hooks)
    return header, writer.events


# --- ITF (the Apalache / Quint trace format) ------------------------------


def _itf(value: object) -> object:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return {"#bigint": str(value)}
    return str(value)


_SLOT_NAME = re.compile(r"([a-z]+)(\d+)(?:_(\d+))?")


def _slot_fields(names: Iterable[str]) -> list[str]:
    """Per-call field names, a footprint region's as `rd_<r>` (`rd<i>_<r>`)."""
    out: set[str] = set()
    for n in names:
        m = _SLOT_NAME.fullmatch(n)
        if m is not None and m.group(1) != "job":
            out.add(m.group(1) if m.group(3) is None else f"{m.group(1)}_{m.group(3)}")
    return sorted(out)


def _slot_record(values: Values, slots: int, field: str) -> list[object]:
    prefix, _, region = field.partition("_")
    suffix = f"_{region}" if region else ""
    return [_itf(values[f"{prefix}{i}{suffix}"]) for i in range(slots)]


def itf_document(
    source: str, description: str, names: Sequence[str], states: Sequence[object]
) -> dict[str, Any]:
    """An ITF JSON document (Apalache ADR-015): its `#meta`, variables and states."""
    return {
        "#meta": {
            "format": "ITF",
            "format-description": "https://apalache-mc.org/docs/adr/015adr-trace.html",
            "source": source,
            "description": description,
        },
        "vars": list(names),
        "states": list(states),
    }


def to_itf(
    path: Path, slots: int, jobs: int, events: Sequence[TraceEvent], source: str
) -> dict[str, Any]:
    """ITF JSON: one state per step, with the event that led to it.

    Per-call fields are lists indexed by slot; `event` is the trace record's
    kind and `occ` (when it names a call)."""
    fields = _slot_fields(path.initial)
    scalars = [n for n in path.initial if not n[-1].isdigit()]
    names = ["event", "seq", *scalars, *fields, "jobs"]
    states = []
    rows: list[tuple[Values, str, int]] = [(path.initial, "init", -1)]
    for i, st in enumerate(path.steps):
        rows.append((st.after, st.kind, i))
    for index, (values, kind, seq) in enumerate(rows):
        occ = getattr(events[seq], "occ", None) if seq >= 0 else None
        state: dict[str, object] = {
            "#meta": {"index": index},
            "event": kind if occ is None else f"{kind}({occ})",
            "seq": _itf(seq),
        }
        for n in scalars:
            state[n] = _itf(values[n])
        for f in fields:
            state[f] = _slot_record(values, slots, f)
        state["jobs"] = [_itf(values[f"job{j}"]) for j in range(jobs)]
        states.append(state)
    return itf_document(
        source, "metis loop abstraction; per-call fields are lists by slot", names, states
    )


def _call_record(call: Call) -> dict[str, object]:
    return {
        "occ": call.occ,
        "decision": _itf(call.decision.value if call.decision is not None else "none"),
        "approved": _itf("none" if call.approved is None else call.approved),
        "cls": _itf(call.cls.value if call.cls is not None else "none"),
        "running": call.running,
        "finished": call.finished,
        "committed": call.committed,
        "status": _itf(call.status.value if call.status is not None else "open"),
    }


def trace_itf(header: TraceHeader, events: Sequence[TraceEvent], source: str) -> dict[str, Any]:
    """ITF JSON of a concrete trace: the model's state after each event, by
    replaying `step` from the header's initial state. At the first divergence
    the state shown is the one the event broke, and `#meta` names the ID."""
    state = initial_state(header.mode, header.route, header.headless_default)
    rows: list[tuple[str, int, LoopState, str | None]] = [("init", -1, state, None)]
    for event in events:
        occ = getattr(event, "occ", None)
        label = event.kind if occ is None else f"{event.kind}({occ})"
        out = model_step(state, event)
        if isinstance(out, Divergence):
            rows.append((label, event.seq, out.state, out.invariant))
            break
        state = out
        rows.append((label, event.seq, state, None))
    states = []
    for index, (label, seq, st, broken) in enumerate(rows):
        meta: dict[str, object] = {"index": index}
        if broken is not None:
            meta["violation"] = broken
        states.append(
            {
                "#meta": meta,
                "event": label,
                "seq": _itf(seq),
                "phase": st.phase.value,
                "turn": _itf(st.turn),
                "cancelled": st.cancelled,
                "calls": [_call_record(c) for c in st.calls],
                "jobs": sorted(st.jobs),
            }
        )
    return itf_document(
        source,
        "metis loop model state after each event of a runtime trace",
        ["event", "seq", "phase", "turn", "cancelled", "calls", "jobs"],
        states,
    )
