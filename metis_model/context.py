"""Context control in the model: the ladder of cuts over an abstract transcript.

Each step (prune, snip, offload, collapse, compaction, retry) is a pure function
that must keep the transcript provider-valid (CLOSE-8); see specs/loop.md.
"""

from ._context import STEPS
from ._context import Block
from ._context import BlockKind
from ._context import Budget
from ._context import Msg
from ._context import StepOutcome
from ._context import Transcript
from ._context import collapse
from ._context import compaction
from ._context import cut_points
from ._context import estimate
from ._context import ladder
from ._context import naive_cut
from ._context import offload
from ._context import pairing
from ._context import provider_valid
from ._context import prune
from ._context import prune_no_placeholder
from ._context import retry
from ._context import snip

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
