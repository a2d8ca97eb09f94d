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
  CLOSE-2 check. Where a log (not a request) simply ends on an open call, the
  run may still be going: that check is undecided (`open-at-end`), not held and
  not broken;
* a result pairs with a call of the assistant message right before it; anything
  else is CLOSE-4 (stray, or moved to a later message), CLOSE-1 (a second result
  for an answered call), or CLOSE-6 (its call sits before a compaction). Where
  a thread starts from a record whose parent is not in the input (a slice), a
  result before any call of that thread whose id no call in the input has
  answers a call in an earlier part of the session (`outside-slice`);
* call ids are unique within one assistant message (CLOSE-7) and, where the
  provider requires it, along the whole path that is sent (CLOSE-9);
* a server-side tool's result (Anthropic's `web_search_tool_result`, ...) pairs
  with a server call earlier on the path, once (CLOSE-4, CLOSE-1); a server call
  needs no client result.

Each finding names the provider rule it breaks (`FormatRules`, `_rules.py`).

CLOSE-3 (results in call order) is deliberately not checked: real Claude Code
sessions write parallel results in completion order, and the providers accept
results in any order within the message.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import Literal
from typing import Protocol

import attrs

from .._report import Note
from .._report import Status
from .._report import Undecided
from .._report import Violation
from ._rules import FormatRules

NodeKind = Literal["model", "input", "boundary", "opaque"]
# What the calls still open where a path ends amount to: CLOSE-2 where the run
# ended, CLOSE-6 where a compaction ran, `open-at-end` where a log stops.
EndKind = Literal["CLOSE-2", "CLOSE-6", "open-at-end"]

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
    sent: bool = False  # part of a provider request as it was sent (an API body)
    calls: list[Occ] = attrs.Factory(list)
    results: list[Occ] = attrs.Factory(list)
    # Server-side tools, in the order read: (True, call) or (False, its result).
    server: list[tuple[bool, Occ]] = attrs.Factory(list)

    def describe(self) -> str:
        role = _ROLE[self.kind]
        where = f"line {self.line}" if self.line is not None else f"record {self.index}"
        return f"{role} message at {where}"

    def server_call(self, occ: Occ) -> None:
        """A call the provider runs itself: unique like any call, needs no client result."""
        call = attrs.evolve(occ, closable=False)
        self.calls.append(call)
        self.server.append((True, call))

    def server_result(self, occ: Occ) -> None:
        self.server.append((False, occ))


class Tree:
    """Nodes in creation order: a parent always precedes its children."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []

    def add(
        self,
        kind: NodeKind,
        parent: int | None,
        line: int | None,
        index: int,
        *,
        sent: bool = False,
    ) -> int:
        number = len(self.nodes)
        if parent is not None and not 0 <= parent < number:
            raise ValueError("a parent must be added before its children")
        thread = self.nodes[parent].thread if parent is not None else number
        self.nodes.append(Node(kind, parent, line, index, thread, sent))
        return number

    def last(self) -> int | None:
        return len(self.nodes) - 1 if self.nodes else None


NO_RULES = FormatRules()


@attrs.define
class Parsed:
    """A transcript read into a tree, with what the check needs besides.

    `records`: how many records of the format were read (0 means the input is
    not of this format at all); `violations`: what the reader found on its own
    (id rules); `notes`: warnings (split lines, types not known to the check).
    """

    tree: Tree
    records: int
    kinds: Counter[str]
    ends: dict[int, EndKind] = attrs.Factory(dict)
    compacted: dict[int, int] = attrs.Factory(dict)
    violations: list[Violation] = attrs.Factory(list)
    notes: list[Note] = attrs.Factory(list)
    # Thread roots read from a record whose parent is not in the input: there the
    # input is a slice of a longer session.
    slice_roots: set[int] = attrs.Factory(set)


@attrs.frozen
class Outcome:
    """What `check_tree` found: violations, undecided checks, and check counts."""

    violations: list[Violation]
    undecided: list[Undecided]
    checks: Counter[str]


class _Reporter(Protocol):
    def __call__(
        self, inv: str, occ: Occ, message: str, node: Node, *others: Occ | Block, rule: str = ""
    ) -> None: ...


@attrs.frozen
class _Open:
    call: Occ
    answered: Occ | None


def _where(occ: Occ | Block) -> str:
    return f"line {occ.line}" if occ.line is not None else f"record {occ.index}"


class _Path:
    """The calls of the path being walked, with an undo log for backtracking."""

    def __init__(self) -> None:
        self.open: dict[str, _Open] = {}  # client calls
        self.server: dict[str, _Open] = {}  # server-side calls
        self.issued: dict[str, tuple[Occ, int]] = {}  # every call id sent, and its node
        self._undo: list[tuple[dict[str, Any], str, Any]] = []

    def mark(self) -> int:
        return len(self._undo)

    def set(self, table: dict[str, Any], key: str, value: Any) -> None:
        self._undo.append((table, key, table.get(key)))
        table[key] = value

    def restore(self, mark: int) -> None:
        while len(self._undo) > mark:
            table, key, old = self._undo.pop()
            if old is None:
                del table[key]
            else:
                table[key] = old


def check_tree(
    tree: Tree,
    *,
    ends: Mapping[int, EndKind] | None = None,
    compacted: Mapping[int, int] | None = None,
    label: str = "",
    rules: FormatRules = NO_RULES,
    slice_roots: Collection[int] = (),
) -> Outcome:
    """Check closure over every root-to-leaf path of `tree`, in linear time.

    A node that was `sent` is part of a provider request (an API body), so every
    call before it must already be answered. Otherwise a call needs its result
    only where a later provider request follows on the same path, or where the
    path reaches one of `ends` (node -> what calls still open there amount to).
    `compacted` maps a thread root to the line of the compaction that began it.
    `rules` names the provider rule of each finding; `slice_roots` are the
    threads that start in the middle of a session (their first results may
    answer calls outside the input).
    """
    nodes: Sequence[Node] = tree.nodes
    ends = ends or {}
    compacted = compacted or {}
    prefix = f"{label}: " if label else ""
    violations: list[Violation] = []
    undecided: list[Undecided] = []
    checks: Counter[str] = Counter({inv: 0 for inv in CHECKED})
    if compacted or "CLOSE-6" in ends.values():
        checks["CLOSE-6"] += 0
    if rules.reused_ids:
        checks["CLOSE-9"] += 0

    def report(
        inv: str, occ: Occ, message: str, node: Node, *others: Occ | Block, rule: str = ""
    ) -> None:
        indices = sorted({occ.index, *(o.index for o in others)})
        violations.append(
            Violation(
                inv, occ.index, prefix + message, occ.line, node.describe(), tuple(indices), rule
            )
        )

    def undecide(status: Status, inv: str, occ: Occ, message: str) -> None:
        undecided.append(Undecided(status, inv, occ.index, prefix + message, occ.line))

    count = len(nodes)
    children: list[list[int]] = [[] for _ in range(count)]
    for number, node in enumerate(nodes):
        if node.parent is not None:
            children[node.parent].append(number)

    # Bottom-up: does a provider request follow at or below a node, and which
    # end of a run (if any) does it lead to with no request in between?
    requested = [n.sent or n.kind == "model" for n in nodes]
    end_kind: list[EndKind | None] = [ends.get(i) for i in range(count)]
    for number in range(count - 1, -1, -1):
        parent = nodes[number].parent
        if parent is not None:
            requested[parent] = requested[parent] or requested[number]
            if end_kind[parent] is None and not requested[number]:
                end_kind[parent] = end_kind[number]
    # Top-down: is there an assistant message above a node on its path?
    model_above = [False] * count
    for number, node in enumerate(nodes):
        if node.parent is not None:
            up = nodes[node.parent]
            model_above[number] = up.kind == "model" or model_above[node.parent]

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
                    rule=rules.within_message,
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
        kind: EndKind | None
        if child is not None and requested[child]:
            kind, after = "CLOSE-2", "a provider request follows"
        elif ends.get(parent) == "CLOSE-6":
            kind, after = "CLOSE-6", "a compaction follows"
        elif nodes[parent].sent:  # a leaf of a request body: the body is the request
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
            checks["CLOSE-6" if kind == "CLOSE-6" else "CLOSE-2"] += 1
            result = answered.get(call.id)
            if result is None and kind == "open-at-end":
                undecide(
                    "open-at-end",
                    "CLOSE-2",
                    call,
                    f"call {call.id!r} is still open where the input ends: the run may be "
                    "live or cut; nothing after it was sent",
                )
            elif result is None:
                report(  # the call's own line: that is what lacks its result
                    kind,
                    call,
                    f"call {call.id!r} has no result in the message right after its "
                    f"assistant message, and {after}",
                    nodes[parent],
                    call,
                    rule=rules.compaction if kind == "CLOSE-6" else rules.unanswered,
                )
            elif (
                rules.results_first  # a format (or reading) that wants results first
                and result.after is not None
                and child is not None
                and requested[child]
            ):
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
                    rule=rules.results_first,
                )

    def pair_server(node: Node, path: _Path) -> None:
        for is_call, occ in node.server:
            if is_call:
                path.set(path.server, occ.id, _Open(occ, None))
                continue
            checks["CLOSE-4"] += 1
            known = path.server.get(occ.id)
            if known is None:
                report(
                    "CLOSE-4",
                    occ,
                    f"server tool result for {occ.id!r} has no server tool call before it",
                    node,
                    rule=rules.server_stray,
                )
            elif known.answered is not None:
                report(
                    "CLOSE-1",
                    occ,
                    f"second server tool result for {occ.id!r} (first at {_where(known.answered)})",
                    node,
                    known.call,
                    known.answered,
                    rule=rules.server_stray,
                )
            else:
                path.set(path.server, occ.id, _Open(known.call, occ))

    def issue(number: int, node: Node, path: _Path) -> None:
        """Register a message's calls on the path; a reused id is CLOSE-9 where it counts."""
        for call in node.calls:
            earlier = path.issued.get(call.id)
            if earlier is None:
                path.set(path.issued, call.id, (call, number))
            if not rules.reused_ids or (earlier is not None and earlier[1] == number):
                continue  # not a rule of this provider, or twice in one message (CLOSE-7)
            checks["CLOSE-9"] += 1
            if earlier is not None:
                report(
                    "CLOSE-9",
                    call,
                    f"call id {call.id!r} was already used by the call at "
                    f"{_where(earlier[0])}, in an earlier message of the same request: "
                    "the provider rejects a reused id",
                    node,
                    earlier[0],
                    rule=rules.reused_ids,
                )

    # Depth-first over the tree, keeping the calls of the current path (undoable).
    path = _Path()
    stack: list[tuple[int, int]] = [
        (i, -1) for i in range(count - 1, -1, -1) if nodes[i].parent is None
    ]
    while stack:
        number, mark = stack.pop()
        if mark >= 0:  # leaving the node: restore the path as it was before it
            path.restore(mark)
            continue
        stack.append((number, path.mark()))
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
                    rule=rules.second,
                )
                continue
            if node.kind != "model" and (result.id in pairs or opaque):
                answered[result.id] = result
                call = pairs.get(result.id, result)
                path.set(path.open, result.id, _Open(call, result))
                continue
            if (
                node.thread in slice_roots
                and node.kind != "model"
                and not model_above[number]
                and result.id not in first_call
            ):
                undecide(
                    "outside-slice",
                    "CLOSE-4",
                    result,
                    f"result for {result.id!r} comes before any call in the input and no "
                    "call in it has that id: it answers a call in an earlier part of the "
                    "session",
                )
                continue
            _unmatched(result, node, path.open, first_call, compacted, report, rules)
        if parent is not None and nodes[parent].kind == "model":
            require(parent, answered, number)
        pair_server(node, path)
        if node.kind == "model":
            issue(number, node, path)
            if not children[number]:
                require(number, {}, None)
            for call in expected[number].values():
                path.set(path.open, call.id, _Open(call, None))
        for child in reversed(children[number]):
            stack.append((child, -1))

    violations.sort(key=lambda v: (v.line if v.line is not None else v.index, v.invariant))
    undecided.sort(key=lambda u: (u.line if u.line is not None else u.index, u.status))
    return Outcome(violations, undecided, checks)


def _unmatched(
    result: Occ,
    node: Node,
    path: Mapping[str, _Open],
    first_call: Mapping[str, tuple[Occ, int]],
    compacted: Mapping[int, int],
    report: _Reporter,
    rules: FormatRules,
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
            rule=rules.second,
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
            rule=rules.stray,
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
            rule=rules.compaction,
        )
        return
    if node.kind == "model":
        message = f"result for {result.id!r} sits in an assistant message, which holds no results"
    else:
        message = f"result for {result.id!r} matches no call of the assistant message before it"
    report("CLOSE-4", result, message, node, rule=rules.stray)
