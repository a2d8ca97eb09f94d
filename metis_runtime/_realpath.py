"""`os.path.realpath`, again while a symlink swap races it.

realpath checks a component with `lstat` and then reads it with `readlink`;
a link swapped for a plain file in between makes `readlink` fail (`EINVAL`),
and a name being swapped back and forth may fail that way once or twice.
Both the file tools (`tools/_files.resolve_path`) and the gate
(`permissions/_paths.resolve`) resolve through this; each maps a name that
is still changing to its own refusal.
"""

from __future__ import annotations

import os

__all__ = ["settled_realpath"]

TRIES = 3


def settled_realpath(path: str) -> str:
    """`os.path.realpath(path)`, tried up to `TRIES` times; the last OSError
    when it is still racing a swap."""
    for _ in range(TRIES - 1):
        try:
            return os.path.realpath(path)
        except OSError:
            continue
    return os.path.realpath(path)
