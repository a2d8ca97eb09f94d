"""Context control over an abstract transcript: the ladder's cut rules.

A transcript is a tuple of messages; a message holds abstract blocks (text,
thinking, image, call, result) with a size in abstract tokens. Calls carry
the provider id (which may repeat, within a message and across turns) and
their occurrence name; a result carries only the provider id, as on the wire.

`provider_valid` is what every provider needs (specs/loop.md, CLOSE-8):

1. the transcript is not empty and starts with a user message; roles alternate;
2. no message is empty; a user message holds no call or thinking, an
   assistant message no result;
3. the results of a user message come before its other blocks;
4. the calls of an assistant message are answered in the very next message,
   which is a user message, and that message's results answer exactly those
   calls: the same multiset of ids (so a repeated id needs as many results);
   the k-th result with id x answers the k-th call with id x.

Each step is a pure function `Transcript -> StepOutcome`; on a valid
transcript each returns a valid one (property tests, and a bounded proof in
`metis_proofs/_context.py`). The cut rule of `collapse`, `compaction` and
`retry`: cut only right before an assistant message, so every call and its
results end up on the same side. `naive_cut` and `prune_no_placeholder` are
ablations that break the rule.
"""

from __future__ import annotations

from collections import Counter
from collections import defaultdict
from collections.abc import Callable
from collections.abc import Sequence
from enum import StrEnum
from typing import Literal
from typing import Protocol as _Protocol

import attrs

__all__ = [
    "STEPS",
    "Block",
    "BlockKind",
    "Budget",
    "Msg",
    "StepOutcome",
    "Transcript",
    "collapse",
    "compaction",
    "cut_points",
    "estimate",
    "from_shapes",
    "ladder",
    "naive_cut",
    "offload",
    "pairing",
    "provider_valid",
    "prune",
    "prune_no_placeholder",
    "retry",
    "snip",
    "transcript_problem",
]

STEPS: tuple[str, ...] = ("prune", "snip", "offload", "collapse", "compaction", "retry")


class BlockKind(StrEnum):
    TEXT = "text"
    THINKING = "thinking"
    IMAGE = "image"
    CALL = "call"
    RESULT = "result"


@attrs.frozen
class Block:
    kind: BlockKind
    size: int = 1
    id: str = ""  # call and result: the provider's id
    occ: str = ""  # call: its occurrence name
    offloaded: bool = False  # result: the content lives in a file, a reference stays


Role = Literal["user", "assistant"]


@attrs.frozen
class Msg:
    role: Role
    blocks: tuple[Block, ...]


Transcript = tuple[Msg, ...]


def _calls(m: Msg) -> list[Block]:
    return [b for b in m.blocks if b.kind is BlockKind.CALL]


def _results(m: Msg) -> list[Block]:
    return [b for b in m.blocks if b.kind is BlockKind.RESULT]


def provider_valid(t: Sequence[Msg]) -> str | None:
    """The first way `t` breaks provider validity, or None when it is valid."""
    if not t:
        return "empty transcript"
    if t[0].role != "user":
        return "message 0: the first message is not a user message"
    for i, m in enumerate(t):
        if i and m.role == t[i - 1].role:
            return f"message {i}: two {m.role} messages in a row"
        if not m.blocks:
            return f"message {i}: empty"
        kinds = [b.kind for b in m.blocks]
        if m.role == "user" and (BlockKind.CALL in kinds or BlockKind.THINKING in kinds):
            return f"message {i}: a user message holds a call or thinking"
        if m.role == "assistant" and BlockKind.RESULT in kinds:
            return f"message {i}: an assistant message holds a result"
        n_results = kinds.count(BlockKind.RESULT)
        if any(k is not BlockKind.RESULT for k in kinds[:n_results]):
            return f"message {i}: results do not come first"
        calls = Counter(b.id for b in _calls(m)) if m.role == "assistant" else Counter[str]()
        answered_by = t[i + 1] if i + 1 < len(t) else None
        if calls and answered_by is None:
            return f"message {i}: calls {sorted(calls)} have no results"
        if m.role == "user":
            asked = Counter(b.id for b in _calls(t[i - 1])) if i else Counter[str]()
            got = Counter(b.id for b in _results(m))
            if got != asked:
                got_ids, asked_ids = sorted(got.elements()), sorted(asked.elements())
                return f"message {i}: results {got_ids} answer calls {asked_ids}"
    return None


def pairing(t: Sequence[Msg]) -> dict[tuple[int, int], str]:
    """(message, block) of each result -> the occ of the call it answers."""
    out: dict[tuple[int, int], str] = {}
    for i, m in enumerate(t):
        if m.role != "user" or i == 0:
            continue
        pending: defaultdict[str, list[str]] = defaultdict(list)
        for c in _calls(t[i - 1]):
            pending[c.id].append(c.occ)
        for j, b in enumerate(m.blocks):
            if b.kind is BlockKind.RESULT and pending[b.id]:
                out[(i, j)] = pending[b.id].pop(0)
    return out


@attrs.frozen
class StepOutcome:
    """A step's result: the new transcript and the occurrences it removed.

    `taken` is False when the step found nothing to do (no event is recorded).
    `results_removed` names each removed result by the occ it answered; a
    result that answered nothing is named `?<id>`.
    """

    step: str
    transcript: Transcript
    taken: bool
    calls_removed: tuple[str, ...] = ()
    results_removed: tuple[str, ...] = ()


def _unchanged(step: str, t: Transcript) -> StepOutcome:
    return StepOutcome(step, t, False)


_PLACEHOLDER = Block(BlockKind.TEXT, 1)


def _old(t: Transcript, recent: int) -> int:
    """Messages before this index are old; the last `recent` are left alone."""
    return max(0, len(t) - max(recent, 0))


def prune(t: Transcript, recent: int = 2) -> StepOutcome:
    """Drop thinking and image blocks from old messages; a message left with
    nothing gets a short placeholder text, never emptied."""
    return _prune(t, recent, placeholder=True)


def prune_no_placeholder(t: Transcript, recent: int = 2) -> StepOutcome:
    """Ablation: prune that may leave a message empty."""
    return _prune(t, recent, placeholder=False)


def _prune(t: Transcript, recent: int, placeholder: bool) -> StepOutcome:
    cut = _old(t, recent)
    out: list[Msg] = []
    changed = False
    for i, m in enumerate(t):
        if i >= cut:
            out.append(m)
            continue
        kept = tuple(b for b in m.blocks if b.kind not in (BlockKind.THINKING, BlockKind.IMAGE))
        if len(kept) != len(m.blocks):
            changed = True
            if not kept and placeholder:
                kept = (_PLACEHOLDER,)
        out.append(Msg(m.role, kept))
    return StepOutcome("prune", tuple(out), changed) if changed else _unchanged("prune", t)


def snip(t: Transcript, limit: int = 50, recent: int = 2) -> StepOutcome:
    """Truncate results of old messages to `limit`; a result is never removed."""
    cut = _old(t, recent)
    changed = False
    out: list[Msg] = []
    for i, m in enumerate(t):
        blocks = m.blocks
        if i < cut and any(b.kind is BlockKind.RESULT and b.size > limit for b in blocks):
            changed = True
            blocks = tuple(
                attrs.evolve(b, size=limit) if b.kind is BlockKind.RESULT and b.size > limit else b
                for b in blocks
            )
        out.append(Msg(m.role, blocks))
    return StepOutcome("snip", tuple(out), changed) if changed else _unchanged("snip", t)


def offload(t: Transcript, threshold: int = 100, ref_size: int = 5) -> StepOutcome:
    """Replace every result larger than `threshold` by a reference to a file."""
    changed = False
    out: list[Msg] = []
    for m in t:
        blocks = m.blocks
        if any(b.kind is BlockKind.RESULT and b.size > threshold for b in blocks):
            changed = True
            blocks = tuple(
                attrs.evolve(b, size=ref_size, offloaded=True)
                if b.kind is BlockKind.RESULT and b.size > threshold
                else b
                for b in blocks
            )
        out.append(Msg(m.role, blocks))
    return StepOutcome("offload", tuple(out), changed) if changed else _unchanged("offload", t)


def cut_points(t: Sequence[Msg]) -> tuple[int, ...]:
    """Where a fold may cut: right before an assistant message (index >= 1).

    Calls and their results are in adjacent (assistant, user) messages, so
    such a cut never separates them.
    """
    return tuple(k for k in range(1, len(t)) if t[k].role == "assistant")


def _fold(step: str, t: Transcript, k: int, summary_size: int) -> StepOutcome:
    """Replace t[:k] by one user summary message."""
    removed_calls = tuple(b.occ for m in t[:k] for b in _calls(m))
    paired = pairing(t)
    removed_results = tuple(
        paired.get((i, j), f"?{b.id}")
        for i, m in enumerate(t[:k])
        for j, b in enumerate(m.blocks)
        if b.kind is BlockKind.RESULT
    )
    summary = Msg("user", (Block(BlockKind.TEXT, summary_size),))
    return StepOutcome(step, (summary, *t[k:]), True, removed_calls, removed_results)


def _fold_keeping(step: str, t: Transcript, recent: int, summary_size: int) -> StepOutcome:
    # k > 1: a fold that removes no turn (only the first message) is pointless.
    points = [k for k in cut_points(t) if k > 1 and len(t) - k >= max(recent, 1)]
    if not points:
        return _unchanged(step, t)
    return _fold(step, t, points[-1], summary_size)


def collapse(t: Transcript, recent: int = 4, summary_size: int = 20) -> StepOutcome:
    """Fold old turns into one mechanical digest, keeping at least `recent`
    trailing messages; cut only at a `cut_points` index."""
    return _fold_keeping("collapse", t, recent, summary_size)


def compaction(t: Transcript, recent: int = 2, summary_size: int = 40) -> StepOutcome:
    """Like `collapse`, with a summary written by the provider (a size here)."""
    return _fold_keeping("compaction", t, recent, summary_size)


def retry(t: Transcript, summary_size: int = 40) -> StepOutcome:
    """After a provider overflow: fold at the last cut point there is."""
    return _fold_keeping("retry", t, 1, summary_size)


def naive_cut(t: Transcript, k: int, summary_size: int = 20) -> StepOutcome:
    """Ablation: fold t[:k] wherever k falls (what the cut rule forbids).

    Roles still alternate (a kept user message absorbs the summary after its
    own blocks), so what breaks is only the pairing of calls and results.
    """
    if not 1 <= k < len(t):
        return _unchanged("collapse", t)
    folded = _fold("collapse", t, k, summary_size)
    if t[k].role == "assistant":
        return folded
    summary, first, *rest = folded.transcript
    merged = Msg("user", (*first.blocks, *summary.blocks))
    return attrs.evolve(folded, transcript=(merged, *rest))


# --- the ladder ------------------------------------------------------------------


def estimate(t: Sequence[Msg]) -> int:
    """Abstract tokens: block sizes plus 1 per message for its framing."""
    return sum(1 + sum(b.size for b in m.blocks) for m in t)


@attrs.frozen
class Budget:
    """Each step runs when the estimate, after the steps before it, exceeds
    its trigger (0 disables nothing: every transcript exceeds 0)."""

    prune_at: int = 500
    snip_at: int = 600
    offload_at: int = 700
    collapse_at: int = 800
    compaction_at: int = 900
    recent: int = 2
    snip_limit: int = 50
    offload_threshold: int = 100


def ladder(t: Transcript, budget: Budget) -> tuple[Transcript, tuple[StepOutcome, ...]]:
    """The escalating ladder: prune, snip, offload, collapse, compaction."""
    taken: list[StepOutcome] = []
    plan: tuple[tuple[int, Callable[[Transcript], StepOutcome]], ...] = (
        (budget.prune_at, lambda x: prune(x, budget.recent)),
        (budget.snip_at, lambda x: snip(x, budget.snip_limit, budget.recent)),
        (budget.offload_at, lambda x: offload(x, budget.offload_threshold)),
        (budget.collapse_at, lambda x: collapse(x, budget.recent * 2)),
        (budget.compaction_at, lambda x: compaction(x, budget.recent)),
    )
    for trigger, run in plan:
        if estimate(t) <= trigger:
            continue
        outcome = run(t)
        if outcome.taken:
            taken.append(outcome)
            t = outcome.transcript
    return t, tuple(taken)


# --- a transcript as the trace records it (CLOSE-8) -------------------------

_TOKENS = {"text": BlockKind.TEXT, "thinking": BlockKind.THINKING, "image": BlockKind.IMAGE}


class _Shaped(_Protocol):
    @property
    def role(self) -> Role: ...
    @property
    def blocks(self) -> tuple[str, ...]: ...


def from_shapes(messages: Sequence[_Shaped]) -> Transcript:
    """The transcript a trace's `compaction` event records (`MessageShape`s:
    blocks `text`, `thinking`, `image`, `call:<id>`, `result:<id>`)."""
    out = []
    for m in messages:
        blocks = []
        for token in m.blocks:
            kind, _, ident = token.partition(":")
            if kind == "call":
                blocks.append(Block(BlockKind.CALL, id=ident))
            elif kind == "result":
                blocks.append(Block(BlockKind.RESULT, id=ident))
            else:
                blocks.append(Block(_TOKENS.get(token, BlockKind.TEXT)))
        out.append(Msg(m.role, tuple(blocks)))
    return tuple(out)


def transcript_problem(messages: Sequence[_Shaped]) -> str | None:
    """How a recorded transcript breaks provider validity, or None."""
    return provider_valid(from_shapes(messages))
