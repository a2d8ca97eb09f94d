"""Context control: the escalating ladder run before each provider request.

prune (old thinking) -> snip (long old results) -> offload (large results to
files) -> collapse (fold old turns into a digest) -> compaction (fold into a
provider-written summary) -> retry (once, after a provider overflow). Every
step keeps the transcript provider-valid (CLOSE-8, specs/loop.md); each step
taken is a `compaction` trace event with its `step` name.
"""

from ._controller import STEP_NAMES
from ._controller import ContextBudget
from ._controller import ContextController
from ._controller import OccNamer
from ._controller import OverflowRetryProvider
from ._controller import Prepared
from ._controller import StepTaken
from ._controller import Summarizer
from ._controller import provider_summarizer
from ._controller import record_step
from ._estimate import CHARS_PER_TOKEN
from ._estimate import MESSAGE_OVERHEAD
from ._estimate import estimate_tokens
from ._steps import PRUNED_PLACEHOLDER
from ._steps import StepOutput
from ._steps import cut_points
from ._steps import digest
from ._steps import fold
from ._steps import fold_point
from ._steps import offload
from ._steps import prune
from ._steps import snip
from ._steps import snipped
from ._steps import transcript_problem

__all__ = [
    "CHARS_PER_TOKEN",
    "MESSAGE_OVERHEAD",
    "PRUNED_PLACEHOLDER",
    "STEP_NAMES",
    "ContextBudget",
    "ContextController",
    "OccNamer",
    "OverflowRetryProvider",
    "Prepared",
    "StepOutput",
    "StepTaken",
    "Summarizer",
    "cut_points",
    "digest",
    "estimate_tokens",
    "fold",
    "fold_point",
    "offload",
    "provider_summarizer",
    "prune",
    "record_step",
    "snip",
    "snipped",
    "transcript_problem",
]
