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
    from ._check import ALWAYS_BY_KIND
    from ._check import check_trace
    from ._coverage import TRANSITIONS
    from ._coverage import Coverage
    from ._figure import DEFAULT_WINDOW
    from ._figure import Divergent
    from ._figure import Figure
    from ._figure import Group
    from ._figure import Item
    from ._figure import Link
    from ._figure import window
    from ._figure_trace import event_label
    from ._figure_trace import trace_figure
    from ._figure_trace import tree_figure
    from ._generate import ALL_TOOLS
    from ._generate import SimConfig
    from ._generate import simulate
    from ._graph import figure_graph
    from ._graph import trace_dot
    from ._mutate import MUTATORS
    from ._mutate import break_trace
    from ._mutate import broken_trace
    from ._plan_check import PLAN_CHECKS
    from ._plan_check import check_turn_log
    from ._plan_check import check_turn_logs
    from ._plan_figure import turn_log_figure
    from ._report import STATUSES
    from ._report import Note
    from ._report import Report
    from ._report import Undecided
    from ._report import Verdict
    from ._report import Violation
    from ._run_files import canary_forms
    from ._run_files import check_run_files
    from ._run_files import scan_text
    from ._tree import check_trace_tree
    from ._witness import WitnessedTrace
    from ._witness import WitnessReport
    from ._witness import check_witness

_EXPORTS: dict[str, tuple[str, ...]] = {
    "._check": (
        "ALWAYS_BY_KIND",
        "check_trace",
    ),
    "._coverage": (
        "Coverage",
        "TRANSITIONS",
    ),
    "._figure": (
        "DEFAULT_WINDOW",
        "Divergent",
        "Figure",
        "Group",
        "Item",
        "Link",
        "window",
    ),
    "._figure_trace": (
        "event_label",
        "trace_figure",
        "tree_figure",
    ),
    "._generate": (
        "ALL_TOOLS",
        "SimConfig",
        "simulate",
    ),
    "._graph": ("figure_graph", "trace_dot"),
    "._mutate": (
        "MUTATORS",
        "break_trace",
        "broken_trace",
    ),
    "._plan_check": (
        "PLAN_CHECKS",
        "check_turn_log",
        "check_turn_logs",
    ),
    "._plan_figure": ("turn_log_figure",),
    "._report": (
        "Note",
        "Report",
        "STATUSES",
        "Undecided",
        "Verdict",
        "Violation",
    ),
    "._run_files": (
        "canary_forms",
        "check_run_files",
        "scan_text",
    ),
    "._tree": ("check_trace_tree",),
    "._witness": (
        "WitnessReport",
        "WitnessedTrace",
        "check_witness",
    ),
}

__getattr__, __dir__ = _lazy_exports(__name__, _EXPORTS)

__all__ = [
    "ALL_TOOLS",
    "ALWAYS_BY_KIND",
    "DEFAULT_WINDOW",
    "MUTATORS",
    "PLAN_CHECKS",
    "STATUSES",
    "TRANSITIONS",
    "Coverage",
    "Divergent",
    "Figure",
    "Group",
    "Item",
    "Link",
    "Note",
    "Report",
    "SimConfig",
    "Undecided",
    "Verdict",
    "Violation",
    "WitnessReport",
    "WitnessedTrace",
    "break_trace",
    "broken_trace",
    "canary_forms",
    "check_run_files",
    "check_trace",
    "check_trace_tree",
    "check_turn_log",
    "check_turn_logs",
    "check_witness",
    "event_label",
    "figure_graph",
    "scan_text",
    "simulate",
    "trace_dot",
    "trace_figure",
    "tree_figure",
    "turn_log_figure",
    "window",
]
