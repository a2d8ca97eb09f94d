"""Which runtime package each situation of the sweep drives (`metis explore --coverage`).

A situation is read from the traces (`_coverage.py`, `_mech.py`); the table
(the loop's situations below, and each mechanism case's own `package`) says
which package of `metis_runtime/` decides what the situation is about, so
that a sweep can be read per package: a package holding decision logic whose
situations were all missed is a package no workload reached, and
`--coverage` fails. Top-level runtime modules are grouped: `loop` (`_loop`,
`_session`, `_graph`), `journal` (`_journal`, `_failpoints`, `_lifeline`),
`trace` (`_trace`, `_redact`, `_named_output`, `_private`), `hook`
(`_hook_session`). `NO_DECISIONS` lists what holds none, and why.
`tests/explore/test_packages.py` checks that every package and module of
`metis_runtime/` is in one of the two.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from ._mech import MECH_SWEEP
from ._workload import POINT_KILLS

__all__ = ["GROUPS", "NO_DECISIONS", "PACKAGES", "PackageRow", "package_coverage"]

_ASKS = tuple(
    f"ask:{r}:{a}"
    for r in ("interactive", "protocol", "headless")
    for a in ("approved", "rejected")
)
_CONTEXT = tuple(f"context:{s}" for s in ("prune", "snip", "offload", "collapse", "compaction"))

# The loop's situations (`_coverage.py`), by package; each mechanism's case
# names its own package and situations (`_mech_*.py`), added below.
_LOOP: dict[str, tuple[str, ...]] = {
    "agents": ("hook:veto", "hook:pass", "hook:veto-in-child", "hook:failed", "spawn:plan-child",
               "spawn:depth-2", "plan:child-no-spawn", "spawn:narrowed", "guard:refused",
               "guard:concurrent", "authority:refused"),
    "context": _CONTEXT,
    "dispatch": ("queue-3", "exclusive-waits", "background", "cancel", "interrupt",
                 "cancel:sourced", "interrupt:sourced"),
    "permissions": (*_ASKS, "plan:denied"),
    "providers": ("context:retry",),  # the adapter reads a 413 as an overflow; the loop retries
    # Bash lines the shell analysis classifies: exec (Exclusive), background,
    # and the deny rules matched on a line's commands (the hierarchy's, the hook's).
    "shell": ("exclusive-waits", "background", "settings:deny-over-allow", "hook-cc:deny"),
    "tools": ("background:failed", "canary:committed"),
    "loop": ("repeated-ids", "turn-limit", "cancel:sourced", "interrupt:sourced", "fail"),
    "journal": POINT_KILLS,
    "trace": ("canary", "canary:committed"),
}  # fmt: skip


def _table() -> dict[str, tuple[str, ...]]:
    table = {name: list(names) for name, names in _LOOP.items()}
    for case in MECH_SWEEP:
        names = table.setdefault(case.package, [])
        names += [s for s in case.situations if s not in names]
    return {name: tuple(names) for name, names in table.items()}


PACKAGES: dict[str, tuple[str, ...]] = _table()

# The top-level modules of metis_runtime/ in each group.
GROUPS: dict[str, tuple[str, ...]] = {
    "loop": ("_loop", "_session", "_graph"),
    "journal": ("_journal", "_failpoints", "_lifeline"),
    "trace": ("_trace", "_redact", "_named_output", "_private"),
    "hook": ("_hook_session",),
    "tools": ("_realpath",),  # the file tools' (and the gate's) realpath: contain:*
}

NO_DECISIONS: dict[str, str] = {
    "scenarios": "shipped replay scenarios (data)",
    # once the CLI's: it builds the gate, loop and supervisor, which decide; the
    # rules it adds (agent tools allowed from the cli) are in the header, AUTH-4's
    "assemble": "puts a run together from `metis run`'s options or its journal",
    "__init__": "re-exports",
    "_errors": "exception types",
    "_layout": "the run folder's names",
    "_yaml": "a bounded YAML reader",
    "_input": "bounded, strict input readers",
}


@attrs.frozen
class PackageRow:
    package: str
    reached: tuple[str, ...]
    missed: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return bool(self.reached)


def package_coverage(counts: Mapping[str, int]) -> list[PackageRow]:
    """Per package, which of its situations the counts show reached."""
    rows = []
    for package, names in PACKAGES.items():
        reached = tuple(n for n in names if counts.get(n))
        rows.append(PackageRow(package, reached, tuple(n for n in names if not counts.get(n))))
    return rows
