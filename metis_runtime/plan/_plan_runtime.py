"""A plan turn from request to answer, and its resumption (specs/plan.md).

`PlanRuntime.run(request, ...)` binds the four coordinates, takes a
framework from the first path that applies (a deterministic route, L0, L1,
the engine), validates it (one recovery when that fails), and runs it as a
segment through the agent loop (`_driver.PlanDriver`). A segment ends with the
final answer, or with a pause that persists a dialog; `PlanRuntime.resume`
answers the dialog and runs the next segment from the turn's done state.
Everything is written to the turn log as it happens.

Here: `PlanRuntime`, and the helpers of its path choice and registration
(`_probe`: why a cache entry misses; `generalize`: a plan's L1 form). A
segment's working state is `_turn.TurnRun`; the records are `_turn_types`.
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
from collections.abc import Callable
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from metis_trace import TERMINAL_TOOL
from metis_trace import CacheRecord
from metis_trace import CatalogRecord
from metis_trace import ErrorClass
from metis_trace import ExecutorInfo
from metis_trace import FinalRecord
from metis_trace import FinalState
from metis_trace import Framework
from metis_trace import FrameworkRecord
from metis_trace import FrameworkStep
from metis_trace import Mode
from metis_trace import PathRecord
from metis_trace import PauseKind
from metis_trace import PlanPath
from metis_trace import ProbeOutcome
from metis_trace import ResumeAnswer
from metis_trace import ResumeRecord
from metis_trace import Route
from metis_trace import ToolKind
from metis_trace import TurnHeader
from metis_trace import framework_digest

from .._errors import ConfigError
from .._loop import AgentLoop
from .._loop import LoopConfig
from .._loop import make_header
from .._redact import Redactor
from ..dispatch import FourClassDispatcher
from ..dispatch import GateLike
from ..dispatch import SerialDispatcher
from ..providers import Provider
from ..tools import JobManager
from ..tools import ToolContext
from ..tools import ToolRegistry
from . import _rules
from ._catalog import Catalog
from ._catalog import catalog_for
from ._driver import ConsentGate
from ._driver import PlanDriver
from ._driver import RecordingTrace
from ._engine import ProposalError
from ._engine import Proposer
from ._routes import Route as DeterministicRoute
from ._routes import intent_key
from ._routes import match_route
from ._routes import nearest_cluster
from ._state import Dialog
from ._state import TurnLogWriter
from ._state import TurnState
from ._state import load_state
from ._state import save_dialog
from ._state import save_state
from ._state import turn_dir
from ._state import turn_log_path
from ._store import PlanStore
from ._turn import TurnRun
from ._turn_types import _FINISHED
from ._turn_types import Coordinates
from ._turn_types import TurnOptions
from ._turn_types import TurnOutcome
from ._turn_types import _now
from ._undo import RestoreTool

PRODUCER = "metis_runtime.plan"
_MUTATING = (ToolKind.EDIT, ToolKind.EXEC)

GateFactory = Callable[[Mode, Route], GateLike[Any]]


class PlanRuntime:
    """Plan turns in one workspace.

    `registry` is the agent loop's registry (built-ins and plugins); the
    catalog adds the workspace's manifests and `restore_files`. `gate_for`
    builds the gate of a segment for a mode and route (the CLI's, with the
    settings files); `provider` proposes frameworks (None: no engine)."""

    def __init__(
        self,
        workspace: Path,
        registry: ToolRegistry,
        gate_for: GateFactory,
        *,
        provider: Provider | None,
        env: Mapping[str, str],
        serial: bool = False,
        clock: Callable[[], dt.datetime] = _now,
    ) -> None:
        self.workspace = workspace
        self.registry = ToolRegistry([*registry, RestoreTool()], registry.plugin_errors)
        self.gate_for = gate_for
        self.provider = provider
        self.env = dict(env)
        self.serial = serial
        self.clock = clock
        self.redactor = Redactor()

    def catalog(self) -> Catalog:
        return catalog_for(self.workspace, self.registry)

    def _proposer(self, catalog: Catalog, cap: int) -> Proposer | None:
        if self.provider is None:
            return None
        descriptions = {t.name: t.spec.description for t in catalog.registry}
        return Proposer(self.provider, catalog.executors(), descriptions, cap)

    # --- a new turn --------------------------------------------------------------------

    async def run(self, request: str, who: Coordinates, options: TurnOptions) -> TurnOutcome:
        now = self.clock()
        turn_id = f"t{now.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:8]}"
        catalog = self.catalog()
        with PlanStore(self.workspace) as store:
            targets = {**_rules_targets(request), **options.targets}
            header = TurnHeader(
                turn_id=turn_id,
                owner=who.owner,
                actor=who.actor,
                channel=who.channel,
                conversation=who.conversation,
                request=request,
                canonical=_rules.canonical_request(request),
                targets=targets,
                runtime={
                    "turn_id": turn_id,
                    "owner": who.owner,
                    "channel": who.channel,
                    "conversation": who.conversation,
                    "now": now.isoformat(),
                    "date": now.date().isoformat(),
                },
                mode=options.mode,
                route=options.route,
                cap=options.cap,
                epoch=store.epoch,
                task=options.task,
                trace=f"{turn_id}/trace-1.jsonl",
                producer=PRODUCER,
            )
            path = turn_log_path(self.workspace, turn_id)
            with TurnLogWriter(path, self.redactor) as writer:
                writer.write(header)
                writer.write(CatalogRecord(segment=1, executors=catalog.executors()))
                state = TurnState(
                    header=header,
                    path="",
                    framework=Framework(steps=(FrameworkStep(tool=TERMINAL_TOOL),)),
                    attempt=0,
                    recoveries=0,
                    inputs=dict(options.inputs),
                    segment=1,
                )
                proposer = self._proposer(catalog, options.cap)
                turn = TurnRun(self, header, catalog, store, writer, state, proposer, options.live)
                chosen = await self._choose(turn, request, who, options)
                if chosen is None:
                    return self._finish(turn, path, catalog)
                return await self._run_segment(turn, path, catalog, options.route)

    async def _choose(
        self, turn: TurnRun, request: str, who: Coordinates, options: TurnOptions
    ) -> Framework | None:
        """The framework from the first path that applies (None: the turn ended)."""
        w, store, catalog, h = turn.writer, turn.store, turn.catalog, turn.header
        route = match_route(request)
        if route is not None:
            return self._route(turn, route, who, options)
        for path, key in ((PlanPath.L0, h.canonical), (PlanPath.L1, intent_key(request))):
            if path is PlanPath.L1:
                key = nearest_cluster(store, key) or key
            entry = store.lookup(path.value, key)
            if entry is None:
                w.write(PathRecord(path=path, outcome=ProbeOutcome.ABSENT, entry=key))
                continue
            now = _rules.signatures(entry.framework, catalog.infos, h.epoch)
            missing = _rules.ungrounded(entry.framework, catalog.infos, h.request, h.targets)
            reason = _probe(entry.signatures, now, not missing, path, entry.champion)
            w.write(
                PathRecord(
                    path=path,
                    outcome=ProbeOutcome.MISS if reason else ProbeOutcome.HIT,
                    reason=reason,
                    entry=key,
                    stored=entry.signatures,
                    current=now,
                    grounded=not missing,
                    champion=entry.champion if path is PlanPath.L1 else None,
                    framework_digest=framework_digest(entry.framework),
                    registered_by=entry.registered_by,
                )
            )
            if reason is None:
                turn.state.hit = {"path": path.value, "key": key}
                return self._adopt(turn, entry.framework, path)
        if turn.proposer is None:
            w.write(PathRecord(path=PlanPath.ENGINE, outcome=ProbeOutcome.ABSENT))
            turn.stop(FinalState.REFUSED, "no cached plan applies and no provider is configured")
            return None
        w.write(PathRecord(path=PlanPath.ENGINE, outcome=ProbeOutcome.USED))
        t0 = time.monotonic()
        try:
            framework = await turn.proposer.propose(request)
        except ProposalError as exc:
            # No framework to recover from: the turn ends, saying why.
            failed = exc.cls is ErrorClass.OPERATIONAL
            turn.stop(FinalState.FAILED if failed else FinalState.REFUSED, str(exc))
            return None
        return self._adopt(turn, framework, PlanPath.ENGINE, time.monotonic() - t0)

    def _adopt(
        self, turn: TurnRun, framework: Framework, source: PlanPath, seconds: float = 0.0
    ) -> Framework | None:
        failures = _rules.validate(framework, turn.catalog.infos, turn.header.cap)
        turn.writer.write(
            FrameworkRecord(
                source=source,
                attempt=0,
                framework=framework,
                valid=not failures,
                failures=tuple(failures),
                seconds=round(seconds, 6),
            )
        )
        turn.state.framework = framework
        turn.state.path = source.value
        if failures:
            first = failures[0]
            turn.failure = (first.step or 0, first.cls, first.message)
        return framework

    async def _recover_start(
        self, turn: TurnRun, number: int | None, cls: ErrorClass, message: str
    ) -> Framework | None:
        if turn.proposer is None or cls is ErrorClass.OPERATIONAL:
            turn.stop(FinalState.REFUSED, message)
            return None
        if not await turn.recover(number, cls, message):
            return None
        return turn.framework

    def _route(
        self, turn: TurnRun, route: DeterministicRoute, who: Coordinates, options: TurnOptions
    ) -> Framework | None:
        w = turn.writer
        w.write(PathRecord(path=PlanPath.ROUTE, outcome=ProbeOutcome.USED, entry=route.name))
        if route.name == "undo":
            last = turn.store.last_turn(who.owner)
            if last is None:
                turn.stop(
                    FinalState.REFUSED, "there is no completed turn of yours with effects to undo"
                )
                return None
            framework = Framework(
                steps=(
                    FrameworkStep(tool="restore_files", args={"turn": last["turn_id"]}),
                    FrameworkStep(
                        tool=TERMINAL_TOOL, args={"text": f"Undid turn {last['turn_id']}."}
                    ),
                )
            )
            return self._adopt(turn, framework, PlanPath.ROUTE)
        from ._tasks import add_task_from_route

        done, text = add_task_from_route(turn.store, route, who, options, self.clock())
        turn.stop(FinalState.COMPLETED if done else FinalState.REFUSED, text)
        return None

    async def _run_segment(
        self, turn: TurnRun, path: Path, catalog: Catalog, route: Route
    ) -> TurnOutcome:
        if turn.failure is not None and turn.state.attempt == 0 and turn.state.recoveries == 0:
            number, cls, message = turn.failure
            turn.failure = None
            if await self._recover_start(turn, number or None, cls, message) is None:
                return self._finish(turn, path, catalog)
        elif turn.failure is not None:
            turn.failure = None
            turn.stop(FinalState.REFUSED, "no valid plan")
            return self._finish(turn, path, catalog)
        if turn.stopped is not None:
            return self._finish(turn, path, catalog)
        state = turn.state
        inner = self.gate_for(turn.header.mode, route)
        # The settings the gate read, as `metis run` records them (AUTH-4).
        describe = getattr(inner, "header_meta", None)
        settings = {"permissions": describe()} if callable(describe) else {}
        header = make_header(
            mode=turn.header.mode,
            tools=catalog.registry.names(),
            route=route,
            meta={"plan": {"turn": turn.turn_id, "segment": state.segment}, **settings},
        )
        trace_path = turn_dir(self.workspace, turn.turn_id) / f"trace-{state.segment}.jsonl"
        trace = RecordingTrace(trace_path, header, redactor=self.redactor)
        gate = ConsentGate(inner, catalog, turn.owner, turn.turn_id)
        if state.dialog is not None and turn.dialog is not None and turn.dialog.pending is not None:
            gate.granted[state.dialog] = turn.dialog.pending
        ctx = ToolContext(self.workspace, self.env, JobManager())
        driver = PlanDriver(turn, trace, gate, ctx)
        loop = AgentLoop(
            driver,
            catalog.step_registry(),
            gate,
            ctx,
            trace,
            dispatcher=SerialDispatcher() if self.serial else FourClassDispatcher(),
            observer=driver,
            config=LoopConfig(max_turns=2 * len(turn.framework.steps) + 8),
        )
        try:
            result = await loop.run(turn.header.request)
        finally:
            trace.close()
            await ctx.jobs.cancel_all()
        if turn.stopped is None:
            turn.stop(FinalState.FAILED, result.error or f"the segment ended {result.status.value}")
        return self._finish(turn, path, catalog)

    def _finish(self, turn: TurnRun, path: Path, catalog: Catalog) -> TurnOutcome:
        problems = catalog.problems
        if turn.stopped == "paused":
            assert turn.dialog is not None
            return TurnOutcome(
                turn.turn_id,
                "paused",
                turn.final_text(),
                path,
                turn.dialog.id,
                turn.state.path,
                problems,
            )
        if turn.stopped is None:
            turn.stop(FinalState.REFUSED, "no plan")
        state = FinalState(turn.stopped or FinalState.REFUSED.value)
        if state is FinalState.COMPLETED and turn.state.framework.steps[0].tool != TERMINAL_TOOL:
            self._register(turn)
        answer = turn.final_text()
        turn.writer.write(
            FinalRecord(
                state=state,
                answer=answer,
                claims=turn.claims(),
                effects=turn.effects(),
                seconds=turn.clock(),
            )
        )
        turn.state.dialog = None
        save_state(self.workspace, turn.state)
        turn.store.record_turn(
            turn_id=turn.turn_id,
            owner=turn.owner,
            request_key=turn.header.canonical,
            intent=intent_key(turn.header.request),
            state=state.value,
            path=turn.state.path,
            framework=turn.state.framework.model_dump_json(),
            finished_at=self.clock().isoformat(),
            effects=len(turn.state.committed),
        )
        return TurnOutcome(turn.turn_id, state.value, answer, path, None, turn.state.path, problems)

    def _register(self, turn: TurnRun) -> None:
        """A completed, effective plan from the engine (or its recovery) is stored
        for L0 (this request) and as a shadow of its intent cluster (L1)."""
        if turn.state.path not in (PlanPath.ENGINE.value, PlanPath.RECOVERY.value):
            return
        if any(
            d.status != "ok" and d.status != "skipped_condition" for d in turn.state.done.values()
        ):
            return  # a plan that skipped a mutation for want of input was not effective
        h, fw, now = turn.header, turn.state.framework, self.clock().isoformat()

        def store(level: PlanPath, key: str, framework: Framework) -> None:
            sigs = _rules.signatures(framework, turn.catalog.infos, h.epoch)
            stored = turn.store.store_plan(level.value, key, framework, sigs, turn.turn_id, now)
            turn.writer.write(
                CacheRecord(
                    path=level,
                    entry=stored.key,
                    signatures=stored.signatures,
                    framework_digest=framework_digest(stored.framework),
                    # Champion or shadow is an L1 entry's standing; an L0 record has none.
                    champion=stored.champion if level is PlanPath.L1 else False,
                )
            )

        store(PlanPath.L0, h.canonical, fw)
        general = generalize(fw, turn.catalog.infos, h.targets)
        key = nearest_cluster(turn.store, intent_key(h.request)) or intent_key(h.request)
        store(PlanPath.L1, key, general)

    # --- resuming -------------------------------------------------------------------------

    async def resume(
        self, dialog: Dialog, answer: ResumeAnswer, inputs: Mapping[str, str], who: Coordinates
    ) -> TurnOutcome:
        state = load_state(self.workspace, dialog.turn_id)
        if state.dialog != dialog.id:
            raise ConfigError(
                f"dialog {dialog.id}: the turn is not waiting on it (already answered?)"
            )
        if who.owner != dialog.owner:
            raise ConfigError(
                f"dialog {dialog.id} belongs to {dialog.owner}; {who.owner} cannot answer it"
            )
        if answer is ResumeAnswer.APPROVE and dialog.reason is not PauseKind.ASK:
            raise ConfigError(
                f"dialog {dialog.id} asks for {', '.join(dialog.missing)}: give --input"
            )
        missing = [m for m in dialog.missing if m not in inputs and m not in state.inputs]
        if answer is ResumeAnswer.INPUT and missing:
            raise ConfigError(f"dialog {dialog.id}: still missing --input {missing[0]}=VALUE")
        catalog = self.catalog()
        header = state.header
        segment = state.segment + 1
        path = turn_log_path(self.workspace, header.turn_id)
        with PlanStore(self.workspace) as store, TurnLogWriter(path, self.redactor) as writer:
            done = tuple(sorted(int(n) for n, d in state.done.items() if d.status in _FINISHED))
            committed = tuple(n for n in done if state.done[str(n)].committed)
            writer.write(
                ResumeRecord(
                    dialog=dialog.id,
                    answer=answer,
                    inputs=dict(inputs),
                    owner=who.owner,
                    actor=who.actor,
                    channel=who.channel,
                    segment=segment,
                    done=done,
                    committed=committed,
                    trace=f"{header.turn_id}/trace-{segment}.jsonl",
                )
            )
            writer.write(CatalogRecord(segment=segment, executors=catalog.executors()))
            state.inputs.update(inputs)
            state.segment = segment
            proposer = self._proposer(catalog, header.cap)
            turn = TurnRun(self, header, catalog, store, writer, state, proposer, False)
            turn.dialog = dialog
            save_dialog(self.workspace, dialog.model_copy(update={"answered": True}))
            if answer is ResumeAnswer.REJECT:
                turn.stop(FinalState.REJECTED, "the owner rejected the pending step")
                state.dialog = None
                return self._finish(turn, path, catalog)
            if answer is not ResumeAnswer.APPROVE:
                state.dialog = None
            return await self._run_segment(turn, path, catalog, Route.INTERACTIVE)


def _probe(stored: Any, now: Any, grounded: bool, path: PlanPath, champion: bool) -> Any:
    """The first reason a cache entry is a miss (None for a hit), in order."""
    from metis_trace import MissReason

    if now.executors is None:
        return MissReason.EXECUTOR_REMOVED
    if stored.executors != now.executors:
        return MissReason.EXECUTOR_CHANGED
    if stored.families != now.families:
        return MissReason.NEW_ALTERNATIVE
    if stored.epoch != now.epoch:
        return MissReason.EPOCH_CHANGED
    if not grounded:
        return MissReason.NOT_GROUNDED
    if path is PlanPath.L1 and not champion:
        return MissReason.NOT_CHAMPION
    return None


def generalize(
    framework: Framework, catalog: Mapping[str, ExecutorInfo], targets: Mapping[str, str]
) -> Framework:
    """The L1 form of a plan: a mutating step's literal that is one of the
    request's explicit targets becomes `${RUNTIME:target.<name>}`."""
    by_value = {v: k for k, v in targets.items()}
    steps = []
    for s in framework.steps:
        info = catalog.get(s.tool)
        if info is None or info.effect not in _MUTATING:
            steps.append(s)
            continue
        args = {
            k: (
                "${RUNTIME:target." + by_value[v] + "}"
                if isinstance(v, str) and v in by_value
                else v
            )
            for k, v in s.args.items()
        }
        steps.append(s.model_copy(update={"args": args}))
    return framework.model_copy(update={"steps": tuple(steps)})


def _rules_targets(request: str) -> dict[str, str]:
    from ._routes import explicit_targets

    return explicit_targets(request)
