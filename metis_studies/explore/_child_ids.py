"""A child named in a workload's answers by its definition, not its id.

A spawned child's id is fresh each run (`<definition>-<8 hex>`), so an answer
that integrates, waits for or messages a child cannot carry it. Such an
answer writes `@@child:NAME@@`; when the answer is served, the marker becomes
the id of the child the run spawned from definition NAME (the most recent),
as a model reads the id off the spawn's result. A workload that uses it runs
in the explorer's harness (in this process or a child process), never as
`metis run`, whose replay knows no markers.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from collections.abc import Callable
from collections.abc import Iterable

import attrs

from metis_runtime.providers import Cassette
from metis_runtime.providers import ModelRequest
from metis_runtime.providers import ReplayProvider
from metis_runtime.providers import StreamEvent

from ._workload import Workload

__all__ = ["CHILD_MARK", "ChildIdReplay", "definition_of", "names_children"]

CHILD_MARK = re.compile(r"@@child:([A-Za-z0-9_.-]+)@@")


def definition_of(agent_id: str) -> str:
    """The definition a child was spawned from (its id is `<definition>-<8 hex>`)."""
    return agent_id.rsplit("-", 1)[0]


def names_children(workload: Workload) -> bool:
    """Whether any answer of the root names a child by its definition."""
    return any(CHILD_MARK.search(str(c.input)) for turn in workload.turns for c in turn.calls)


class ChildIdReplay(ReplayProvider):
    """A `ReplayProvider` that fills in `@@child:NAME@@` from `children()`,
    the ids the run's supervisor has spawned, in spawn order."""

    def __init__(self, cassette: Cassette, children: Callable[[], Iterable[str]]) -> None:
        super().__init__(cassette)
        self._children = children

    def _id(self, match: re.Match[str]) -> str:
        name = match[1]
        ids = [i for i in self._children() if definition_of(i) == name]
        return ids[-1] if ids else match[0]  # none spawned: the marker stays, an unknown id

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        at = self._next
        items = self.cassette.interactions
        if at < len(items) and CHILD_MARK.search(items[at].body):
            filled = attrs.evolve(items[at], body=CHILD_MARK.sub(self._id, items[at].body))
            self.cassette = attrs.evolve(
                self.cassette, interactions=(*items[:at], filled, *items[at + 1 :])
            )
        return super().stream(request)
