"""The dispatch study (`metis_studies.dispatch`): the I/O-bound batch really
waits on I/O, its pairs and bounds are measured, and the old CPU-bound batch
still runs. Timing targets are never asserted here (benchmarks/bench_dispatch.py
and `metis study dispatch` report them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from metis_studies.dispatch import BATCHES
from metis_studies.dispatch import IO_BATCH
from metis_studies.dispatch import dispatch_study
from metis_studies.dispatch import io_run
from metis_studies.dispatch import run_batch
from metis_studies.dispatch import seed_tree
from metis_trace import CallClass


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    seed_tree(root)
    return root


def test_the_io_batch_is_classed_to_overlap_and_its_pipe_delivers(tree: Path) -> None:
    span, events = io_run(tree, IO_BATCH, "four-class", "t")
    classes = [e.cls for e in events if e.kind == "decision"]
    assert classes[0] is CallClass.BACKGROUND  # the FIFO's slow writer
    assert classes[1:5] == [CallClass.SAFE] * 4  # the sleeping readers and the pipe's reader
    assert {classes[7], classes[8]} == {CallClass.QUEUE}  # two fsynced writes, two keys
    pipe = next(e for e in events if e.kind == "result" and e.occ == "1.3")
    assert pipe.content.split("\n")[0] == "6"  # six lines came through the slow pipe
    assert (tree / "synced-a.txt").stat().st_size == len("synced line\n") * 4096
    assert span >= 0.15  # the longest reader follows the log for 150 ms


def test_serial_runs_add_up_what_four_class_overlaps(tree: Path) -> None:
    serial, _ = io_run(tree, IO_BATCH, "serial", "s")
    assert serial >= 0.15 + 0.10 + 0.05  # the three sleeping readers, one after another


def test_a_small_paired_run_has_its_statistics_and_bounds(tree: Path) -> None:
    result = run_batch(tree, "io", 2, cpu_runs=1)
    assert result.stats.pairs == 2 and [p.first for p in result.pairs] == ["a", "b"]
    assert len(result.alone_ms) == len(IO_BATCH)
    b = result.bounds
    assert b.critical_path_ms >= b.longest_call_ms >= 150
    assert b.cores >= 1 and b.batch_cpu_ms > 0
    assert b.floor_ms == max(b.critical_path_ms, b.work_bound_ms, b.in_process_sum_ms)
    data = result.to_json()
    assert data["targets"] == {"ratio": 0.545, "makespan_over_critical_path": 1.15}
    assert data["meets_targets"] == result.meets_targets


def test_unknown_batches_are_refused() -> None:
    assert set(BATCHES) == {"cpu", "shell-grep", "io"}
    with pytest.raises(ValueError, match="unknown batch 'gpu'"):
        dispatch_study(("gpu",), 2)
