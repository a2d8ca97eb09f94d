"""`metis demo`'s rows for the conformance channel, here on the sweep's first
workloads (`test_sweep.py` runs all of it; the demo test leaves it out)."""

from __future__ import annotations

from pathlib import Path

import pytest

from metis_cli._demo_channel import explore_rows


def test_the_sweep_rows_give_figures_and_name_what_was_never_reached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import metis_studies.explore as explore

    first = explore.sweep()[:2]  # queue-3, exclusive-waits: in process, quick
    monkeypatch.setattr(explore, "sweep", lambda: first)
    conforms, reached = explore_rows(tmp_path)
    assert conforms[2], conforms
    assert conforms[3].startswith("2 workloads, ") and "workloads/min" in conforms[3]
    assert not reached[2] and reached[3].startswith("never: ")
    assert "queue-3" not in reached[3] and "context:prune" in reached[3]
