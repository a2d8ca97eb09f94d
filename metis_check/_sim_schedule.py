"""One batch as the simulated runtime plans it, and its schedule.

The calls of a batch with their facts, class, key and read and write
footprints (`_plan_batch`); the SCHED-6 footprint conflict; and the
four-class schedule over simulated time (`_schedule`), with the time limit of
a call a timeout cuts. Seeded `random.Random` only.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import attrs

from metis_trace import CallClass
from metis_trace import CallRef
from metis_trace import EffectOutcome
from metis_trace import Facts
from metis_trace import Mode
from metis_trace import RuleBehavior
from metis_trace import RuleRef
from metis_trace import Source
from metis_trace import ToolKind

from ._sim_config import TOOLS_BY_KIND
from ._sim_config import WORKSPACE
from ._sim_config import SimConfig


@attrs.frozen
class _Planned:
    """One call of a batch as the simulated runtime sees it."""

    ref: CallRef
    facts: Facts
    cls: CallClass
    key: str | None
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()


def _facts(rng: random.Random, cfg: SimConfig, mode: Mode, kind: ToolKind) -> Facts:
    rules: list[RuleRef] = []
    if rng.random() < cfg.p_rules:
        for _ in range(rng.randint(1, 2)):
            rules.append(
                RuleRef(
                    behavior=rng.choice(list(RuleBehavior)),
                    source=rng.choice(list(Source)),
                    pattern=f"Rule{rng.randint(0, 9)}",
                    recency=rng.randint(0, 5),
                )
            )
    return Facts(
        mode=mode,
        kind=kind,
        protected=rng.random() < cfg.p_protected,
        secret=kind is ToolKind.READ_ONLY and rng.random() < cfg.p_protected,
        in_scope=rng.random() >= cfg.p_out_of_scope,
        rules=tuple(rules),
    )


def _classify(
    rng: random.Random, cfg: SimConfig, kind: ToolKind
) -> tuple[CallClass, str | None, tuple[str, ...], tuple[str, ...]]:
    """Class, key, read and write footprints (unknown = the whole filesystem)."""
    if kind is ToolKind.EDIT:
        path = f"{WORKSPACE}/f{rng.randrange(cfg.queue_keys)}.txt"
        return CallClass.QUEUE, f"file:{path}", (), (path,)
    if kind is ToolKind.EXEC:
        if rng.random() < cfg.p_background:
            return CallClass.BACKGROUND, None, (), ("/",)
        if rng.random() < 0.3:
            return CallClass.SAFE, None, ("/",), ()
        return CallClass.EXCLUSIVE, None, (), ("/",)
    if kind is ToolKind.READ_ONLY:
        choices = (WORKSPACE, f"{WORKSPACE}/f0.txt", f"{WORKSPACE}/f1.txt", f"{WORKSPACE}/notes")
        return CallClass.SAFE, None, (rng.choice(choices),), ()
    return CallClass.SAFE, None, (), ()


def _plan_batch(rng: random.Random, cfg: SimConfig, mode: Mode, turn: int) -> list[_Planned]:
    planned = []
    ids = [f"toolu_{turn}_{i}" for i in range(rng.randint(1, cfg.max_batch))]
    if len(ids) > 1 and rng.random() < 0.2:
        ids[-1] = ids[0]  # providers repeat ids; occurrences stay distinct
    for index, call_id in enumerate(ids):
        kind = rng.choice(list(ToolKind))
        cls, key, reads, writes = _classify(rng, cfg, kind)
        tool = rng.choice(TOOLS_BY_KIND[kind])
        facts = _facts(rng, cfg, mode, kind)
        input: dict[str, Any] = {"n": index}
        if tool == "read" and (facts.secret or not facts.in_scope):
            # A read the header's settings decide (AUTH-4): the deriver is
            # sure of the fact the simulated gate recorded.
            path = f"{WORKSPACE}/.env" if facts.secret else "/elsewhere/f.txt"
            input, reads = {"path": path}, (path,)
        ref = CallRef(occ=f"{turn}.{index}", call_id=call_id, tool=tool, input=input)
        planned.append(_Planned(ref, facts, cls, key, reads, writes))
    return planned


def _overlap(a: Sequence[str], b: Sequence[str]) -> bool:
    return any(
        x == y or x == "/" or y == "/" or x.startswith(y + "/") or y.startswith(x + "/")
        for x in a
        for y in b
    )


def _conflict(a: _Planned, b: _Planned) -> bool:
    """SCHED-6: a Safe call reads where a Queue or Exclusive one writes."""
    writers = (CallClass.QUEUE, CallClass.EXCLUSIVE)
    if a.cls is CallClass.SAFE and b.cls in writers:
        return _overlap(a.reads, b.writes)
    return b.cls is CallClass.SAFE and a.cls in writers and _overlap(b.reads, a.writes)


@attrs.frozen
class _Timed:
    """A scheduled effect: start and end times of its foreground part."""

    call: _Planned
    start: float
    end: float
    outcome: EffectOutcome


def _schedule(
    rng: random.Random, cfg: SimConfig, admitted: Sequence[_Planned], t0: float
) -> list[_Timed]:
    """Four-class schedule: Safe overlap, Queue FIFO per key, Exclusive barrier,
    Background returns its handshake at once; a Safe call and a writer whose
    footprints conflict run in call order (SCHED-6)."""
    timed: list[_Timed] = []
    segment_start = t0
    segment_end = t0
    key_free: dict[str | None, float] = {}
    for planned in admitted:
        after = [x.end + 0.0001 for x in timed if _conflict(planned, x.call)]
        floor = max([segment_start, *after])
        duration = round(rng.uniform(0.001, 0.02), 6)
        outcome = EffectOutcome.ERROR if rng.random() < cfg.p_error else EffectOutcome.OK
        if planned.cls is CallClass.EXCLUSIVE:
            start = max(segment_end, segment_start)
            end = start + duration
            timed.append(_Timed(planned, start, end, outcome))
            segment_start = segment_end = end + 0.0001
            key_free.clear()
            continue
        if planned.cls is CallClass.QUEUE:
            start = max(floor, key_free.get(planned.key, segment_start))
            end = start + duration
            key_free[planned.key] = end + 0.0001
        elif planned.cls is CallClass.BACKGROUND:
            start, end, outcome = segment_start, segment_start + 0.0005, EffectOutcome.OK
        else:
            start = floor
            end = start + duration
        segment_end = max(segment_end, end)
        timed.append(_Timed(planned, start, end, outcome))
    return timed


def _limit(x: _Timed) -> float:
    """The time limit of the call a timeout cuts, half-way through its effect."""
    return round(max(x.end - x.start, 0.001) / 2, 6)
