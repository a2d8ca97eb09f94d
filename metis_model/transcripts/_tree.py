"""The closure check shared by every transcript format.

Each reader turns its input into a tree of turns: `model` nodes (one assistant
message, holding its calls) and `input` nodes (what the client sent next,
holding results). An API request body is a single path; a Claude Code session
is a real tree (rewinds, compaction threads). The rules, per parent/child pair:

* a call is answered by a result in the node right after its assistant message
  (CLOSE-2 if it is missing and a provider request follows on that path, or the
  path is where the run ended; CLOSE-6 if the request that follows is a
  compaction). Where the format wants results first (Anthropic), a result read
  after another block of its node (`Occ.after`) does not answer its call in the
  provider request that follows: CLOSE-2 at the result, part of that call's
  CLOSE-2 check;
* a result pairs with a call of the assistant message right before it; anything
  else is CLOSE-4 (stray, or moved to a later message), CLOSE-1 (a second result
  for an answered call), or CLOSE-6 (its call sits before a compaction);
* call ids are unique within one assistant message (CLOSE-7).

CLOSE-3 (results in call order) is deliberately not checked: real Claude Code
sessions write parallel results in completion order, and the providers accept
results in any order within the message.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Literal, Protocol

import attrs

from .._report import Violation

NodeKind = Literal["model", "input", "boundary", "opaque"]

_ROLE = {"model": "assistant", "input": "input", "boundary": "compaction", "opaque": "stored"}
CHECKED: tuple[str, ...] = ("CLOSE-1", "CLOSE-2", "CLOSE-4", "CLOSE-7")


@attrs.frozen
class Block:
    """A content block that is not a result, and where it was read."""

    type: str
    line: int | None
    index: int


@attrs.frozen
class Occ:
    """One call or result occurrence: its provider id and where it was read."""

    id: str
    line: int | None
    index: int
    closable: bool = True  # False for server-side calls: the provider answers them itself
    # For a result, in a format that wants results first: the first block of its
    # node that is not a result, when one was read before it.
    after: Block | None = None


@attrs.define
class Node:
    kind: NodeKind
    parent: int | None
    line: int | None
    index: int
    thread: int
    calls: list[Occ] = attrs.Factory(list)
    results: list[Occ] = attrs.Factory(list)

    def describe(self) -> str:
        role = _ROLE[self.kind]
        where = f"line {self.line}" if self.line is not None else f"record {self.index}"
        return f"{role} message at {where}"


class Tree:
    """Nodes in creation order: a parent always precedes its children."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []

    def add(self, kind: NodeKind, parent: int | None, line: int | None, index: int) -> int:
        number = len(self.nodes)
        if parent is not None and not 0 <= parent < number:
            raise ValueError("a parent must be added before its children")
        thread = self.nodes[parent].thread if parent is not None else number
        self.nodes.append(Node(kind, parent, line, index, thread))
        return number


class _Reporter(Protocol):
    def __call__(
        self, inv: str, occ: Occ, message: str, node: Node, *others: Occ | Block
    ) -> None: ...


@attrs.frozen
class _Open:
    call: Occ
    answered: Occ | None


def _where(occ: Occ | Block) -> str:
    return f"line {occ.line}" if occ.line is not None else f"record {occ.index}"


def check_tree(
    tree: Tree,
    *,
    always_requested: bool,
    ends: Mapping[int, str] | None = None,
    compacted: Mapping[int, int] | None = None,
    label: str = "",
) -> tuple[list[Violation], Counter[str]]:
    """Check closure over every root-to-leaf path of `tree`, in linear time.

    `always_requested`: the input is itself a provider request (an API body), so
    every call in it must already be answered. Otherwise a call needs its result
    only where a later provider request follows on the same path, or where the
    path reaches one of `ends` (node -> invariant for calls still open there:
    CLOSE-2 for where a run ended, CLOSE-6 for where a compaction ran).
    `compacted` maps a thread root to the line of the compaction that began it.
    """
    nodes: Sequence[Node] = tree.nodes
    ends = ends or {}
    compacted = compacted or {}
    prefix = f"{label}: " if label else ""
    violations: list[Violation] = []
    checks: Counter[str] = Counter({inv: 0 for inv in CHECKED})
    if compacted or "CLOSE-6" in ends.values():
        checks["CLOSE-6"] += 0

    def report(inv: str, occ: Occ, message: str, node: Node, *others: Occ | Block) -> None:
        indices = sorted({occ.index, *(o.index for o in others)})
        violations.append(
            Violation(inv, occ.index, prefix + message, occ.line, node.describe(), tuple(indices))
        )

    count = len(nodes)
    children: list[list[int]] = [[] for _ in range(count)]
    for number, node in enumerate(nodes):
        if node.parent is not None:
            children[node.parent].append(number)

    # Bottom-up: does a provider request follow at or below a node, and which
    # end of a run (if any) does it lead to with no request in between?
    requested = [always_requested or n.kind == "model" for n in nodes]
    end_kind: list[str | None] = [ends.get(i) for i in range(count)]
    for number in range(count - 1, -1, -1):
        parent = nodes[number].parent
        if parent is not None:
            requested[parent] = requested[parent] or requested[number]
            if end_kind[parent] is None and not requested[number]:
                end_kind[parent] = end_kind[number]

    # Calls issued anywhere, for naming the call a compaction cut off.
    first_call: dict[str, tuple[Occ, int]] = {}
    for node in nodes:
        for call in node.calls:
            first_call.setdefault(call.id, (call, node.thread))

    # The unique, closable calls of each assistant message (CLOSE-7 on the rest).
    expected: dict[int, dict[str, Occ]] = {}
    for number, node in enumerate(nodes):
        if node.kind != "model":
            continue
        mine: dict[str, Occ] = {}
        seen: dict[str, Occ] = {}
        for call in node.calls:
            checks["CLOSE-7"] += 1
            first = seen.get(call.id)
            if first is not None:
                report(
                    "CLOSE-7",
                    call,
                    f"call id {call.id!r} appears twice in one assistant message "
                    f"(first at {_where(first)}): its results cannot be paired",
                    node,
                    first,
                )
                continue
            seen[call.id] = call
            if call.closable:
                mine[call.id] = call
        expected[number] = mine

    def require(parent: int, answered: Mapping[str, Occ], child: int | None) -> None:
        calls = expected.get(parent, {})
        if not calls:
            return
        kind: str | None
        if child is not None and requested[child]:
            kind, after = "CLOSE-2", "a provider request follows"
        elif always_requested:  # a leaf of a request body: the body is the request
            kind, after = "CLOSE-2", "the request ends with it"
        else:
            # No request follows: only where the run ended (or compacted) counts,
            # including when the assistant message itself was written last.
            kind = end_kind[child] if child is not None else None
            kind = kind or ends.get(parent)
            after = "the run ends"
        if kind is None:
            return  # an abandoned branch: nothing was ever sent after it
        if kind == "CLOSE-6":
            after = "a compaction follows"
        for call in calls.values():
            checks[kind] += 1
            result = answered.get(call.id)
            if result is None:
                report(  # the call's own line: that is what lacks its result
                    kind,
                    call,
                    f"call {call.id!r} has no result in the message right after its "
                    f"assistant message, and {after}",
                    nodes[parent],
                    call,
                )
            elif result.after is not None and child is not None and requested[child]:
                block = result.after  # out of place in the request that carries it
                report(  # the result's line: that is what is out of place
                    kind,
                    result,
                    f"result for call {call.id!r} (at {_where(call)}) comes after the "
                    f"{block.type!r} block at {_where(block)} in the message right after "
                    f"its assistant message, and {after}: results must come first there, "
                    "so the call counts as unanswered",
                    nodes[child],
                    call,
                    block,
                )

    # Depth-first over the tree, keeping the calls of the current path (undoable).
    path: dict[str, _Open] = {}
    undo: list[tuple[str, _Open | None]] = []
    stack: list[tuple[int, int]] = [
        (i, -1) for i in range(count - 1, -1, -1) if nodes[i].parent is None
    ]
    while stack:
        number, mark = stack.pop()
        if mark >= 0:  # leaving the node: restore the path as it was before it
            while len(undo) > mark:
                key, old = undo.pop()
                if old is None:
                    del path[key]
                else:
                    path[key] = old
            continue
        stack.append((number, len(undo)))
        node = nodes[number]
        parent = node.parent
        pairs = expected.get(parent, {}) if parent is not None else {}
        opaque = parent is not None and nodes[parent].kind == "opaque"
        answered: dict[str, Occ] = {}
        if node.thread in compacted:
            checks["CLOSE-6"] += len(node.results)
        for result in node.results:
            checks["CLOSE-1"] += 1
            checks["CLOSE-4"] += 1
            first = answered.get(result.id)
            if first is not None:
                report(
                    "CLOSE-1",
                    result,
                    f"second result for call {result.id!r} in one message "
                    f"(first at {_where(first)})",
                    node,
                    first,
                )
                continue
            if node.kind != "model" and (result.id in pairs or opaque):
                answered[result.id] = result
                undo.append((result.id, path.get(result.id)))
                call = pairs.get(result.id, result)
                path[result.id] = _Open(call, result)
                continue
            _unmatched(result, node, path, first_call, compacted, report)
        if parent is not None and nodes[parent].kind == "model":
            require(parent, answered, number)
        if node.kind == "model":
            if not children[number]:
                require(number, {}, None)
            for call in expected[number].values():
                undo.append((call.id, path.get(call.id)))
                path[call.id] = _Open(call, None)
        for child in reversed(children[number]):
            stack.append((child, -1))

    violations.sort(key=lambda v: (v.line if v.line is not None else v.index, v.invariant))
    return violations, checks


def _unmatched(
    result: Occ,
    node: Node,
    path: Mapping[str, _Open],
    first_call: Mapping[str, tuple[Occ, int]],
    compacted: Mapping[int, int],
    report: _Reporter,
) -> None:
    """Name why a result pairs with no call of the assistant message before it."""
    earlier = path.get(result.id)
    if earlier is not None and earlier.answered is not None:
        report(
            "CLOSE-1",
            result,
            f"second result for call {result.id!r} (call at {_where(earlier.call)}, "
            f"already answered at {_where(earlier.answered)})",
            node,
            earlier.call,
            earlier.answered,
        )
        return
    if earlier is not None:
        report(
            "CLOSE-4",
            result,
            f"result for call {result.id!r} is not in the message right after its call "
            f"(at {_where(earlier.call)}): moved to a later message",
            node,
            earlier.call,
        )
        return
    boundary = compacted.get(node.thread)
    issued = first_call.get(result.id)
    if boundary is not None and issued is not None and issued[1] != node.thread:
        report(
            "CLOSE-6",
            result,
            f"result for call {result.id!r} comes after the compaction at line {boundary}, "
            f"which separated it from its call (at {_where(issued[0])})",
            node,
            issued[0],
        )
        return
    if node.kind == "model":
        message = f"result for {result.id!r} sits in an assistant message, which holds no results"
    else:
        message = f"result for {result.id!r} matches no call of the assistant message before it"
    report("CLOSE-4", result, message, node)
