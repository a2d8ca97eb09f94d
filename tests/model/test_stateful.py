"""A RuleBasedStateMachine over the model: it takes only enabled actions, so
every run it builds must be accepted by `step` and by `check_trace`.

Failures print as a replayable program (Hypothesis stateful).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine
from hypothesis.stateful import invariant
from hypothesis.stateful import precondition
from hypothesis.stateful import rule

from metis_check import check_trace
from metis_model import Divergence
from metis_model import LoopState
from metis_model import Phase
from metis_model import closable
from metis_model import initial_state
from metis_model import resolve
from metis_model import settled
from metis_model import startable
from metis_model import step
from metis_model._interference import footprints_conflict
from metis_trace import AskResolved
from metis_trace import Assistant
from metis_trace import CallClass
from metis_trace import CallRef
from metis_trace import Cancel
from metis_trace import CancelCause
from metis_trace import Commit
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
from metis_trace import Mode
from metis_trace import Repair
from metis_trace import Request
from metis_trace import Result
from metis_trace import ResultsSent
from metis_trace import ResultStatus
from metis_trace import Resume
from metis_trace import RuleBehavior
from metis_trace import RuleRef
from metis_trace import RunEnd
from metis_trace import RunStatus
from metis_trace import SignalReceived
from metis_trace import Source
from metis_trace import StopRequest
from metis_trace import ToolKind
from metis_trace import TraceEvent
from metis_trace import TraceHeader
from metis_trace import TurnStart

CLASSES = {
    ToolKind.READ_ONLY: [CallClass.SAFE],
    ToolKind.PLAN_CONTROL: [CallClass.SAFE],
    ToolKind.EDIT: [CallClass.QUEUE],
    ToolKind.EXEC: [CallClass.EXCLUSIVE, CallClass.SAFE, CallClass.BACKGROUND],
}
# Footprints over a tiny workspace, so that SCHED-6 has something to order.
PATHS = ["/ws", "/ws/a", "/ws/b", "/"]
QUEUED = "/ws/a"  # every Queue call's file: one key, so that SCHED-2 has a queue to order
HOOK = HookRef(id="h", matcher="t")
VETO = RuleRef(behavior=RuleBehavior.DENY, source=Source.POLICY, pattern="hook:h")


class ModelMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.header = TraceHeader(
            run_id="rbsm", root_run_id="rbsm", mode=Mode.DEFAULT, tools=("t",), hooks=(HOOK,)
        )
        self.state: LoopState = initial_state(tools=frozenset({"t"}), hooks=(HOOK,))
        self.events: list[TraceEvent] = []
        self.kinds: dict[str, ToolKind] = {}

    def emit(self, factory: Any, **fields: Any) -> None:
        seq = len(self.events)
        event = factory(seq=seq, t=float(seq), causes=(seq - 1,) if seq else (), **fields)
        out = step(self.state, event)
        assert not isinstance(out, Divergence), (out.invariant, out.message)
        self.events.append(event)
        self.state = out

    @precondition(lambda self: self.state.phase in (Phase.READY, Phase.ANSWERED))
    @rule(kinds=st.lists(st.sampled_from(ToolKind), max_size=4), data=st.data())
    def new_turn(self, kinds: list[ToolKind], data: st.DataObject) -> None:
        turn = self.state.turn + 1
        self.emit(TurnStart, turn=turn)
        self.emit(Request, turn=turn)
        calls = tuple(
            CallRef(occ=f"{turn}.{i}", call_id=f"id{i % 2}", tool="t") for i in range(len(kinds))
        )
        self.kinds = {c.occ: k for c, k in zip(calls, kinds, strict=True)}
        self.emit(Assistant, turn=turn, calls=calls)

    @precondition(lambda self: self.state.phase is Phase.BATCH and not settled(self.state))
    @rule(data=st.data())
    def decide(self, data: st.DataObject) -> None:
        call = next(
            c
            for c in self.state.calls
            if c.decision is None or (c.decision is Decision.ASK and c.approved is None)
        )
        if call.decision is not None:
            self.emit(AskResolved, occ=call.occ, approved=data.draw(st.booleans()))
            return
        kind = self.kinds[call.occ]
        facts = Facts(
            mode=data.draw(st.sampled_from(Mode)),
            kind=kind,
            protected=data.draw(st.booleans()),
            in_scope=data.draw(st.booleans()),
        )
        if resolve(facts).decision is not Decision.DENY:  # the hook runs; it may veto
            vetoed = data.draw(st.booleans())
            self.emit(HookRun, occ=call.occ, hook="h", vetoed=vetoed)
            if vetoed:
                facts = facts.model_copy(update={"rules": (VETO,)})
        res = resolve(facts)
        cls = data.draw(st.sampled_from(CLASSES[kind]))
        key = f"file:{QUEUED}" if cls is CallClass.QUEUE else None
        reads = tuple(data.draw(st.lists(st.sampled_from(PATHS), max_size=2)))
        writes = tuple(data.draw(st.lists(st.sampled_from(PATHS), max_size=2)))
        if cls is CallClass.QUEUE:  # an edit writes only its key's file (SCHED-2)
            writes = data.draw(st.sampled_from([(), (QUEUED,)]))
        self.emit(
            DecisionEvent,
            occ=call.occ,
            decision=res.decision,
            stage=res.stage.value,
            rule=res.rule,
            facts=facts,
            cls=cls,
            key=key,
            reads=reads,
            writes=writes,
        )

    @precondition(lambda self: bool(startable(self.state)))
    @rule(data=st.data())
    def start(self, data: st.DataObject) -> None:
        # Every call records a 1 s limit (t counts events): a timeout states it (SCHED-5).
        self.emit(EffectStart, occ=data.draw(st.sampled_from(startable(self.state))), limit_s=1.0)

    @precondition(lambda self: any(c.running for c in self.state.calls))
    @rule(data=st.data(), ok=st.booleans(), committed=st.booleans())
    def finish(self, data: st.DataObject, ok: bool, committed: bool) -> None:
        call = data.draw(st.sampled_from([c for c in self.state.calls if c.running]))
        if call.cls is CallClass.BACKGROUND and self.state.phase is Phase.BATCH:
            self.emit(Handshake, occ=call.occ, job=f"job-{call.occ}")
        else:
            outcome = EffectOutcome.OK if ok else EffectOutcome.ERROR
            if committed:
                self.emit(Commit, occ=call.occ, outcome=outcome)
            self.emit(EffectEnd, occ=call.occ, outcome=outcome, committed=committed)

    @precondition(
        lambda self: (
            self.state.phase is Phase.BATCH
            and any(c.running and c.cls is not CallClass.BACKGROUND for c in self.state.calls)
        )
    )
    @rule(data=st.data())
    def time_out(self, data: st.DataObject) -> None:
        call = data.draw(
            st.sampled_from(
                [c for c in self.state.calls if c.running and c.cls is not CallClass.BACKGROUND]
            )
        )
        assert float(len(self.events)) - call.started_t >= 1.0  # it ran past its limit
        self.emit(
            Cancel, turn=self.state.turn, cause=CancelCause.TIMEOUT, occs=(call.occ,), limit_s=1.0
        )
        self.emit(EffectEnd, occ=call.occ, outcome=EffectOutcome.CANCELLED)
        self.emit(Result, occ=call.occ, status=ResultStatus.CANCELLED)

    @precondition(lambda self: bool(closable(self.state)))
    @rule(data=st.data())
    def close(self, data: st.DataObject) -> None:
        occ, status = data.draw(st.sampled_from(closable(self.state)))
        self.emit(Result, occ=occ, status=status)

    @precondition(
        lambda self: (
            self.state.phase is Phase.BATCH and self.state.calls and not self.state.open_occs()
        )
    )
    @rule()
    def send(self) -> None:
        self.emit(
            ResultsSent,
            turn=self.state.turn,
            occs=tuple(c.occ for c in self.state.calls),
            call_ids=tuple(c.call_id for c in self.state.calls),
        )

    @precondition(lambda self: self.state.phase is Phase.BATCH and settled(self.state))
    @rule()
    def cancel(self) -> None:
        # The user's stop through the API, named by the cancel's causes (SCHED-5).
        self.emit(StopRequest, via="test")
        self.emit(Cancel, turn=self.state.turn, cause=CancelCause.USER)

    @precondition(lambda self: self.state.phase in (Phase.BATCH, Phase.READY, Phase.STREAMING))
    @rule()
    def interrupt_resume_repair(self) -> None:
        # Ctrl-C: the interrupt names the signal, so running effects may end cancelled.
        self.emit(SignalReceived, signum=2, name="SIGINT")
        self.emit(Interrupt)
        for c in self.state.calls:
            if c.running:
                self.emit(EffectEnd, occ=c.occ, outcome=EffectOutcome.CANCELLED)
        self.emit(Resume)
        for c in self.state.calls:  # RETRY-2: a committed call is answered by its commit
            if c.committed and not c.closed:
                ok = c.outcome is EffectOutcome.OK
                self.emit(Result, occ=c.occ, status=ResultStatus.OK if ok else ResultStatus.ERROR)
        open_calls = [c for c in self.state.calls if not c.closed]
        unknown = tuple(  # RETRY-3: it started, and is not Safe or committed
            c.occ for c in open_calls if c.started and (c.committed or c.cls is not CallClass.SAFE)
        )
        self.emit(
            Repair,
            stubbed=self.state.open_occs(),
            unknown=unknown,
            call_ids=tuple(c.call_id for c in self.state.calls),
        )
        # Stopped again before the next turn: the next repair stubs nothing (CLOSE-5).
        self.emit(Interrupt)
        self.emit(Resume)
        self.emit(Repair, stubbed=())

    @precondition(lambda self: bool(self.state.jobs))
    @rule(data=st.data())
    def job_done(self, data: st.DataObject) -> None:
        job = data.draw(st.sampled_from(sorted(self.state.jobs)))
        self.emit(JobDone, occ=self.state.jobs[job][0], job=job, outcome=EffectOutcome.OK)

    @invariant()
    def exclusive_runs_alone(self) -> None:  # SCHED-1
        running = [c for c in self.state.calls if c.running and c.cls is not CallClass.BACKGROUND]
        if any(c.cls is CallClass.EXCLUSIVE for c in running):
            assert len(running) == 1

    @invariant()
    def one_queue_call_per_key(self) -> None:  # SCHED-2
        keys = [c.key for c in self.state.calls if c.running and c.cls is CallClass.QUEUE]
        assert len(keys) == len(set(keys))

    @invariant()
    def reads_never_overlap_writes(self) -> None:  # SCHED-6
        running = [c for c in self.state.calls if c.running]
        assert not any(footprints_conflict(a, b) for a in running for b in running if a is not b)

    @invariant()
    def no_effect_before_preflight(self) -> None:  # AUTH-2
        if any(c.running or c.finished for c in self.state.calls):
            assert settled(self.state)

    @invariant()
    def only_admitted_calls_run(self) -> None:  # AUTH-1
        assert all(c.admitted for c in self.state.calls if c.running or c.finished)

    def teardown(self) -> None:
        # End the run cleanly where the model allows it, then replay the whole trace.
        if self.state.phase is Phase.ANSWERED:
            for job, (occ, _) in sorted(self.state.jobs.items()):
                self.emit(JobDone, occ=occ, job=job, outcome=EffectOutcome.OK)
            self.emit(RunEnd, status=RunStatus.COMPLETED)
        report = check_trace(self.events, self.header)
        assert report.ok, report.first


TestModelMachine = ModelMachine.TestCase
