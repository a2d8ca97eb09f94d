"""The records a permission decision is made of: the facts and the rules.

Apart from the other trace events so that deciding a call builds these two
pydantic models only (each model class costs milliseconds of CPU to build):
the Claude Code hook decides in a fresh process (`metis_cli/_hook_client.py`).
`_events` uses them in the `decision` event and re-exports them.
"""

from __future__ import annotations

from pydantic import BaseModel
from pydantic import ConfigDict

from ._enums import Mode
from ._enums import RuleBehavior
from ._enums import Source
from ._enums import ToolKind

__all__ = ["Facts", "RuleRef"]


class _Record(BaseModel):
    """The base of every trace, turn log and witness record: no unknown keys, frozen."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class RuleRef(_Record):
    """A permission rule as the gate saw it: behaviour, source, text, recency."""

    behavior: RuleBehavior
    source: Source
    pattern: str
    recency: int = 0  # larger = added later; breaks ties within one source


class Facts(_Record):
    """The abstract facts a permission decision is a function of."""

    mode: Mode
    kind: ToolKind
    protected: bool = False
    secret: bool = False
    in_scope: bool = True
    transition: bool = False
    rules: tuple[RuleRef, ...] = ()  # every rule that matched this call
