"""Context control: the escalating ladder run before each provider request.

prune (old thinking) -> snip (long old results) -> offload (large results to
files) -> collapse (fold old turns into a digest) -> compaction (fold into a
provider-written summary) -> retry (once, after a provider overflow). Every
step keeps the transcript provider-valid (CLOSE-8, specs/loop.md); each step
taken is a `compaction` trace event with its `step` name.
"""

from ._controller import (
    STEP_NAMES,
    ContextBudget,
    ContextController,
    OccNamer,
    OverflowRetryProvider,
    Prepared,
    StepTaken,
    Summarizer,
    provider_summarizer,
    record_step,
)
from ._estimate import CHARS_PER_TOKEN, MESSAGE_OVERHEAD, estimate_tokens
from ._steps import (
    PRUNED_PLACEHOLDER,
    StepOutput,
    cut_points,
    digest,
    fold,
    fold_point,
    offload,
    prune,
    snip,
    snipped,
    transcript_problem,
)

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
