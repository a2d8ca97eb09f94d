"""Names that left `metis_model` in the layout change, still resolvable for a while.

A user's `from metis_model import check_trace` (or `metis_model.trace`,
`metis_model.transcripts`, `metis_model.smt`) keeps working, with a
DeprecationWarning naming the new path. This module is the one place in the
model that refers to the packages above it, and it only does so by name, at
attribute lookup: `tests/test_architecture.py` exempts it by name.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import Any

# name -> the package that now exports it
MOVED: dict[str, str] = {
    **dict.fromkeys(
        (
            "ALWAYS_BY_KIND",
            "check_trace",
            "TRANSITIONS",
            "Coverage",
            "ALL_TOOLS",
            "SimConfig",
            "simulate",
            "MUTATORS",
            "break_trace",
            "broken_trace",
            "STATUSES",
            "Note",
            "Report",
            "Undecided",
            "Verdict",
            "Violation",
            "canary_forms",
            "check_run_files",
            "scan_text",
            "check_trace_tree",
            "WitnessReport",
            "WitnessedTrace",
            "check_witness",
        ),
        "metis_check",
    ),
}

# old package path -> new package path (the shim modules `trace.py`, `transcripts.py`, `smt.py`)
MOVED_PACKAGES: dict[str, str] = {
    "metis_model.trace": "metis_trace",
    "metis_model.transcripts": "metis_check.transcripts",
    "metis_model.smt": "metis_proofs",
}


def warn_moved(old: str, new: str) -> None:
    warnings.warn(
        f"{old} has moved to {new}; import it from there", DeprecationWarning, stacklevel=3
    )


def deprecated_getattr(package: str, current: Callable[[str], Any]) -> Callable[[str], Any]:
    """`__getattr__` for `package`: its own exports first, then the moved names."""

    def __getattr__(name: str) -> Any:
        new = MOVED.get(name)
        if new is None:
            return current(name)
        warn_moved(f"{package}.{name}", f"{new}.{name}")
        return getattr(importlib.import_module(new), name)

    return __getattr__


def package_getattr(old: str) -> Callable[[str], Any]:
    """`__getattr__` for a shim module standing where a moved package was."""
    new = MOVED_PACKAGES[old]
    warn_moved(old, new)
    target = importlib.import_module(new)

    def __getattr__(name: str) -> Any:
        return getattr(target, name)

    return __getattr__
