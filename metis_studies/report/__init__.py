"""`metis study NAME --out DIR`: each study's tables (JSON, CSV, Markdown),
raw samples and figures (PNG and SVG), written by one function per study.

`STUDIES` maps a name to its writer; `write_study(name, out, sizes)` runs
it. `Sizes.quick()` are the small sizes the tests use; the defaults are the
paper's (30 pairs, 3 trials per condition, ...). The figure functions take a
study's result and a file stem, and return the PNG and SVG they wrote.
"""

from ._conformance import invariants_figure
from ._conformance import read_marker_figure
from ._conformance import snapshot_figure
from ._conformance import transitions_figure
from ._dispatch import differences_figure
from ._dispatch import histograms_figure
from ._files import Written
from ._files import write_json
from ._files import write_table
from ._model import ablations_figure
from ._model import decision_maps_figure
from ._model import loosened_figure
from ._registry import STUDIES
from ._registry import Sizes
from ._registry import write_study
from ._runtime import child_boundary_figure
from ._runtime import oracle_figure

__all__ = [
    "STUDIES",
    "Sizes",
    "Written",
    "ablations_figure",
    "child_boundary_figure",
    "decision_maps_figure",
    "differences_figure",
    "histograms_figure",
    "invariants_figure",
    "loosened_figure",
    "oracle_figure",
    "read_marker_figure",
    "snapshot_figure",
    "transitions_figure",
    "write_json",
    "write_study",
    "write_table",
]
