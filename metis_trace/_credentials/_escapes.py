"""Escapes: the views of a text with its backslash escapes decoded.

Escapes do not hide a credential (`\\u0041KIA...`, `https:\\/\\/u:p@h`, `\\n`
inside a PEM block): `_views` gives the text, then the text with up to
`_UNESCAPE_DEPTH` levels of escapes decoded, each with the original position
of every character (`_offsets.py`), so that what the scanner finds in a view
maps back to the original span.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .._offsets import IDENTITY
from .._offsets import Offsets
from .._offsets import PositionMap
from .._offsets import compose

_SIMPLE_ESCAPES = {
    "/": "/",
    "\\": "\\",
    '"': '"',
    "'": "'",
    "`": "`",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "b": "\b",
    "f": "\f",
}
_UNESCAPE_DEPTH = 3


# One escape `_unescape` decodes; a backslash before anything else stays as it is.
_ESCAPE = re.compile(r"\\(?:[/\\\"'`nrtbf]|u[0-9a-fA-F]{4}|x[0-9a-fA-F]{2})")


def _unescape(text: str) -> tuple[str, Offsets] | None:
    """`text` with one level of backslash escapes decoded (JSON's, plus `\\xHH`
    and `\\'`), and for each decoded position the original one (plus the
    end), as a piecewise linear map (`_offsets`): each decoded character
    comes from its escape's backslash. None if nothing was decoded."""
    out: list[str] = []
    view_starts, origin_starts = [0], [0]
    pos = removed = 0
    for m in _ESCAPE.finditer(text):
        at, stop = m.span()
        escape = m.group()
        out.append(text[pos:at])
        out.append(_SIMPLE_ESCAPES[escape[1]] if stop - at == 2 else chr(int(escape[2:], 16)))
        view = at - removed
        view_starts += (view, view + 1)
        origin_starts += (at, stop)
        removed += stop - at - 1
        pos = stop
    if not pos:
        return None
    out.append(text[pos:])
    return "".join(out), Offsets(view_starts, origin_starts)


def _views(text: str) -> Iterable[tuple[str, PositionMap]]:
    """`text`, then with up to `_UNESCAPE_DEPTH` levels of backslash escapes
    decoded, each with the original position of every character (plus the end)."""
    view, where = text, IDENTITY
    yield view, where
    for _ in range(_UNESCAPE_DEPTH):
        if "\\" not in view:
            break
        decoded = _unescape(view)
        if decoded is None:
            break
        view, inner = decoded
        where = compose(where, inner)
        yield view, where
