# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Four-class mediation against forced serialization
#
# The paper's RQ2: matched pairs of one real-I/O batch under the four-class
# dispatcher and under forced serialization, in alternating order, reported
# as the median of each side, the mean paired difference with a bootstrap
# 95% interval, and the pairs in which mediation was faster
# (`metis_studies.dispatch`, `metis_studies._stats`; `metis study dispatch`
# runs both batches with 30 pairs each).
#
# This notebook runs the I/O-bound batch (subprocesses sleeping on input, a
# slow pipe, fsynced writes) with a few pairs, so that it stays quick; set
# `PAIRS` higher for a real measurement. The bounds say what no schedule can
# beat on this machine: the critical path, and the CPU work over the cores.

# %%
import os
import tempfile
from pathlib import Path

from IPython.display import Image, display

from metis_studies.dispatch import IO_BATCH, run_batch
from metis_studies.dispatch import DispatchStudy
from metis_studies.report import differences_figure

PAIRS = int(os.environ.get("METIS_NOTEBOOK_PAIRS", "4"))
for tool, args in IO_BATCH:
    print(f"{tool:6} {args.get('command') or args.get('path') or args.get('pattern')}")

# %%
root = Path(tempfile.mkdtemp(prefix="metis-notebook-")) / "ws"
root.mkdir()
batch = run_batch(root, "io", PAIRS, cpu_runs=2)
print(batch.stats.sentence())
b = batch.bounds
print(f"critical path {b.critical_path_ms:.1f} ms ({b.longest_call}); CPU work / cores {b.work_bound_ms:.1f} ms")
print(f"makespan / critical path: {batch.makespan_over_critical_path:.2f}; targets met: {batch.meets_targets}")
assert batch.stats.pairs == PAIRS

# %%
png, _svg = differences_figure(DispatchStudy((batch,)), root.parent / "differences")
display(Image(filename=str(png)))
