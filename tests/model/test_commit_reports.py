"""RETRY-2's commit reports: every result of a call the trace shows committed
carries that commit (its outcome, the digest of its output), a resumed one
too; "not journaled" only where the trace does not prove the journal holds
the output; a repair never stubs a committed call. Both checkers (the fast
replay and the specification's `step`) agree."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_check import check_trace
from metis_check import simulate
from metis_check._mutate import RICH
from metis_trace import NOT_JOURNALED
from metis_trace import Commit
from metis_trace import Repair
from metis_trace import Result
from metis_trace import ResultStatus
from metis_trace import TraceEvent
from metis_trace import TraceHeader
from metis_trace import content_digest


def _first(header: TraceHeader, events: Sequence[TraceEvent]) -> tuple[str, str] | None:
    fast, slow = check_trace(events, header), check_trace(events, header, reference=True)
    assert (fast.first is None) == (slow.first is None)
    if fast.first is None:
        return None
    assert slow.first is not None and fast.first.invariant == slow.first.invariant
    return fast.first.invariant, fast.first.message


def _resumed_commit(seed_from: int) -> tuple[TraceHeader, list[TraceEvent], Result]:
    """A simulated run where a resumed process answers a committed call."""
    for seed in range(seed_from, seed_from + 3000):
        header, events = simulate(seed, RICH)
        resumed = False
        committed = set()
        for e in events:
            if e.kind in ("resume", "repair"):  # between them: the resumed answers
                resumed = e.kind == "resume"
            if isinstance(e, Commit):
                committed.add(e.occ)
            if resumed and isinstance(e, Result) and e.occ in committed:
                return header, list(events), e
    raise AssertionError("no simulated run resumes a committed call")


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 5_000))
def test_every_committed_result_carries_its_commits_digest(seed: int) -> None:
    """Property: in valid runs each committed call's result is its commit's
    output; changing that output anywhere is RETRY-2."""
    header, events = simulate(seed, RICH)
    assert _first(header, events) is None
    # a recovered commit (RETRY-4) has no digest: its output is the exit record's
    digests = {e.occ: e.digest for e in events if isinstance(e, Commit) and e.digest}
    for e in events:
        if isinstance(e, Result) and e.occ in digests:
            if e.content != NOT_JOURNALED:
                assert content_digest(e.content) == digests[e.occ]
            broken = list(events)
            broken[e.seq] = e.model_copy(update={"content": e.content + "!"})
            found = _first(header, broken)
            assert found is not None and found[0] == "RETRY-2", found
            assert "does not carry its committed output" in found[1]


def test_a_resumed_not_journaled_note_is_allowed_only_without_proof() -> None:
    header, events, answer = _resumed_commit(0)
    note = list(events)
    note[answer.seq] = answer.model_copy(update={"content": NOT_JOURNALED})
    # the simulated stop came between the commit and its effect_end: no proof
    assert _first(header, note) is None


def test_a_not_journaled_answer_after_a_proven_commit_is_retry_2() -> None:
    """Mutant 06's trace: the commit and its effect_end are adjacent (the
    journal was written between them), yet the answer says not journaled."""
    for seed in range(2000):
        header, events = simulate(seed, RICH)
        for e in events:
            after = events[e.seq + 1] if e.seq + 1 < len(events) else None
            if isinstance(e, Commit) and after is not None and after.kind == "effect_end":
                result = next(r for r in events if isinstance(r, Result) and r.occ == e.occ)
                broken = list(events)
                broken[result.seq] = result.model_copy(update={"content": NOT_JOURNALED})
                found = _first(header, broken)
                assert found is not None and found[0] == "RETRY-2", found
                assert "journal holds its output" in found[1]
                return
    pytest.fail("no simulated run has a committed call")


def test_a_committed_result_with_another_status_is_retry_2() -> None:
    header, events, answer = _resumed_commit(0)
    broken = list(events)
    broken[answer.seq] = answer.model_copy(update={"status": ResultStatus.ERROR})
    found = _first(header, broken)
    assert (
        found is not None and found[0] == "RETRY-2" and "its committed effect ended ok" in found[1]
    )


def test_a_repair_that_stubs_a_committed_call_is_retry_2() -> None:
    """The resumed process stubs the committed call instead of answering it."""
    header, events, answer = _resumed_commit(0)
    repair = next(e for e in events[answer.seq :] if isinstance(e, Repair))
    stubbed = tuple(o for o in _occs(events, repair) if o == answer.occ or o in repair.stubbed)
    kept = [e for e in events if e.seq != answer.seq]  # the answer is gone
    broken: list[TraceEvent] = []
    for i, e in enumerate(kept):
        causes = tuple(c - (c > answer.seq) for c in e.causes if c != answer.seq)
        broken.append(e.model_copy(update={"seq": i, "causes": causes}))
    at = repair.seq - 1
    unknown = (*repair.unknown, answer.occ)
    broken[at] = broken[at].model_copy(update={"stubbed": stubbed, "unknown": unknown})
    found = _first(header, broken)
    assert found is not None and found[0] == "RETRY-2", found
    assert f"repair stubs {answer.occ}, whose commit the trace holds" in found[1]


def _occs(events: Sequence[TraceEvent], repair: Repair) -> tuple[str, ...]:
    """The batch's occurrences in call order (the last assistant before the repair)."""
    assistant = [e for e in events[: repair.seq] if e.kind == "assistant"][-1]
    return tuple(c.occ for c in assistant.calls)  # type: ignore[attr-defined]
