"""Context control over abstract transcripts (specs/loop.md, CLOSE-8)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from metis_model import _context
from metis_model._context import STEPS
from metis_model._context import Block
from metis_model._context import BlockKind
from metis_model._context import Budget
from metis_model._context import Msg
from metis_model._context import StepOutcome
from metis_model._context import Transcript
from metis_model._context import collapse
from metis_model._context import compaction
from metis_model._context import cut_points
from metis_model._context import estimate
from metis_model._context import ladder
from metis_model._context import naive_cut
from metis_model._context import offload
from metis_model._context import provider_valid
from metis_model._context import prune
from metis_model._context import prune_no_placeholder
from metis_model._context import retry
from metis_model._context import snip

T, TH, IMG, CALL, RES = (
    BlockKind.TEXT,
    BlockKind.THINKING,
    BlockKind.IMAGE,
    BlockKind.CALL,
    BlockKind.RESULT,
)


def test_all_lists_the_public_names() -> None:
    public = {n for n, v in vars(_context).items() if not n.startswith("_")}
    imported = {"annotations", "Counter", "defaultdict", "Callable", "Sequence", "StrEnum"}
    imported |= {"Literal", "attrs", "Role"}
    assert set(_context.__all__) == public - imported


# --- random valid transcripts: parallel calls, repeated ids ------------------------


@st.composite
def transcripts(draw: st.DrawFn, max_turns: int = 6) -> Transcript:
    """A user task, then turns: an assistant message (thinking, text, 0-3 calls
    whose ids come from a pool of 3, so they repeat within a message and
    across turns) and the next user message (the results, in any order, then
    maybe text or an image; or new user text when there were no calls)."""
    msgs: list[Msg] = [Msg("user", (Block(T, draw(st.integers(1, 30))),))]
    for turn in range(1, draw(st.integers(0, max_turns)) + 1):
        blocks: list[Block] = []
        if draw(st.booleans()):
            blocks.append(Block(TH, draw(st.integers(1, 40))))
        if draw(st.booleans()):
            blocks.append(Block(T, draw(st.integers(1, 20))))
        ids = draw(st.lists(st.sampled_from(["a", "b", "c"]), max_size=3))
        blocks += [Block(CALL, 2, id=i, occ=f"{turn}.{k}") for k, i in enumerate(ids)]
        if not blocks:
            blocks.append(Block(T, 1))
        msgs.append(Msg("assistant", tuple(blocks)))
        if not ids and not draw(st.booleans()):
            break  # the run ends on an answer
        results = [Block(RES, draw(st.integers(1, 300)), id=i) for i in ids]
        results = draw(st.permutations(results))
        extra = draw(st.lists(st.sampled_from([Block(T, 3), Block(IMG, 50)]), max_size=1))
        user = (*results, *extra) if results or extra else (Block(T, 4),)
        msgs.append(Msg("user", tuple(user)))
    return tuple(msgs)


@given(transcripts())
def test_generated_transcripts_are_valid(t: Transcript) -> None:
    assert provider_valid(t) is None, provider_valid(t)


Step = Callable[[Transcript], StepOutcome]
STEP_FUNCTIONS: dict[str, Step] = {
    "prune": lambda t: prune(t, 1),
    "snip": lambda t: snip(t, 10, 1),
    "offload": lambda t: offload(t, 50),
    "collapse": lambda t: collapse(t, 2),
    "compaction": lambda t: compaction(t, 1),
    "retry": retry,
}


def test_every_step_of_the_ladder_is_modelled() -> None:
    assert tuple(STEP_FUNCTIONS) == STEPS


@pytest.mark.parametrize("name", STEPS)
@given(t=transcripts())
def test_close8_every_step_keeps_a_valid_transcript_valid(name: str, t: Transcript) -> None:
    out = STEP_FUNCTIONS[name](t)
    assert out.step == name
    assert provider_valid(out.transcript) is None, (provider_valid(out.transcript), t)
    # A fold removes calls together with their results: CLOSE-6 holds for its event.
    assert sorted(out.calls_removed) == sorted(out.results_removed)
    assert estimate(out.transcript) <= estimate(t) or name in ("collapse", "compaction", "retry")
    if not out.taken:
        assert out.transcript == t


@given(transcripts(), st.integers(1, 20))
def test_close8_every_cut_point_is_safe_and_every_other_cut_is_not(t: Transcript, k: int) -> None:
    if k >= len(t):
        return
    out = naive_cut(t, k)
    if k in cut_points(t):
        assert provider_valid(out.transcript) is None
    elif t[k].role == "user" and any(b.kind is RES for b in t[k].blocks):
        # Cutting before a user message with results orphans them.
        assert provider_valid(out.transcript) is not None
        assert set(out.calls_removed) != set(out.results_removed) or not out.results_removed


def test_naive_cut_orphans_a_result_and_splits_the_occurrences() -> None:
    t = (
        Msg("user", (Block(T),)),
        Msg("assistant", (Block(CALL, id="x", occ="1.0"), Block(CALL, id="x", occ="1.1"))),
        Msg("user", (Block(RES, id="x"), Block(RES, id="x"))),
        Msg("assistant", (Block(T),)),
    )
    bad = naive_cut(t, 2)
    assert bad.calls_removed == ("1.0", "1.1") and bad.results_removed == ()
    assert "results ['x', 'x'] answer calls []" in (provider_valid(bad.transcript) or "")
    good = collapse(t, recent=1)
    assert provider_valid(good.transcript) is None
    assert good.calls_removed == good.results_removed == ("1.0", "1.1")


def test_prune_without_a_placeholder_can_leave_an_empty_message() -> None:
    t = (Msg("user", (Block(T),)), Msg("assistant", (Block(TH, 30),)), Msg("user", (Block(T),)))
    assert provider_valid(prune_no_placeholder(t, 1).transcript) == "message 1: empty"
    assert provider_valid(prune(t, 1).transcript) is None


# --- provider_valid by hand ------------------------------------------------------


def _call(i: str, occ: str = "") -> Block:
    return Block(CALL, id=i, occ=occ)


def _res(i: str) -> Block:
    return Block(RES, id=i)


U0 = Msg("user", (Block(T),))


@pytest.mark.parametrize(
    ("t", "problem"),
    [
        ((), "empty transcript"),
        ((Msg("assistant", (Block(T),)),), "first message is not a user message"),
        ((U0, U0), "two user messages in a row"),
        ((U0, Msg("assistant", ())), "empty"),
        ((U0, Msg("assistant", (_call("a"),))), "have no results"),
        (
            (U0, Msg("assistant", (_call("a"),)), Msg("user", (Block(T), _res("a")))),
            "results do not come first",
        ),
        (
            (U0, Msg("assistant", (_call("a"), _call("a"))), Msg("user", (_res("a"),))),
            "answer calls",
        ),
        ((U0, Msg("assistant", (_call("a"),)), Msg("user", (_res("b"),))), "answer calls"),
        ((Msg("user", (_res("a"),)),), "answer calls []"),
        ((U0, Msg("assistant", (_res("a"),))), "assistant message holds a result"),
        ((Msg("user", (_call("a"),)),), "user message holds a call"),
    ],
)
def test_provider_valid_names_the_problem(t: Transcript, problem: str) -> None:
    got = provider_valid(t)
    assert got is not None and problem in got


def test_repeated_ids_across_turns_and_within_a_message_are_valid() -> None:
    t = (
        U0,
        Msg("assistant", (_call("a", "1.0"), _call("a", "1.1"))),
        Msg("user", (_res("a"), _res("a"))),
        Msg("assistant", (_call("a", "2.0"),)),
        Msg("user", (_res("a"),)),
    )
    assert provider_valid(t) is None
    out = collapse(t, recent=2)
    assert out.calls_removed == out.results_removed == ("1.0", "1.1")


# --- the ladder ------------------------------------------------------------------


@given(transcripts(max_turns=10), st.integers(0, 1500), st.integers(0, 3))
def test_close8_the_ladder_escalates_in_order_and_keeps_validity(
    t: Transcript, base: int, recent: int
) -> None:
    budget = Budget(base, base + 50, base + 100, base + 150, base + 200, recent=recent)
    out, steps = ladder(t, budget)
    assert provider_valid(out) is None
    names = [s.step for s in steps]
    assert names == [n for n in STEPS if n in names]  # ladder order
    if estimate(t) <= base:
        assert steps == () and out == t


def test_the_ladder_stops_as_soon_as_the_budget_holds() -> None:
    t = (
        U0,
        Msg("assistant", (Block(TH, 400), _call("a", "1.0"))),
        Msg("user", (_res("a"),)),
        Msg("assistant", (Block(T),)),
        Msg("user", (Block(T),)),
    )
    out, steps = ladder(t, Budget(prune_at=100, snip_at=100, recent=2))
    assert [s.step for s in steps] == ["prune"]
    assert estimate(out) <= 100
