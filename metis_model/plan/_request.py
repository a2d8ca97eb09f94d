"""The canonical form of a request: the L0 cache key (specs/plan.md, "Paths").

Lower-cased (Unicode case folding), whitespace collapsed to single spaces,
trimmed, and trailing sentence punctuation dropped. Two requests with the same
canonical form may share an L0 plan; grounding (`_cache.grounded`) still reads
the request as written.
"""

from __future__ import annotations

import unicodedata

__all__ = ["canonical_request"]

_TRAILING = ".!?;:, "


def canonical_request(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(folded.split()).rstrip(_TRAILING)
