"""The CI explore: every situation of the sweep, in its simplest form, through the
real runtime; every trace conforms, and together they reach every situation
issue 11 lists as never reached (`REQUIRED`), read back from the traces."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from metis_studies.explore import REQUIRED
from metis_studies.explore import SWEEP
from metis_studies.explore import check_outcome
from metis_studies.explore import execute
from metis_studies.explore import simplest
from metis_studies.explore import situations
from metis_studies.explore import workloads

REACHED: Counter[str] = Counter()

# What each focus must reach by itself (the rest of REQUIRED comes from the sweep together).
EXPECTED = {
    "queue-3": {"queue-3"},
    "exclusive-waits": {"exclusive-waits"},
    "asks:interactive": {"ask:interactive:approved", "ask:interactive:rejected"},
    "asks:protocol": {"ask:protocol:approved", "ask:protocol:rejected"},
    "asks:headless-allow": {"ask:headless:approved"},
    "asks:headless-deny": {"ask:headless:rejected"},
    "context": {
        "context:prune",
        "context:snip",
        "context:offload",
        "context:collapse",
        "context:compaction",
    },
    "overflow": {"context:retry"},
    "kill:journal:admit": {"kill:journal:admit", "resume"},
    "kill:journal:commit": {"kill:journal:commit", "resume"},
    "kill:trace:result": {"kill:trace:result", "resume"},
    "kill:journal:message": {"kill:journal:message", "resume"},
    "kill:trace:results_sent": {"kill:trace:results_sent", "resume"},
    "kill:recovery": {"kill:recovery", "resume"},
    "hooks": {"hook:pass"},
    "hooks:veto": {"hook:veto"},
    "hooks:failing": {"hook:veto", "hook:failed"},
    "hooks:child": {"hook:veto-in-child"},
    "plan-child": {"spawn:plan-child", "plan:child-no-spawn"},
    "plan-root": {"plan:denied"},
    "spawn": {"spawn"},
    "spawn:escalate": {"authority:refused"},
    "guard": {"guard:refused"},
    "guard:concurrent": {"guard:refused", "guard:concurrent"},
    "spawn:narrowed": {"spawn", "spawn:narrowed"},
    "nested": {"spawn:depth-2"},
    "canary": {"canary", "canary:committed"},
    "background": {"background", "background:failed"},
    "repeated-ids": {"repeated-ids"},
    "cancel": {"cancel", "cancel:sourced"},
    "interrupt": {"interrupt", "interrupt:sourced", "resume"},
    "turn-limit": {"turn-limit"},
    "fail": {"fail"},
}


@pytest.mark.parametrize("focus", SWEEP)
def test_the_sweep_conforms_and_reaches_its_situation(focus: str, tmp_path: Path) -> None:
    workload = simplest(workloads(focus=focus), SWEEP.index(focus) + 1)
    verdict = check_outcome(execute(workload, tmp_path / "run", "in-process"))
    assert verdict.ok, [f.one_line() for f in verdict.findings]
    reached = situations(verdict.traces, workload)
    REACHED.update(reached)
    missing = EXPECTED.get(focus, set()) - set(reached)
    assert not missing, f"{focus}: never reached {sorted(missing)} ({verdict.outcome.steps})"


def test_the_sweep_aims_at_every_required_situation() -> None:
    """Each focus asserts what it reaches; together they are all of REQUIRED."""
    assert set(EXPECTED) <= set(SWEEP)
    covered = set().union(*EXPECTED.values())
    assert not set(REQUIRED) - covered, sorted(set(REQUIRED) - covered)


@pytest.mark.metis_nonconforming
def test_a_commit_entry_that_skips_the_redactor_is_caught_by_trace_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mutant 08 in process: the canary sweep has an effectful call printing the
    planted canary, so a journal `commit` entry written past the redactor
    holds it and TRACE-2's scan of the run's files says so."""
    import json

    from metis_runtime import _journal

    class Plain:
        def json_bytes(self, entry: object) -> bytes:
            return json.dumps(entry).encode()

    original = _journal.Journal._append

    def unredacted(self: _journal.Journal, entry: dict[str, object]) -> None:
        if entry["type"] != "commit":
            return original(self, entry)
        redact, self._redact = self._redact, Plain()  # type: ignore[assignment]
        try:
            return original(self, entry)
        finally:
            self._redact = redact

    workload = simplest(workloads(focus="canary"), SWEEP.index("canary") + 1)
    assert check_outcome(execute(workload, tmp_path / "clean", "in-process")).ok
    monkeypatch.setattr(_journal.Journal, "_append", unredacted)
    verdict = check_outcome(execute(workload, tmp_path / "fault", "in-process"))
    ids = {f.invariant for f in verdict.findings}
    assert "TRACE-2" in ids, [f.one_line() for f in verdict.findings]
