"""The loop system's vocabulary: the invariant IDs the checker mirror reports,
the z3 sorts of its enums, and the names of its state and label variables.
"""

from __future__ import annotations

from metis_model._invariants import BY_ID
from metis_model._loop_state import Phase
from metis_trace import EVENT_KINDS
from metis_trace import CallClass
from metis_trace import EffectOutcome
from metis_trace import ResultStatus
from metis_trace import RunStatus

from ._perm import DECISION
from ._perm import MODE
from ._perm import ROUTE
from ._perm import STAGE
from ._sorts import finite_enum
from ._sorts import finite_names
from ._system_config import REGIONS

__all__ = [
    "CHECK",
    "CHECKED",
    "CLS",
    "EVENT",
    "NOT_MIRRORED",
    "OK",
    "OUT",
    "PHASE",
    "RUN",
    "STATUS",
]


# Every ID the mirror can report: what `_loop.step` (and `spawn_violation`)
# report, except TRACE-1 (sequence numbers, timestamps, causal edges are
# concrete text that the conversion to a trace always gets right). A test
# scans `step`'s modules so that a new ID there cannot go unmirrored.
CHECKED: tuple[str, ...] = (
    "LOOP-1",
    "LOOP-2",
    "AUTH-1",
    "AUTH-2",
    "AUTH-3",
    "PERM-1",
    "PERM-2",
    "PERM-3",
    "PERM-4",
    "PERM-5",
    "PERM-6",
    "CLOSE-1",
    "CLOSE-2",
    "CLOSE-3",
    "CLOSE-4",
    "CLOSE-5",
    "CLOSE-6",
    "CLOSE-8",
    "SCHED-1",
    "SCHED-2",
    "SCHED-3",
    "SCHED-4",
    "SCHED-5",
    "SCHED-6",
    "CHILD-1",
    "CHILD-2",
    "CHILD-3",
    "CHILD-6",
    "RETRY-1",
    "RETRY-2",
    "RETRY-3",
)
# RETRY-4 is about a flag the abstraction drops (a commit written from an
# exit record): the model's check and its property tests cover it. AUTH-4
# reads paths, commands and rule texts (the header's settings against the
# call's input), which the abstraction drops too: `_derive` and its property
# and differential tests cover it.
NOT_MIRRORED: tuple[str, ...] = ("TRACE-1", "RETRY-4", "AUTH-4")
for _id in CHECKED:  # every mirrored ID is a real invariant
    BY_ID[_id]
OK = "ok"

PHASE = finite_enum(Phase)
CLS = finite_enum(CallClass)
OUT = finite_enum(EffectOutcome)
STATUS = finite_enum(ResultStatus)
RUN = finite_enum(RunStatus)
EVENT = finite_names("Event", EVENT_KINDS)
CHECK = finite_names("Check", (OK, *CHECKED))

# Per-slot fields: name -> (sort factory, canonical value after clearing).
_SLOT_BOOLS = (
    "inb",
    "decided",
    "settled",
    "appr",
    "key",
    "running",
    "started",
    "finished",
    "committed",
    "closed",
    "hp",
    "cov",  # a timeout's cancel covers it
    "surf",  # its tool is in the header's surface
    "hkpend",  # a hook that covers it has not run yet
    "vet",  # a hook vetoed it
)
_SLOT_ENUMS = {"dec": DECISION, "cls": CLS, "out": OUT}
_GLOBAL = {"phase": PHASE, "mode": MODE, "route": ROUTE, "hdef": DECISION, "viol": CHECK}
_FROZEN = ("mode", "route", "hdef")
# eff: effects started in the batch; canc: the batch was cancelled or
# interrupted; stsrc: and that stop explains an effect ending cancelled (a
# cancel of the whole batch, or an interrupt naming its source: SCHED-5).
_STATE_BOOLS = ("eff", "canc", "stsrc")


def _region_names(i: int) -> list[str]:
    return [f"{f}{i}_{r}" for f in ("rd", "wr") for r in range(REGIONS)]


_SLOT_FIELDS = (*_SLOT_BOOLS, *_SLOT_ENUMS)
_REGION_FIELDS = ("rd", "wr")


_PARAM_BOOLS = (
    "dkey",
    "approved",
    "by_default",
    "committed",
    "turn_ok",
    "dup",
    "split",
    "retry",
    "valid",  # compaction: the transcript it left is provider-valid
    "inorder",
    "ids_known",  # results_sent / repair: every id is a call's of the batch
    "ids_inorder",  # ... and they are the calls' ids in call order
    "exact",
    "uextra",  # repair: `unknown` names a call it does not stub
    "occ_match",
    "tools_extra",
    "locked",
    "req_none",
    "vetoed",  # hook: this run vetoed the call
    "hdone",  # hook: after it, no hook that covers the call is left to run
    "hknown",  # hook: it is in force
    "scoped",  # cancel: it names the calls it covers
    "timeout",  # cancel: its cause is a timeout
    "limit_ok",  # cancel: it names calls of the batch past the limit each recorded
    # cancel, interrupt: its causes name a recorded source (a signal or stop
    # request; for a sink failure, the sink's error) no other stop used: an
    # abstract fact, as `limit_ok` is (SCHED-5; specs/proofs.md)
    "sourced",
    # decision: not a Queue edit call whose recorded writes its key does not
    # name (SCHED-2's key clause, `_interference.queue_key_problem`): an abstract
    # fact, as `sourced` is (specs/proofs.md)
    "keyed",
)
# Per slot: surf<i>, hneed<i> (assistant: in the surface, covered by a hook),
# cv<i> (cancel: names it), unk<i> (repair: stubs it unknown); per region:
# drd<r>, dwr<r> (decision: the footprint).
_PARAM_SLOT_BOOLS = ("surf", "hneed", "cv", "unk")
_PARAM_REGION_BOOLS = ("drd", "dwr")
_PARAM_INTS = ("slot", "jslot", "n")
_PARAM_ENUMS = {
    "ev": EVENT,
    "d": DECISION,
    "stage": STAGE,
    "dcls": CLS,
    "droute": ROUTE,
    "outcome": OUT,
    "status": STATUS,
    "rstatus": RUN,
    "parent_mode": MODE,
    "child_mode": MODE,
    "req": MODE,
}
