"""JSON type names of Python values, for the messages that say what an
argument was instead of what it should be.

Shared by the runtime's tool-input checks and the model's executor-schema
checks, so both name a wrong value the same way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

__all__ = ["json_type_name"]


def json_type_name(value: object) -> str:
    """The JSON type name of a Python value ("integer" is also a "number")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number" if math.isfinite(value) else "non-finite number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__
