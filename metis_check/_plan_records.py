"""Pieces of the plan path's synthetic turn logs.

Shared by the two writers of turn logs that no runtime produced: the
simulator (`_plan_generate`) and the z3 counterexamples
(`metis_proofs._plan_cex`), so both describe a toy executor's arguments and
the owner's answer to a dialog the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from metis_trace import ResumeRecord
from metis_trace import TurnHeader

__all__ = ["object_schema", "owner_resume"]


def object_schema(props: Mapping[str, str], required: tuple[str, ...]) -> dict[str, Any]:
    """A closed object schema: one JSON type per argument, `required` of them."""
    return {
        "type": "object",
        "properties": {k: {"type": v} for k, v in props.items()},
        "required": list(required),
        "additionalProperties": False,
    }


def owner_resume(header: TurnHeader, **fields: Any) -> ResumeRecord:
    """The turn's owner answers a dialog on the turn's channel; `fields` say
    which dialog, the answer and the segment it opens."""
    return ResumeRecord(owner=header.owner, actor=header.owner, channel=header.channel, **fields)
