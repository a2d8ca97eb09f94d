"""Valid runs of the model, for tests and demos.

`simulate` plays an abstract runtime that follows the specs: staged decisions,
batch preflight, the four-class schedule over simulated time, closure, cancel,
interrupt and repair, background jobs and spawns (its setting in
`_sim_config.py`, a batch's plan and schedule in `_sim_schedule.py`, how a
batch plays out in `_sim_run.py`). `flat_run` is a long run without
randomness, and `verdict_fields` the model's own verdict for made-up runs.
`break_trace` (`_mutate.py`) edits a valid trace so that exactly one named
invariant fails first. Both take a seeded `random.Random`; nothing here
touches global randomness, a clock or I/O.
"""

from __future__ import annotations

import random
from typing import Any

from metis_model._permissions import resolve
from metis_trace import Assistant
from metis_trace import CallClass
from metis_trace import CallRef
from metis_trace import DecisionEvent
from metis_trace import EffectEnd
from metis_trace import EffectOutcome
from metis_trace import EffectStart
from metis_trace import Facts
from metis_trace import JobDone
from metis_trace import Mode
from metis_trace import Request
from metis_trace import Result
from metis_trace import ResultsSent
from metis_trace import ResultStatus
from metis_trace import Route
from metis_trace import RunEnd
from metis_trace import RunStatus
from metis_trace import ToolKind
from metis_trace import TraceEvent
from metis_trace import TraceHeader
from metis_trace import TurnStart

from ._sim_config import ALL_TOOLS
from ._sim_config import HOOKS
from ._sim_config import SIM_PERMISSIONS
from ._sim_config import SimConfig
from ._sim_config import _Recorder
from ._sim_run import _Run
from ._sim_schedule import _plan_batch

__all__ = ["flat_run", "simulate", "verdict_fields"]


def simulate(seed: int, config: SimConfig | None = None) -> tuple[TraceHeader, list[TraceEvent]]:
    """One valid run of the model. Deterministic in `seed`."""
    cfg = config or SimConfig()
    rng = random.Random(seed)
    mode = cfg.mode or rng.choice(list(Mode))
    route = cfg.route or rng.choice(list(Route))
    hooks = HOOKS if rng.random() < cfg.p_hooks else ()
    header = TraceHeader(
        run_id=f"sim-{seed}",
        root_run_id=f"sim-{seed}",
        mode=mode,
        route=route,
        headless_default=cfg.headless_default,
        tools=ALL_TOOLS,
        hooks=hooks,
        producer="metis_model.simulate",
        meta={"permissions": SIM_PERMISSIONS},
    )
    rec = _Recorder()
    sim = _Run(rng, cfg, rec, route, mode, hooks)
    for turn in range(1, cfg.turns + 1):
        last = turn == cfg.turns
        rec.t += 0.001
        start = rec.add(TurnStart, turn=turn)
        if sim.closed_history and rng.random() < cfg.p_compaction:
            sim.compact(start, turn)
        req = rec.add(Request, start, turn=turn)
        rec.t += 0.002
        if last:
            rec.add(Assistant, req, turn=turn, message_id=f"msg_{turn}", stop_reason="end_turn")
            break
        batch = _plan_batch(rng, cfg, mode, turn)
        assistant = rec.add(
            Assistant,
            req,
            turn=turn,
            message_id=f"msg_{turn}",
            calls=tuple(p.ref for p in batch),
            stop_reason="tool_use",
        )
        sim.run_batch(batch, assistant, turn)
    for number, (occ, job, handshake) in enumerate(sim.pending_jobs):
        rec.t += 0.001
        # Every third job still running at the end is left running on purpose
        # (`metis run --detach-jobs`): detached, with its process group (SCHED-4).
        if number % 3 == 2:
            pid = 4000 + handshake
            rec.add(JobDone, handshake, occ=occ, job=job, outcome=EffectOutcome.DETACHED, pid=pid)
        else:
            rec.add(JobDone, handshake, occ=occ, job=job, outcome=EffectOutcome.OK)
    rec.t += 0.001
    rec.add(RunEnd, len(rec.events) - 1, status=RunStatus.COMPLETED)
    return header, rec.events


def verdict_fields(facts: Facts) -> dict[str, Any]:
    """A decision event's verdict fields for `facts`, as the model resolves them.

    The made-up runs (`flat_run`, `wide_batch`, `exit_case`) record the model's
    own decision, so they conform by construction; no rule is named.
    """
    res = resolve(facts)
    return {"decision": res.decision, "stage": res.stage.value, "facts": facts}


def flat_run(turns: int, mode: Mode = Mode.DEFAULT) -> tuple[TraceHeader, list[TraceEvent]]:
    """A long, flat valid run: every turn makes one allowed read and answers.

    Eight events a turn, each caused by the one before, no randomness: the
    shape used to measure replay throughput (benchmarks/bench_check.py).
    """
    header = TraceHeader(
        run_id="flat", root_run_id="flat", mode=mode, tools=("read",), producer="flat_run"
    )
    verdict = verdict_fields(Facts(mode=mode, kind=ToolKind.READ_ONLY))
    events: list[TraceEvent] = []
    seq = 0
    for turn in range(1, turns + 1):
        occ = f"{turn}.0"
        ref = CallRef(occ=occ, call_id=f"toolu_{turn}", tool="read", input={"path": "a.txt"})
        for factory, fields in (
            (TurnStart, {"turn": turn}),
            (Request, {"turn": turn}),
            (Assistant, {"turn": turn, "calls": (ref,), "stop_reason": "tool_use"}),
            (DecisionEvent, {"occ": occ, **verdict, "cls": CallClass.SAFE}),
            (EffectStart, {"occ": occ}),
            (EffectEnd, {"occ": occ, "outcome": EffectOutcome.OK}),
            (Result, {"occ": occ, "call_id": ref.call_id, "status": ResultStatus.OK}),
            (ResultsSent, {"turn": turn, "occs": (occ,), "call_ids": (ref.call_id,)}),
        ):
            events.append(
                factory(seq=seq, t=seq * 1e-6, causes=(seq - 1,) if seq else (), **fields)
            )
            seq += 1
    tail: list[tuple[Any, dict[str, Any]]] = [
        (TurnStart, {"turn": turns + 1}),
        (Request, {"turn": turns + 1}),
        (Assistant, {"turn": turns + 1, "calls": ()}),
        (RunEnd, {"status": RunStatus.COMPLETED}),
    ]
    for factory, fields in tail:
        events.append(factory(seq=seq, t=seq * 1e-6, causes=(seq - 1,), **fields))
        seq += 1
    return header, events
