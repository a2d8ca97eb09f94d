"""Where each character of a decoded view of a text came from, in little memory.

The credential scanner looks at a text and at views of it with backslash
escapes decoded (`_credentials._escapes`), and maps a finding in a view back to
the original text. A list with one original position per character costs
tens of bytes a character (a 50 MB tool result: gigabytes, and most of the
scan's time); the map is piecewise linear instead: one breakpoint per escape.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

__all__ = ["IDENTITY", "Offsets", "PositionMap", "compose"]


class PositionMap:
    """A map from view positions to original positions (`m[i]`)."""

    __slots__ = ()

    def __getitem__(self, index: int) -> int:
        raise NotImplementedError


class _Identity(PositionMap):
    __slots__ = ()

    def __getitem__(self, index: int) -> int:
        return index


IDENTITY: PositionMap = _Identity()


class Offsets(PositionMap):
    """Piecewise linear: view position `d` in the segment starting at
    `view_starts[k]` is original position `origin_starts[k] + (d - view_starts[k])`."""

    __slots__ = ("_origin", "_view")

    def __init__(self, view_starts: Sequence[int], origin_starts: Sequence[int]) -> None:
        self._view = view_starts
        self._origin = origin_starts

    def __getitem__(self, index: int) -> int:
        k = bisect_right(self._view, index) - 1
        if k < 0:
            return index
        return self._origin[k] + (index - self._view[k])


class _Composed(PositionMap):
    __slots__ = ("_inner", "_outer")

    def __init__(self, outer: PositionMap, inner: PositionMap) -> None:
        self._outer, self._inner = outer, inner

    def __getitem__(self, index: int) -> int:
        return self._outer[self._inner[index]]


def compose(outer: PositionMap, inner: PositionMap) -> PositionMap:
    """`outer[inner[i]]`: a view of a view, mapped back to the first text."""
    return inner if outer is IDENTITY else _Composed(outer, inner)
