"""metis_check: checking traces, transcripts and witnesses against the model.

Replay of a runtime's trace against the model's steps (`check_trace`) and of a
tree of traces (`check_trace_tree`); the plan path's turn-log checker; the
witness check; the scan of a run's files; coverage of invariant IDs and model
transitions; the trace generators and invalid-trace mutators used by the tests
and `metis explore`; the drawing IR every picture goes through; and, in
`metis_check.transcripts`, the readers and provider rules for other runtimes'
transcripts. It imports `metis_model` and `metis_trace`.

Exports load lazily (PEP 562, see `metis_trace/_lazy.py`).
"""

import typing as _typing

from metis_trace._lazy import lazy_exports as _lazy_exports

if _typing.TYPE_CHECKING:
    from ._check import ALWAYS_BY_KIND as ALWAYS_BY_KIND
    from ._check import check_trace as check_trace
    from ._coverage import TRANSITIONS as TRANSITIONS
    from ._coverage import Coverage as Coverage
    from ._figure import DEFAULT_WINDOW as DEFAULT_WINDOW
    from ._figure import Divergent as Divergent
    from ._figure import Figure as Figure
    from ._figure import Group as Group
    from ._figure import Item as Item
    from ._figure import Link as Link
    from ._figure import window as window
    from ._figure_trace import event_label as event_label
    from ._figure_trace import trace_figure as trace_figure
    from ._figure_trace import tree_figure as tree_figure
    from ._generate import simulate as simulate
    from ._graph import figure_graph as figure_graph
    from ._graph import trace_dot as trace_dot
    from ._mutate import MUTATORS as MUTATORS
    from ._mutate import break_trace as break_trace
    from ._mutate import broken_trace as broken_trace
    from ._plan_check import check_turn_log as check_turn_log
    from ._plan_check import check_turn_logs as check_turn_logs
    from ._plan_check_base import PLAN_CHECKS as PLAN_CHECKS
    from ._plan_figure import turn_log_figure as turn_log_figure
    from ._report import STATUSES as STATUSES
    from ._report import Note as Note
    from ._report import Report as Report
    from ._report import Undecided as Undecided
    from ._report import Verdict as Verdict
    from ._report import Violation as Violation
    from ._run_files import canary_forms as canary_forms
    from ._run_files import check_run_files as check_run_files
    from ._run_files import scan_text as scan_text
    from ._sim_config import ALL_TOOLS as ALL_TOOLS
    from ._sim_config import SimConfig as SimConfig
    from ._tree import check_trace_tree as check_trace_tree
    from ._witness import WitnessedTrace as WitnessedTrace
    from ._witness import WitnessReport as WitnessReport
    from ._witness import check_witness as check_witness

__getattr__, __dir__, __all__ = _lazy_exports(__name__, __file__)
