"""Lockstep: the model and the real runtime driven by the same script.

A Hypothesis `RuleBasedStateMachine` (failures print as a replayable
program) plays the provider and the tools of a real `AgentLoop` (production
gate, four-class dispatcher, trace file): it answers each request with a
batch of `gated` calls, whose class, key and kind it chooses and which run
until the machine releases them (ok or failing), presses stop, and answers
last. The event loop is pumped until nothing moves; every event the runtime
wrote since is then fed to the model, and compared with what the model
allows at that point:

- its kind is enabled in the model's phase (`ENABLED`);
- an `effect_start` is one of `startable(state)`: the calls that may start;
- a `result` is one of `closable(state)` (or `cancelled`, for a call whose
  effect ended cancelled);
- `step` accepts it.

And when nothing moves, the dispatcher has started every call the model says
may start (it is work-conserving), and the calls running in the runtime are
the model's running calls.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import Phase as Stage  # metis_model has a Phase too
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine
from hypothesis.stateful import initialize
from hypothesis.stateful import invariant
from hypothesis.stateful import precondition
from hypothesis.stateful import rule
from hypothesis.stateful import run_state_machine_as_test

from metis_model import ENABLED
from metis_model import Divergence
from metis_model import LoopState
from metis_model import Phase
from metis_model import closable
from metis_model import initial_state
from metis_model import startable
from metis_model import step
from metis_runtime import AgentLoop
from metis_runtime import LoopConfig
from metis_runtime import ToolError
from metis_runtime import TraceWriter
from metis_runtime import make_header
from metis_runtime.dispatch import Dispatcher
from metis_runtime.dispatch import FourClassDispatcher
from metis_runtime.dispatch import PlannedCall
from metis_runtime.permissions import Gate
from metis_runtime.permissions import Policy
from metis_runtime.providers import ModelRequest
from metis_runtime.providers import ScriptedProvider
from metis_runtime.providers import TextBlock
from metis_runtime.providers import ToolUseBlock
from metis_runtime.tools import JobManager
from metis_runtime.tools import ToolContext
from metis_runtime.tools import ToolInput
from metis_runtime.tools import ToolOutput
from metis_runtime.tools import ToolRegistry
from metis_runtime.tools import ToolSpec
from metis_trace import CallClass
from metis_trace import Decision
from metis_trace import EffectOutcome
from metis_trace import Mode
from metis_trace import ResultStatus
from metis_trace import Route
from metis_trace import TraceEvent
from metis_trace import read_trace
from tests.runtime.test_dispatch_support import ClassedTool

PUMP = 60  # at most this many loop iterations per move
QUIET = 4  # iterations without a new trace line: nothing moves any more


class Gates:
    """The machine's hold on running calls: each waits for its release."""

    def __init__(self) -> None:
        self.events: dict[str, asyncio.Event] = {}
        self.fail: dict[str, bool] = {}
        self.running: list[str] = []

    def release(self, name: str, ok: bool) -> None:
        self.fail[name] = not ok
        self.events[name].set()


class GatedTool(ClassedTool):
    """Runs until released; its class, key and kind are in its input."""

    spec = ToolSpec(
        "gated",
        "Waits for the test to release it.",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "cls": {"type": "string"},
                "key": {"type": ["string", "null"]},
            },
            "required": ["name", "cls"],
        },
    )

    def __init__(self, gates: Gates) -> None:
        self.gates = gates

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        name = input["name"]
        gates = self.gates
        gates.running.append(name)
        try:
            await gates.events.setdefault(name, asyncio.Event()).wait()
        finally:
            gates.running.remove(name)
        if gates.fail.get(name):
            raise ToolError(f"{name}: failed as scripted")
        return ToolOutput(f"{name} done")


calls = st.lists(
    st.tuples(st.sampled_from(CallClass), st.sampled_from(["a", "b"])), min_size=1, max_size=4
)


class Lockstep(RuleBasedStateMachine):
    DISPATCHER: type[Dispatcher] = FourClassDispatcher

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="metis-lockstep-"))
        self.aio = asyncio.new_event_loop()
        self.gates = Gates()
        self.answers: asyncio.Queue[list[Any]] = asyncio.Queue()
        self.state: LoopState = initial_state()
        self.fed = 0
        self.names = 0
        self.started = False
        self.occ_of: dict[str, str] = {}  # gated name -> occurrence
        self.cls_of: dict[str, CallClass] = {}

    @initialize(
        mode=st.sampled_from([Mode.BYPASS, Mode.DEFAULT, Mode.ACCEPT_EDITS, Mode.PLAN]),
        default=st.sampled_from([Decision.ALLOW, Decision.DENY]),
    )
    def start(self, mode: Mode, default: Decision) -> None:
        ws = self.tmp / "ws"
        ws.mkdir()
        registry = ToolRegistry([GatedTool(self.gates)])
        gate = Gate(Policy(), mode, ws, Route.HEADLESS, headless_default=default)
        header = make_header(
            mode=mode, tools=registry.names(), route=Route.HEADLESS, headless_default=default
        )
        self.trace_path = self.tmp / "trace.jsonl"
        trace = TraceWriter(self.trace_path, header)

        async def script(request: ModelRequest, n: int) -> list[Any]:
            return await self.answers.get()

        self.loop = AgentLoop(
            ScriptedProvider(script),
            registry,
            gate,
            ToolContext(ws, {}, JobManager()),
            trace,
            dispatcher=self.DISPATCHER(),
            config=LoopConfig(max_turns=100, job_wait=None),
        )
        self.state = initial_state(mode, Route.HEADLESS, default)
        self.task = self.aio.create_task(self.loop.run("lockstep"))
        self.started = True
        self.pump()

    # --- driving and comparing ------------------------------------------------------

    def pump(self) -> None:
        """Run the event loop until the trace stops growing (nothing here waits on a timer)."""
        still, size = 0, -1
        for _ in range(PUMP):
            self.aio.run_until_complete(asyncio.sleep(0))
            now = self.trace_path.stat().st_size
            still = still + 1 if now == size else 0
            size = now
            if still >= QUIET:
                break
        self.feed()

    def events(self) -> list[TraceEvent]:
        with self.trace_path.open(encoding="utf-8") as fh:
            return read_trace(fh)[1]

    def feed(self) -> None:
        for event in self.events()[self.fed :]:
            before = self.state
            assert event.kind in ENABLED[before.phase], (event.kind, before.phase)
            occ = getattr(event, "occ", None)
            if event.kind == "effect_start":
                assert occ in startable(before), (occ, startable(before), before.describe())
            if event.kind == "result" and before.phase is Phase.BATCH:
                status = event.status
                call = before.calls[before.index_of[occ]]
                if not (
                    status is ResultStatus.CANCELLED and call.outcome is EffectOutcome.CANCELLED
                ):
                    assert (occ, status) in closable(before), (occ, status, closable(before))
            if event.kind == "assistant":
                for c in event.calls:
                    self.occ_of[c.input["name"]] = c.occ
            out = step(before, event)
            assert not isinstance(out, Divergence), (out.invariant, out.message)
            self.state = out
            self.fed += 1

    @property
    def waiting(self) -> bool:
        return self.state.phase is Phase.STREAMING and not self.task.done()

    # --- the machine's moves ----------------------------------------------------------

    @precondition(lambda self: self.started and self.waiting)
    @rule(batch=calls)
    def answer(self, batch: Sequence[tuple[CallClass, str]]) -> None:
        blocks = []
        for cls, key in batch:
            self.names += 1
            name = f"g{self.names}"
            inp = {
                "name": name,
                "cls": cls.value,
                "key": f"k:{key}" if cls is CallClass.QUEUE else None,
            }
            blocks.append(ToolUseBlock(f"toolu_{name}", "gated", inp))
            self.cls_of[name] = cls
        self.answers.put_nowait(blocks)
        self.pump()

    @precondition(lambda self: self.started and bool(self.gates.running))
    @rule(data=st.data(), ok=st.booleans())
    def release(self, data: st.DataObject, ok: bool) -> None:
        name = data.draw(st.sampled_from(sorted(self.gates.running)))
        self.gates.release(name, ok)
        self.pump()

    @precondition(lambda self: self.started and self.state.phase is Phase.BATCH)
    @rule()
    def press_stop(self) -> None:
        self.loop.cancel("the user pressed stop")
        self.pump()

    @precondition(lambda self: self.started and self.waiting)
    @rule()
    def answer_last(self) -> None:
        self.answers.put_nowait([TextBlock("done")])
        self.pump()
        while self.gates.running:  # the run waits for its background jobs
            self.gates.release(self.gates.running[0], True)
            self.pump()
        assert self.task.done() and self.state.phase is Phase.ENDED, self.state.describe()

    @precondition(lambda self: self.started)
    @rule()
    def time_passes(self) -> None:
        self.pump()

    @invariant()
    def nothing_startable_is_left_waiting(self) -> None:
        if not self.started:
            return
        assert not startable(self.state), (startable(self.state), self.state.describe())

    @invariant()
    def the_running_calls_agree(self) -> None:
        """The runtime's held foreground calls are exactly the model's running ones."""
        if not self.started:
            return
        held = {
            self.occ_of[n] for n in self.gates.running if self.cls_of[n] is not CallClass.BACKGROUND
        }
        assert held == {c.occ for c in self.state.calls if c.running}, self.state.describe()

    def teardown(self) -> None:
        try:
            if self.started and not self.task.done():
                # Stopping the run from outside: recorded as the interrupt's source (SCHED-5).
                self.loop.stop_requested("lockstep teardown")
                self.task.cancel()
                for name in list(self.gates.events):
                    self.gates.events[name].set()
                self.aio.run_until_complete(asyncio.wait([self.task]))
            if self.started:
                self.loop.trace.close()
        finally:
            self.aio.close()


def machine_settings(examples: int, steps: int) -> settings:
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
        derandomize=True,  # the same programs in every environment
        phases=(Stage.generate, Stage.shrink),  # explain re-runs every step: minutes
    )


def test_the_runtime_moves_in_lockstep_with_the_model() -> None:
    run_state_machine_as_test(Lockstep, settings=machine_settings(60, 15))


class NewestFirst(FourClassDispatcher):
    """A seeded fault: the batch handed over newest first (a Queue that starts
    its waiting calls newest first, an Exclusive call that jumps the line)."""

    async def run_batch(self, calls: Sequence[PlannedCall], *args: Any, **kwargs: Any) -> None:
        await super().run_batch(list(reversed(calls)), *args, **kwargs)


class BrokenLockstep(Lockstep):
    DISPATCHER = NewestFirst


@pytest.mark.metis_nonconforming  # the fault's traces diverge on purpose
def test_lockstep_catches_a_dispatcher_that_starts_newest_first() -> None:
    with pytest.raises(AssertionError) as caught:
        run_state_machine_as_test(BrokenLockstep, settings=machine_settings(100, 8))
    program = "\n".join(getattr(caught.value, "__notes__", ()))
    # The failure prints as a replayable program.
    assert "state = BrokenLockstep()" in program and "state.answer(" in program, program
