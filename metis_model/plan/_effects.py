"""What a turn's effect counters must say (PLAN-11): how many of its steps
committed, how many of those mutate, and how many per tool.

One definition, read by the turn-log checker (PLAN-11), the simulated turns
and the counterexample turns; the runtime counts its own (it never imports
the model).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from metis_trace import MUTATING_KINDS
from metis_trace import EffectCounts
from metis_trace import StepRecord

__all__ = ["effect_counts"]


def effect_counts(steps: Iterable[StepRecord]) -> EffectCounts:
    """The effect counters of a turn whose steps are `steps`."""
    committed = [s for s in steps if s.committed]
    return EffectCounts(
        committed=len(committed),
        mutations=sum(1 for s in committed if s.effect in MUTATING_KINDS),
        by_tool=dict(Counter(s.tool for s in committed)),
    )
