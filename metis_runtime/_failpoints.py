"""Fail points: the process kills itself (SIGKILL) at one named place, for crash tests.

Named places in the code that do nothing unless configured from outside, as
FreeBSD's fail(9) and TiKV's fail-rs have them. Off unless the environment
variable `METIS_FAILPOINT` holds a point when this module is first imported;
the variable is then removed from the environment, so processes this one
starts (tools, child agents) never inherit it. A point is
`WHERE:KIND:KEY[@N]`:

- `journal:<type>:<key>`: right after the journal entry was written and
  fsynced (`journal:admit:1.2`, `journal:commit:1.2`,
  `journal:message:1.results`, `journal:end:`);
- `trace:<kind>:<key>`: right before the trace event is written
  (`trace:result:1.2`, `trace:results_sent:1`, `trace:effect_end:1.0`);

where the key is the entry's or event's occurrence, else its turn (a journal
message adds its role after a dot), else empty. `@N` kills at the N-th match
(default the first). `metis explore` uses these to kill a run at every
journal point and resume it. A malformed value is ignored with one line on
stderr: a crash test that cannot arm its point sees the run complete.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping
from typing import Any

FAILPOINT_ENV = "METIS_FAILPOINT"
_WHERE = ("journal", "trace")


def _parse(raw: str) -> tuple[str, int] | None:
    spec, _, nth = raw.strip().partition("@")
    parts = spec.split(":", 2)
    if len(parts) != 3 or parts[0] not in _WHERE or not parts[1]:
        return None
    try:
        count = int(nth) if nth else 1
    except ValueError:
        return None
    return (spec, count) if count >= 1 else None


def _arm() -> tuple[str, int] | None:
    raw = os.environ.pop(FAILPOINT_ENV, None)
    if raw is None:
        return None
    armed = _parse(raw)
    if armed is None:
        print(f"metis: ignoring {FAILPOINT_ENV}={raw!r} (want WHERE:KIND:KEY[@N])", file=sys.stderr)
    return armed


_ARMED = _arm()
ARMED = _ARMED is not None  # read on hot paths before calling `reached`
_seen = 0


def key_of(fields: Mapping[str, Any]) -> str:
    """An entry's or event's key: its occurrence, else its turn (and role)."""
    occ = fields.get("occ")
    if occ is not None:
        return str(occ)
    turn = fields.get("turn")
    if turn is None:
        return ""
    role = fields.get("role")
    return f"{turn}.{role}" if role is not None else str(turn)


def reached(where: str, kind: str, fields: Mapping[str, Any]) -> None:
    """Kill the process now if this is the armed point (its N-th match)."""
    global _seen
    if _ARMED is None or f"{where}:{kind}:{key_of(fields)}" != _ARMED[0]:
        return
    _seen += 1
    if _seen == _ARMED[1]:
        os.kill(os.getpid(), signal.SIGKILL)


def inherited_failpoint() -> dict[str, str]:
    """The environment that arms the same point, unreached, in a process that
    takes over from this one before it ran anything (`metis run --witness`
    starts the run again under the witness): empty when none is armed."""
    if _ARMED is None or _seen:
        return {}
    spec, count = _ARMED
    return {FAILPOINT_ENV: f"{spec}@{count}"}
