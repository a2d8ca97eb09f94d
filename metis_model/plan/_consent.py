"""What an approval is bound to, and what it authorizes (PLAN-9).

An approval names an `Action`: the owner, the turn, the executor (name and
digest), the digest of the arguments exactly as resolved, and the
destination the effect lands on. It authorizes one call whose action is
equal in every field, once; nothing else. Frequency, wording or silence
never create a permission: a step whose ask was approved must carry an
approval granted for it in a resumed dialog of the same turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from metis_trace import Action
from metis_trace import ExecutorInfo
from metis_trace import canonical_digest

__all__ = ["BINDING_FIELDS", "action_for", "authorizes", "destination"]

BINDING_FIELDS: tuple[str, ...] = tuple(Action.model_fields)


def destination(executor: ExecutorInfo, args: Mapping[str, Any]) -> str:
    """`host:value` of the executor's destination argument (`host:*` without one)."""
    if executor.destination is None:
        return f"{executor.host}:*"
    value = args.get(executor.destination)
    shown = value if isinstance(value, str) else canonical_digest(value)
    return f"{executor.host}:{shown}"


def action_for(owner: str, turn: str, executor: ExecutorInfo, args: Mapping[str, Any]) -> Action:
    return Action(
        owner=owner,
        turn=turn,
        tool=executor.name,
        executor_digest=executor.digest,
        args_digest=canonical_digest(dict(args)),
        destination=destination(executor, args),
    )


def authorizes(approval: Action, action: Action, *, used: bool = False) -> bool:
    """An unused approval authorizes exactly the action it names."""
    return not used and all(getattr(approval, f) == getattr(action, f) for f in BINDING_FIELDS)
