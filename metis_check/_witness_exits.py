"""TRACE-3: a call's recorded outcome against its process's witnessed exit.

The trace says how a bash call ended (its result's status, a Background
job's `job_done` outcome); that is the runtime's word. The witness saw the
process from outside: strace's `+++ exited with N +++` / `+++ killed by SIG
+++` for the `bash -c CMD` process the call started (the leader of the call's
process group: the runtime starts it in a new session, so pgid == pid). A
recorded `ok` for a non-zero exit or a kill, or an `error` for exit 0, breaks
TRACE-3 (specs/witness.md). A call whose exit the witness could not see (no
strace, a session of witness version 1, a process that outlived its session,
an execution not matched to the call) is a warning, never a pass.

Judged: outcomes `ok` and `error`. Not judged: `cancelled`, `unknown`,
`interrupted` and `detached` (the runtime stopped or left the process; what
it came to is not what the call reports).
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any
from typing import Protocol

import attrs

from metis_trace import ProcessExit
from metis_trace import WitnessSession

from ._report import Violation

__all__ = ["ExitFindings", "check_exits", "exit_text"]

_JUDGED = ("ok", "error")


class _OccLike(Protocol):
    occ: str
    tool: str
    input: dict[str, Any]
    start: float | None
    outcome: str
    outcome_seq: int


class _TraceLike(Protocol):
    source: str
    origin: float | None

    @property
    def occs(self) -> Mapping[str, Any]: ...


@attrs.frozen
class ExitFindings:
    checked: int = 0
    violations: tuple[Violation, ...] = ()
    unobserved: tuple[str, ...] = ()


def exit_text(x: ProcessExit) -> str:
    if x.signal is not None:
        return f"was killed by {x.signal}"
    return f"exited with status {x.status}"


def _exits(
    sessions: Sequence[WitnessSession],
) -> dict[tuple[int, int], list[tuple[ProcessExit, int]]]:
    out: dict[tuple[int, int], list[tuple[ProcessExit, int]]] = {}
    for index, s in enumerate(sessions):
        for r, line in zip(s.records, s.lines, strict=True):
            if isinstance(r, ProcessExit):
                out.setdefault((index, r.pid), []).append((r, line))
    return out


def _observes_exits(s: WitnessSession) -> bool:
    return any(w.what == "exits" for w in s.header.watched)


def check_exits(
    sessions: Sequence[WitnessSession],
    traces: Iterable[_TraceLike],
    spawned: Mapping[tuple[int, int], tuple[_TraceLike, _OccLike, int]],
) -> ExitFindings:
    """Compare each explained `bash -c` execution's exit with its call's outcome.

    `spawned`: (session index, pid) -> (trace, occurrence, the exec's line),
    the executions the AUTH-1 check matched to an admitted call."""
    exits = _exits(sessions)
    checked = 0
    violations: list[Violation] = []
    unseen: dict[str, list[str]] = {}
    judged: set[tuple[str, str]] = set()

    def warn(why: str, tr: _TraceLike, o: _OccLike) -> None:
        unseen.setdefault(why, []).append(f"{o.occ} in {tr.source}")

    for (session, pid), (tr, o, exec_line) in spawned.items():
        if o.outcome not in _JUDGED:
            continue
        judged.add((tr.source, o.occ))
        if not _observes_exits(sessions[session]):
            warn(f"session {sessions[session].header.session} did not observe exits", tr, o)
            continue
        later = [(x, line) for x, line in exits.get((session, pid), []) if line > exec_line]
        if not later:
            warn("no exit of the call's process was witnessed (it outlived the session?)", tr, o)
            continue
        x, line = later[0]
        checked += 1
        if (o.outcome == "ok") != (x.status == 0):
            command = o.input.get("command", "")
            violations.append(
                Violation(
                    invariant="TRACE-3",
                    index=max(o.outcome_seq, 0),
                    message=(
                        f"{o.occ} (`{command}`) in {tr.source} is recorded {o.outcome}, "
                        f"but its process {pid} {exit_text(x)}"
                    ),
                    witness_line=line,
                )
            )
    for tr in traces:
        if tr.origin is None:
            continue  # reported already: its clock cannot be compared
        for o in tr.occs.values():
            if (
                o.tool == "bash"
                and o.outcome in _JUDGED
                and o.start is not None
                and (tr.source, o.occ) not in judged
            ):
                warn("no execution of its command was matched to the call", tr, o)
    unobserved = tuple(
        f"exits: {why}: the recorded outcome of {len(occs)} bash call(s) not checked "
        f"({', '.join(occs[:3])}{', ...' if len(occs) > 3 else ''})"
        for why, occs in unseen.items()
    )
    return ExitFindings(checked, tuple(violations), unobserved)
