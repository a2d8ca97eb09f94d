"""The abstraction function: Python `LoopState`s and events as z3 values.

Used to compare the z3 mirror with `metis_model.step` on concrete steps. A
value of None means "not representable in this abstraction" (more calls than
slots, more outstanding jobs than job slots, a third queue key in a batch, a
stage string that is no `Stage`, more distinct paths written by a batch's
Queue calls than footprint regions); callers skip such steps. Fields the
Python model leaves unset (the class of an undecided call, the outcome of an
unfinished one) are left out, i.e. unconstrained.

Footprints: `prepare(events)` looks at each batch's decisions ahead of time
and gives each path a Queue call writes its own region; a read path gets the
regions of the written paths it overlaps, so two abstract footprints share a
region exactly when the concrete ones overlap (for reads against Queue
writes, the only pairs SCHED-6 can report first).
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import z3

from metis_model._causes import STOP_SOURCES
from metis_model._causes import cancel_source_problem
from metis_model._causes import limit_problem
from metis_model._causes import named_source
from metis_model._children import PLAN_LOCKED_REMOVED
from metis_model._context import transcript_problem
from metis_model._decisions import hooks_for
from metis_model._interference import paths_overlap
from metis_model._interference import queue_key_problem
from metis_model._loop_state import TIMEOUT_SLACK_S
from metis_model._loop_state import LoopState
from metis_trace import CallClass
from metis_trace import CancelCause
from metis_trace import DecisionEvent
from metis_trace import Facts
from metis_trace import Stage
from metis_trace import TraceEvent

from ._perm import SymFacts
from ._sorts import encode_value
from ._system import LoopSystem
from ._system_config import REGIONS
from ._system_fields import OK
from ._system_terms import Params
from ._system_terms import State

Values = dict[str, object]


class Abstraction:
    """Keeps the names that must stay consistent along a trace: which job
    slot holds which job id, and which Bool stands for which queue key."""

    def __init__(self, system: LoopSystem) -> None:
        self.system = system
        self.K = system.K
        self.J = system.J
        self.job_slot: dict[str, int] = {}
        self.keys: dict[str | None, bool] = {}
        # Per occurrence (of a prepared trace): its read and write regions.
        self.regions: dict[str, tuple[frozenset[int], frozenset[int]] | None] = {}

    def prepare(self, events: Sequence[TraceEvent]) -> None:
        """Assign footprint regions to every decision of `events`, per batch."""
        batch: list[DecisionEvent] = []

        def close() -> None:
            written: list[str] = []
            for d in batch:
                if d.cls is CallClass.QUEUE:
                    written += [w for w in d.writes if w not in written]
            fits = len(written) <= REGIONS
            region_of = {w: r for r, w in enumerate(written)}
            for d in batch:
                if not fits:
                    self.regions[d.occ] = None
                    continue
                reads = frozenset(r for w, r in region_of.items() if paths_overlap(d.reads, (w,)))
                writes = (
                    frozenset(region_of[w] for w in d.writes)
                    if d.cls is CallClass.QUEUE
                    else frozenset()
                )
                self.regions[d.occ] = (reads if d.cls is CallClass.SAFE else frozenset(), writes)
            batch.clear()

        for e in events:
            if e.kind == "assistant":
                close()
            elif isinstance(e, DecisionEvent):
                batch.append(e)
        close()

    def _footprint(self, occ: str) -> tuple[frozenset[int], frozenset[int]] | None:
        return self.regions.get(occ, (frozenset(), frozenset()))

    # --- states ----------------------------------------------------------

    def state(self, st: LoopState) -> Values | None:
        if len(st.calls) > self.K or len(st.jobs) > self.J:
            return None
        v: Values = {
            "phase": st.phase,
            "mode": st.mode,
            "route": st.route,
            "hdef": st.headless_default,
            "viol": OK,
            "eff": st.effects_started,
            "canc": st.cancelled,
            "stsrc": st.stop_sourced,
        }
        for i in range(self.K):
            if i >= len(st.calls):
                for name, value in self.system.canonical(i).items():
                    v[name] = z3_value(value)
                continue
            c = st.calls[i]
            v[f"inb{i}"] = True
            v[f"surf{i}"] = st.tools is None or c.tool in st.tools
            v[f"hkpend{i}"] = bool(set(hooks_for(st.hooks, c.tool)) - set(c.hooks_run))
            v[f"vet{i}"] = c.vetoed
            v[f"started{i}"] = c.started
            v[f"cov{i}"] = c.covered
            fp = self._footprint(c.occ) if c.decision is not None else (frozenset(), frozenset())
            if fp is None:
                return None
            for r in range(REGIONS):
                v[f"rd{i}_{r}"] = r in fp[0]
                v[f"wr{i}_{r}"] = r in fp[1]
            v[f"decided{i}"] = c.decision is not None
            if c.decision is not None:
                v[f"dec{i}"] = c.decision
            v[f"settled{i}"] = c.approved is not None
            v[f"appr{i}"] = c.approved is True
            if c.cls is not None:
                v[f"cls{i}"] = c.cls
            if c.cls is CallClass.QUEUE:
                if c.key not in self.keys:
                    return None
                v[f"key{i}"] = self.keys[c.key]
            v[f"running{i}"] = c.running
            v[f"finished{i}"] = c.finished
            v[f"committed{i}"] = c.committed
            if c.outcome is not None:
                v[f"out{i}"] = c.outcome
            v[f"closed{i}"] = c.closed
            v[f"hp{i}"] = st.headless_ask == c.occ
        held = {self.job_slot[j] for j in st.jobs if j in self.job_slot}
        if len(held) != len(st.jobs):
            return None
        for j in range(self.J):
            v[f"job{j}"] = j in held
        return v

    # --- events ----------------------------------------------------------

    def event(self, st: LoopState, e: TraceEvent) -> tuple[Values, Facts | None] | None:
        """The label of `e` in state `st` (and its facts, for a decision)."""
        v: Values = {"ev": e.kind}
        occ = getattr(e, "occ", None)
        if occ is not None and e.kind != "job_done":
            index = st.index_of.get(occ)
            v["slot"] = self.K if index is None else index
        facts: Facts | None = None
        kind = e.kind
        f: Any = e
        if kind == "turn_start":
            v["turn_ok"] = f.turn == st.turn + 1
        elif kind == "compaction":
            v["split"] = set(f.calls_removed) != set(f.results_removed)
            v["retry"] = f.step == "retry"
            v["valid"] = transcript_problem(f.messages) is None
        elif kind == "assistant":
            occs = [c.occ for c in f.calls]
            if len(occs) > self.K:
                return None
            v["n"] = len(occs)
            v["dup"] = len(set(occs)) != len(occs)
            for i in range(self.K):
                tool = f.calls[i].tool if i < len(f.calls) else ""
                v[f"surf{i}"] = st.tools is None or tool in st.tools
                v[f"hneed{i}"] = bool(hooks_for(st.hooks, tool))
        elif kind == "hook":
            index = st.index_of.get(f.occ)
            v["vetoed"] = f.vetoed
            v["hknown"] = any(h.id == f.hook for h in st.hooks)
            if index is not None:
                c = st.calls[index]
                ran = {*c.hooks_run, f.hook}
                v["hdone"] = not (set(hooks_for(st.hooks, c.tool)) - ran)
        elif kind == "decision":
            if len(f.facts.rules) > self.system.config.rule_slots:
                return None
            try:
                v["stage"] = Stage(f.stage)
            except ValueError:
                return None
            facts = f.facts
            v["d"] = f.decision
            v["dcls"] = f.cls
            v["droute"] = f.route
            v["keyed"] = queue_key_problem(f) is None
            fp = self._footprint(f.occ)
            if fp is None:
                return None
            for r in range(REGIONS):
                v[f"drd{r}"] = r in fp[0]
                v[f"dwr{r}"] = r in fp[1]
            if f.cls is CallClass.QUEUE:
                key = self.key(f.key)
                if key is None:
                    return None
                v["dkey"] = key
        elif kind == "ask_resolved":
            v["approved"] = f.approved
            v["by_default"] = f.resolver == "headless-default"
        elif kind == "effect_end":
            v["outcome"] = f.outcome
            v["committed"] = f.committed
        elif kind == "handshake":
            if f.job in st.jobs:
                v["jslot"] = self.job_slot[f.job]
            else:
                free = [j for j in range(self.J) if j not in self.job_slot.values()]
                if not free:
                    return None
                v["jslot"] = free[0]
        elif kind == "job_done":
            if f.job in st.jobs:
                v["jslot"] = self.job_slot[f.job]
                v["occ_match"] = st.jobs[f.job][0] == f.occ
            else:
                v["jslot"] = self.J
        elif kind == "result":
            v["status"] = f.status
        elif kind == "results_sent":
            v["inorder"] = tuple(f.occs) == tuple(c.occ for c in st.calls)
            v.update(_ids(st, f.call_ids))
        elif kind == "cancel":
            v["scoped"] = bool(f.occs)
            v["timeout"] = f.cause is CancelCause.TIMEOUT
            named = [st.index_of.get(o) for o in f.occs]
            v["limit_ok"] = (
                f.limit_s is not None
                and None not in named
                and all(
                    f.t - st.calls[i].started_t >= f.limit_s - TIMEOUT_SLACK_S
                    and not (
                        st.causes_recorded
                        and limit_problem(st.calls[i].occ, st.calls[i].limit_s, f.limit_s)
                    )
                    for i in named
                    if i is not None
                )
            )
            v["sourced"] = (
                f.cause is CancelCause.TIMEOUT
                or not st.causes_recorded
                or cancel_source_problem(f.cause, f.causes, st.sources)[0] is None
            )
            for i in range(self.K):
                v[f"cv{i}"] = i in named
        elif kind == "interrupt":
            v["sourced"] = (
                not st.causes_recorded
                or named_source(f.causes, st.sources, STOP_SOURCES) is not None
            )
        elif kind == "repair":
            v["exact"] = tuple(f.stubbed) == st.open_occs()
            v["uextra"] = bool(set(f.unknown) - set(f.stubbed))
            for i in range(self.K):
                v[f"unk{i}"] = i < len(st.calls) and st.calls[i].occ in f.unknown
            v.update(_ids(st, f.call_ids))
        elif kind == "spawn":
            v["tools_extra"] = bool(set(f.child_tools) - set(f.parent_tools))
            v["locked"] = bool(set(f.child_tools) & PLAN_LOCKED_REMOVED)
            v["parent_mode"] = f.parent_mode
            v["child_mode"] = f.child_mode
            # no recorded request is `req_none` (what `path_to_trace` decodes it
            # from): left open, the mirror could report CHILD-2 for a request
            # the event does not make
            v["req_none"] = f.requested_mode is None
            if f.requested_mode is not None:
                v["req"] = f.requested_mode
        elif kind == "run_end":
            v["rstatus"] = f.status
        return v, facts

    def key(self, key: str | None) -> bool | None:
        if key not in self.keys:
            if len(self.keys) >= 2:
                return None
            self.keys[key] = len(self.keys) == 1
        return self.keys[key]

    def after(self, before: LoopState, e: TraceEvent, label: Values) -> None:
        """Book-keeping once `e` was accepted: job slots and per-batch keys."""
        f: Any = e
        if e.kind == "handshake":
            self.job_slot[f.job] = int(str(label["jslot"]))
        elif e.kind == "job_done":
            self.job_slot.pop(f.job, None)
        elif e.kind == "assistant" and f.calls:
            self.keys = {}


def _ids(st: LoopState, sent: Sequence[str]) -> Values:
    """`ids_problem`'s two questions about the ids a results message held."""
    expected = [c.call_id for c in st.calls]
    return {"ids_known": set(sent) <= set(expected), "ids_inorder": list(sent) == expected}


def z3_value(value: z3.ExprRef) -> object:
    from ._sorts import decode_value

    return decode_value(z3.simplify(value))


def assume(state: State, values: Mapping[str, object]) -> list[z3.BoolRef]:
    """Equalities pinning a symbolic state (or label) to concrete values."""
    return [state[n] == encode_value(state[n], v) for n, v in values.items()]


def assume_label(p: Params, values: Mapping[str, object], facts: Facts | None) -> list[z3.BoolRef]:
    out = [p[n] == encode_value(p[n], v) for n, v in values.items()]
    if facts is not None:
        concrete = SymFacts.of(facts)
        slots = p.facts.rules
        out += [
            p.facts.mode == concrete.mode,
            p.facts.kind == concrete.kind,
            p.facts.protected == concrete.protected,
            p.facts.secret == concrete.secret,
            p.facts.in_scope == concrete.in_scope,
            p.facts.transition == concrete.transition,
        ]
        for i, slot in enumerate(slots):
            if i < len(concrete.rules):
                r = concrete.rules[i]
                out += [
                    slot.present,
                    slot.behavior == r.behavior,
                    slot.source == r.source,
                    slot.recency == r.recency,
                ]
            else:
                out.append(z3.Not(slot.present))
    return out
