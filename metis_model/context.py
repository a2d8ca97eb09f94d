"""Context control in the model: the ladder of cuts over an abstract transcript.

Each step (prune, snip, offload, collapse, compaction, retry) is a pure function
that must keep the transcript provider-valid (CLOSE-8); see specs/loop.md.
"""

from ._context import (
    STEPS,
    Block,
    BlockKind,
    Budget,
    Msg,
    StepOutcome,
    Transcript,
    collapse,
    compaction,
    cut_points,
    estimate,
    ladder,
    naive_cut,
    offload,
    pairing,
    provider_valid,
    prune,
    prune_no_placeholder,
    retry,
    snip,
)

__all__ = [
    "STEPS",
    "Block",
    "BlockKind",
    "Budget",
    "Msg",
    "StepOutcome",
    "Transcript",
    "collapse",
    "compaction",
    "cut_points",
    "estimate",
    "ladder",
    "naive_cut",
    "offload",
    "pairing",
    "provider_valid",
    "prune",
    "prune_no_placeholder",
    "retry",
    "snip",
]
