"""Which runtime package each situation of the sweep drives (`metis explore --coverage`).

A situation is read from the traces (`_coverage.py`, `_mech.py`); the table
below says which package of `metis_runtime/` decides what the situation is
about, so that a sweep can be read per package: a package holding decision
logic whose situations were all missed is a package no workload reached,
and `--coverage` fails. Top-level runtime modules are grouped: `loop`
(`_loop`, `_session`, `_graph`), `journal` (`_journal`, `_failpoints`,
`_lifeline`), `trace` (`_trace`, `_redact`, `_named_output`, `_private`),
`hook` (`_hook_session`). `NO_DECISIONS` lists what holds none, and why.
`tests/explore/test_packages.py` checks that every package and module of
`metis_runtime/` is in one of the two.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

__all__ = ["GROUPS", "NO_DECISIONS", "PACKAGES", "PackageRow", "package_coverage"]

_ASKS = tuple(
    f"ask:{r}:{a}"
    for r in ("interactive", "protocol", "headless")
    for a in ("approved", "rejected")
)
_CONTEXT = tuple(f"context:{s}" for s in ("prune", "snip", "offload", "collapse", "compaction"))
_KILLS = tuple(
    f"kill:{p}"
    for p in (
        "journal:admit",
        "journal:commit",
        "trace:result",
        "journal:message",
        "trace:results_sent",
    )
)

PACKAGES: dict[str, tuple[str, ...]] = {
    "agents": (
        "hook:veto",
        "hook:pass",
        "spawn:plan-child",
        "spawn:depth-2",
        "guard:refused",
        "authority:refused",
        "hook:veto-in-child",
        "plan:child-no-spawn",
        "agents:project-over-user",
        "agents:tool-outside-surface",
        "agents:definition-mode-clamped",
        "agents:definition-mode-plan",
    ),
    "context": _CONTEXT,
    "dispatch": (
        "queue-3",
        "exclusive-waits",
        "background",
        "cancel",
        "interrupt",
        "cancel:sourced",
        "interrupt:sourced",
    ),
    "mcp": ("mcp:registered", "mcp:call", "mcp:denied", "mcp:exclusive-waits", "mcp:server-died"),
    "permissions": (
        *_ASKS,
        "plan:denied",
        "settings:managed",
        "settings:user",
        "settings:project",
        "settings:local",
        "settings:deny-over-allow",
        "settings:ask-over-allow",
        "settings:default-mode",
    ),
    "plan": (
        "plan:engine",
        "plan:l0-hit",
        "plan:l0-miss:executor_changed",
        "plan:l0-miss:epoch_changed",
        "plan:paused",
        "plan:resume-approve",
        "plan:resume-reject",
        "plan:foreign-resume-refused",
    ),
    "providers": ("context:retry",),  # the adapter reads a 413 as an overflow; the loop retries
    # Bash lines the shell analysis classifies: exec (Exclusive), a deny on a
    # compound's command, a background line.
    "shell": ("exclusive-waits", "settings:deny-over-allow", "hook-cc:deny", "background"),
    "tools": (
        "contain:symlink-refused",
        "contain:dotdot-refused",
        "job:detached",
        "job:failed",
        "background:failed",
        "canary:committed",
    ),
    "loop": ("repeated-ids", "turn-limit", "cancel:sourced", "interrupt:sourced"),
    "journal": (*_KILLS, "exit:recovered", "exit:unknown"),
    "trace": ("canary", "canary:committed", "encoded:base64", "encoded:percent", "encoded:nested"),
    "hook": (
        "hook-cc:deny",
        "hook-cc:ask",
        "hook-cc:allow",
        "hook-cc:stop",
        "hook-cc:overlapping-closed",
    ),
}

# The top-level modules of metis_runtime/ in each group.
GROUPS: dict[str, tuple[str, ...]] = {
    "loop": ("_loop", "_session", "_graph"),
    "journal": ("_journal", "_failpoints", "_lifeline"),
    "trace": ("_trace", "_redact", "_named_output", "_private"),
    "hook": ("_hook_session",),
}

NO_DECISIONS: dict[str, str] = {
    "scenarios": "shipped replay scenarios (data)",
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
