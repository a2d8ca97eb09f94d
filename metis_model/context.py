"""Context control in the model: the ladder of cuts over an abstract transcript.

Each step (prune, snip, offload, collapse, compaction, retry) is a pure function
that must keep the transcript provider-valid (CLOSE-8); see specs/loop.md.
"""

from ._context import *  # noqa: F403  (the public face: what `_context.__all__` names)
from ._context import __all__ as __all__
