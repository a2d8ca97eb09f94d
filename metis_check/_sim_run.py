"""How the simulated runtime plays out a batch (`_Run`).

Hooks, decision and ask for every call before any effect (batch preflight);
the scheduled effects with their commits, handshakes and time limits; a cancel
or an interrupt cutting the batch, with the journal's commits, the resume and
the repair; compaction of closed batches; and spawns after a bash call.
`_generate.simulate` drives it turn by turn.
"""

from __future__ import annotations

import fnmatch
import random
from collections.abc import Sequence
from typing import Any

from metis_model._children import ChildAuthority
from metis_model._children import child_authority
from metis_model._permissions import resolve
from metis_model._permissions import settle_ask
from metis_trace import NOT_JOURNALED
from metis_trace import AskResolved
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
from metis_trace import Handshake
from metis_trace import HookRef
from metis_trace import HookRun
from metis_trace import Interrupt
from metis_trace import MessageShape
from metis_trace import Mode
from metis_trace import Repair
from metis_trace import Result
from metis_trace import ResultsSent
from metis_trace import ResultStatus
from metis_trace import Resume
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import RuleRef
from metis_trace import SignalReceived
from metis_trace import SinkError
from metis_trace import Source
from metis_trace import Spawn
from metis_trace import StopRequest
from metis_trace import ToolKind
from metis_trace import content_digest

from ._sim_config import _JOURNALED
from ._sim_config import _OUTPUT_DIGEST
from ._sim_config import ALL_TOOLS
from ._sim_config import SimConfig
from ._sim_config import _Recorder
from ._sim_schedule import _limit
from ._sim_schedule import _Planned
from ._sim_schedule import _schedule
from ._sim_schedule import _Timed


def _stub_unknown(planned: _Planned, started: bool) -> bool:
    """RETRY-3: a started call that is not Safe may have changed the world."""
    return started and planned.cls is not CallClass.SAFE


class _Run:
    """One simulated run: the transcript so far, outstanding jobs, and how a
    batch is played out."""

    def __init__(
        self,
        rng: random.Random,
        cfg: SimConfig,
        rec: _Recorder,
        route: Route,
        mode: Mode,
        hooks: tuple[HookRef, ...],
    ) -> None:
        self.rng = rng
        self.cfg = cfg
        self.rec = rec
        self.route = route
        self.mode = mode
        self.hooks = hooks
        self.closed_history: list[str] = []  # occurrences compaction may remove
        # The transcript as (occs, call ids) per closed batch, after the task.
        self.batches: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
        self.pending_jobs: list[tuple[str, str, int]] = []

    def compact(self, start: int, turn: int) -> None:
        rng, rec = self.rng, self.rec
        removed = tuple(self.closed_history[: rng.randint(1, len(self.closed_history))])
        del self.closed_history[: len(removed)]
        gone = set(removed)
        self.batches = [b for b in self.batches if not set(b[0]) <= gone]
        rec.add(
            Compaction,
            start,
            turn=turn,
            calls_removed=removed,
            results_removed=removed,
            messages=self.shapes(),
        )

    def shapes(self) -> tuple[MessageShape, ...]:
        """The transcript left: the (folded) task, then each batch's call and results."""
        out = [MessageShape(role="user", blocks=("text",))]
        for _, ids in self.batches:
            out.append(MessageShape(role="assistant", blocks=("text", *(f"call:{i}" for i in ids))))
            out.append(MessageShape(role="user", blocks=tuple(f"result:{i}" for i in ids)))
        return tuple(out)

    def _hooks(self, planned: _Planned, cause: int) -> tuple[int, str | None]:
        """Run the hooks that cover the call, in order, until one vetoes (its id)."""
        last = cause
        for hook in self.hooks:
            if not fnmatch.fnmatchcase(planned.ref.tool, hook.matcher):
                continue
            vetoed = self.rng.random() < self.cfg.p_veto
            last = self.rec.add(
                HookRun,
                last,
                occ=planned.ref.occ,
                hook=hook.id,
                vetoed=vetoed,
                reason="blocked by policy" if vetoed else "",
            )
            if vetoed:
                return last, hook.id
        return last, None

    def _decide(self, planned: _Planned, assistant: int) -> tuple[int, bool]:
        """Hooks, decision and ask: the last event's seq, and whether it is admitted."""
        rec, occ, facts = self.rec, planned.ref.occ, planned.facts
        first = resolve(facts)
        last, vetoed = assistant, None
        if first.decision is not Decision.DENY:
            last, vetoed = self._hooks(planned, assistant)
        if vetoed is not None:
            hook_rule = RuleRef(
                behavior=RuleBehavior.DENY, source=Source.POLICY, pattern=f"hook:{vetoed}"
            )
            facts = facts.model_copy(update={"rules": (*facts.rules, hook_rule)})
        res = resolve(facts)
        last = rec.add(
            DecisionEvent,
            last,
            occ=occ,
            decision=res.decision,
            stage=res.stage.value,
            rule=res.rule,
            facts=facts,
            route=self.route,
            cls=planned.cls,
            key=planned.key,
            reads=planned.reads,
            writes=planned.writes,
        )
        ok = res.decision is Decision.ALLOW
        if res.decision is Decision.ASK:
            answer = settle_ask(self.route, self.cfg.headless_default, self.rng.random() < 0.7)
            last = rec.add(
                AskResolved, last, occ=occ, approved=answer.approved, resolver=answer.resolver
            )
            ok = answer.approved
        return last, ok

    def run_batch(self, batch: Sequence[_Planned], assistant: int, turn: int) -> None:
        rng, cfg, rec = self.rng, self.cfg, self.rec
        last_of: dict[str, int] = {}
        admitted: list[_Planned] = []
        results: dict[str, tuple[ResultStatus, int]] = {}

        def answer(ref: CallRef, status: ResultStatus, **content: Any) -> None:
            """The call's result, after its last event (kept for results_sent)."""
            result = rec.add(
                Result, last_of[ref.occ], occ=ref.occ, call_id=ref.call_id, status=status, **content
            )
            results[ref.occ] = (status, result)

        # Batch preflight: every call decided, every ask settled, before any effect.
        for planned in batch:
            occ = planned.ref.occ
            last_of[occ], ok = self._decide(planned, assistant)
            if ok:
                admitted.append(planned)
            else:
                answer(planned.ref, ResultStatus.DENIED)
        t0 = rec.t + 0.001
        timed = _schedule(rng, cfg, admitted, t0)
        horizon = max((x.end for x in timed), default=t0)
        cut: float | None = None
        stop: str | None = None
        if timed and rng.random() < cfg.p_cancel + cfg.p_interrupt:
            cut = rng.uniform(t0, horizon)
            stop = (
                "cancel"
                if rng.random() < cfg.p_cancel / (cfg.p_cancel + cfg.p_interrupt)
                else "interrupt"
            )
        # A foreground call that is cut by its time limit, half-way through.
        timeouts = [x for x in timed if x.call.cls is not CallClass.BACKGROUND]
        timed_out = (
            rng.choice(timeouts).call.ref.occ if timeouts and rng.random() < cfg.p_timeout else None
        )
        points: list[tuple[float, int, int, _Timed]] = []
        for i, x in enumerate(timed):
            points.append((x.start, 1, i, x))
            points.append((x.end, 0, i, x))
        points.sort(key=lambda p: (p[0], p[1], p[2]))
        running: dict[str, _Timed] = {}
        started: set[str] = set()
        for when, is_start, _, x in points:
            if cut is not None and when > cut:
                break
            occ = x.call.ref.occ
            rec.t = max(rec.t, when)
            if is_start:
                # The timed-out call records its limit as it starts (SCHED-5).
                limits = {"limit_s": _limit(x)} if occ == timed_out else {}
                last_of[occ] = rec.add(EffectStart, last_of[occ], occ=occ, **limits)
                started.add(occ)
                running[occ] = x
                continue
            del running[occ]
            if occ == timed_out:
                limit = _limit(x)
                rec.t = max(rec.t, x.start + limit)
                rec.add(
                    Cancel,
                    last_of[occ],
                    turn=turn,
                    cause=CancelCause.TIMEOUT,
                    occs=(occ,),
                    limit_s=limit,
                    reason=f"ran past its {limit:g} s limit",
                )
                last_of[occ] = rec.add(
                    EffectEnd, last_of[occ], occ=occ, outcome=EffectOutcome.CANCELLED
                )
                status = ResultStatus.CANCELLED
            elif x.call.cls is CallClass.BACKGROUND:
                job = f"job-{occ}"
                last_of[occ] = rec.add(Handshake, last_of[occ], occ=occ, job=job)
                self.pending_jobs.append((occ, job, last_of[occ]))
                status = ResultStatus.OK
            else:
                committed = x.outcome is EffectOutcome.OK and x.call.facts.kind in (
                    ToolKind.EDIT,
                    ToolKind.EXEC,
                )
                if committed:  # its digest: of the output its result carries (RETRY-2)
                    last_of[occ] = rec.add(
                        Commit, last_of[occ], occ=occ, outcome=x.outcome, digest=_OUTPUT_DIGEST
                    )
                last_of[occ] = rec.add(
                    EffectEnd, last_of[occ], occ=occ, outcome=x.outcome, committed=committed
                )
                status = ResultStatus.OK if x.outcome is EffectOutcome.OK else ResultStatus.ERROR
            answer(x.call.ref, status)
            if (
                x.call.ref.tool == "bash"
                and status is ResultStatus.OK
                and rng.random() < cfg.p_spawn
            ):
                _spawn(rng, rec, self.mode, last_of[occ], turn)
        ids = tuple(p.ref.call_id for p in batch)
        occs = tuple(p.ref.occ for p in batch)
        if stop is not None and cut is not None:
            rec.t = max(rec.t, cut)
            if stop == "interrupt":
                killed = rng.random() < 0.5  # the process died, or the user stopped it
                # A running edit or exec that completed commits, before the stop
                # or (the user's stop lets it finish) after it; its result is
                # then the resumed process's to report (RETRY-1, RETRY-2).
                mutating = (ToolKind.EDIT, ToolKind.EXEC)
                commits = [
                    occ
                    for occ, x in running.items()
                    if x.call.facts.kind in mutating and x.call.cls is not CallClass.BACKGROUND
                    if rng.random() < 0.4
                ]
                late = {occ for occ in commits if not killed and rng.random() < 0.5}
                journal = content_digest(_JOURNALED)
                # A killed process's exec that finished before it could commit:
                # the resuming process commits it from its exit record (RETRY-4;
                # edits leave none). Chosen without drawing: other runs stay as they were.
                recovered = tuple(
                    occ
                    for occ in occs
                    if killed and occ in commits and running[occ].call.facts.kind is ToolKind.EXEC
                )
                for occ in commits:
                    if occ not in late and occ not in recovered:
                        last_of[occ] = rec.add(
                            Commit, last_of[occ], occ=occ, outcome=EffectOutcome.OK, digest=journal
                        )
                if killed:  # nothing records a SIGKILL: no effect ends cancelled
                    rec.add(Interrupt, reason="process killed")
                else:  # the user's Ctrl-C: the interrupt names the signal (SCHED-5)
                    sigint = rec.add(SignalReceived, signum=2, name="SIGINT")
                    rec.add(Interrupt, sigint, reason="user interrupt")
                for occ in sorted(late):
                    last_of[occ] = rec.add(
                        Commit, last_of[occ], occ=occ, outcome=EffectOutcome.OK, digest=journal
                    )
                for occ in recovered:  # no digest: its output is the exit record's
                    last_of[occ] = rec.add(
                        Commit, last_of[occ], occ=occ, outcome=EffectOutcome.OK, recovered=True
                    )
                for occ in list(running):
                    committed = occ in commits
                    outcome = (
                        EffectOutcome.OK
                        if committed
                        else EffectOutcome.UNKNOWN
                        if killed
                        else EffectOutcome.CANCELLED
                    )
                    last_of[occ] = rec.add(
                        EffectEnd, last_of[occ], occ=occ, outcome=outcome, committed=committed
                    )
                rec.add(Resume)
                for occ in commits:  # answered from the journal, never run again
                    answer(
                        running[occ].call.ref,
                        ResultStatus.OK,
                        # the journal's output; or, the kill having come
                        # between the commit and the journal, the note
                        # (chosen without drawing: other runs stay as they were)
                        content=NOT_JOURNALED if occ.endswith("2") else _JOURNALED,
                    )
                open_calls = [p for p in batch if p.ref.occ not in results]
                rec.add(
                    Repair,
                    assistant,
                    stubbed=tuple(p.ref.occ for p in open_calls),
                    unknown=tuple(
                        p.ref.occ for p in open_calls if _stub_unknown(p, p.ref.occ in started)
                    ),
                    call_ids=ids,
                    recovered=recovered,
                )
                self.batches.append((occs, ids))
                return
            # The cancel names its source (SCHED-5): the user's stop through the
            # API, or (every third turn, chosen without drawing) the journal's error.
            if turn % 3 == 0:
                source = rec.add(SinkError, sink="journal", error="simulated: disk full")
                cause = CancelCause.SINK_FAILURE
            else:
                source = rec.add(StopRequest, via="simulated", reason="user cancel")
                cause = CancelCause.USER
            rec.add(Cancel, source, turn=turn, cause=cause, reason=f"{cause.value} cancel")
            for occ, x in list(running.items()):
                last_of[occ] = rec.add(
                    EffectEnd, last_of[occ], occ=occ, outcome=EffectOutcome.CANCELLED
                )
                answer(x.call.ref, ResultStatus.CANCELLED)
            for planned in admitted:
                occ = planned.ref.occ
                if occ not in started:
                    answer(planned.ref, ResultStatus.SKIPPED)
        rec.t += 0.0005
        rec.add(ResultsSent, *(results[o][1] for o in occs), turn=turn, occs=occs, call_ids=ids)
        self.closed_history.extend(occs)
        self.batches.append((occs, ids))


def _spawn(rng: random.Random, rec: _Recorder, mode: Mode, cause: int, turn: int) -> None:
    requested = rng.choice([None, *Mode])
    granted = child_authority(mode, ALL_TOOLS, requested, profile_allow=rng.sample(ALL_TOOLS, 5))
    if isinstance(granted, ChildAuthority):
        rec.add(
            Spawn,
            cause,
            agent_id=f"child-{turn}-{rng.randrange(1000)}",
            child_mode=granted.mode,
            child_tools=tuple(sorted(granted.tools)),
            parent_mode=mode,
            parent_tools=ALL_TOOLS,
            requested_mode=requested,
        )
