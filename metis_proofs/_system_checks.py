"""The checker mirror's checks: per event kind, `step`'s checks in its order,
each a condition and the invariant ID it reports (`_monitor` takes the first).
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from metis_model._closure import _NEEDS_CANCEL
from metis_model._loop_state import Phase
from metis_trace import MUTATING_KINDS
from metis_trace import CallClass
from metis_trace import Decision
from metis_trace import EffectOutcome
from metis_trace import Mode
from metis_trace import ResultStatus
from metis_trace import RuleBehavior
from metis_trace import RunStatus

from ._perm import DECISION
from ._perm import KIND
from ._perm import MODE
from ._perm import has
from ._perm import mode_at_most_z3
from ._perm import resolve_z3
from ._system_fields import OUT
from ._system_fields import PHASE
from ._system_fields import RUN
from ._system_fields import STATUS
from ._system_sched import LoopScheduling
from ._system_terms import Index
from ._system_terms import Params
from ._system_terms import State

__all__ = ["LoopChecks"]


class LoopChecks(LoopScheduling):
    """The checker mirror's per-event checks."""

    def _checks(self, s: State, p: Params) -> dict[str, list[tuple[z3.BoolRef, str]]]:

        def at(f: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
            return self._at(p, f)

        found = self._found(s, p)
        f = p.facts
        res = resolve_z3(f)
        d = p["d"]
        status = p["status"]
        over = self.over
        unsettled = over.any_call(lambda i: z3.And(s.b("inb", i), z3.Not(s.done(i))))
        sched: list[tuple[z3.BoolRef, str]] = []
        for inv in ("SCHED-1", "SCHED-3", "SCHED-2", "SCHED-6"):
            cond = self._at(
                p,
                lambda i, inv=inv: dict((v, c) for c, v in self._sched_checks(s, p, i))[inv],  # type: ignore[misc]
            )
            sched.append((cond, inv))
        completed = p["rstatus"] == RUN[RunStatus.COMPLETED]
        ended_cancelled = p["outcome"] == OUT[EffectOutcome.CANCELLED]
        deny = DECISION[Decision.DENY]
        covered = over.any_call(
            lambda i: z3.And(p.at("cv", i), z3.Not(z3.And(s.b("inb", i), s.b("running", i))))
        )
        cancel_bad = z3.Or(
            z3.And(z3.Not(p["timeout"]), p["scoped"]),
            z3.And(z3.Not(p["timeout"]), z3.Not(p["sourced"])),
            z3.And(p["timeout"], z3.Or(z3.Not(p["scoped"]), z3.Not(p["limit_ok"]), covered)),
        )
        stubs_bad = z3.Or(
            p["uextra"],
            over.any_call(lambda i: z3.And(s.open(i), p.at("unk", i) != s.may_have_happened(i))),
        )
        return {
            "turn_start": [(z3.Not(p["turn_ok"]), "LOOP-1")],
            "compaction": [
                (p["split"], "CLOSE-6"),
                (s.any_open(), "CLOSE-6"),
                # while streaming, only the overflow retry may cut the context
                (z3.And(s["phase"] == PHASE[Phase.STREAMING], z3.Not(p["retry"])), "LOOP-1"),
                (z3.Not(p["valid"]), "CLOSE-8"),
            ],
            "hook": [
                (z3.Not(found), "LOOP-1"),
                (z3.Not(p["hknown"]), "CHILD-6"),
                (at(lambda i: s.b("decided", i)), "CHILD-6"),
            ],
            "request": [(s.any_open(), "CLOSE-2")],
            "assistant": [(p["dup"], "LOOP-1")],
            "decision": [
                (z3.Not(found), "LOOP-1"),
                (at(lambda i: s.b("decided", i)), "LOOP-1"),
                (z3.And(has(f, RuleBehavior.DENY), d != DECISION[Decision.DENY]), "PERM-2"),
                (z3.And(z3.Or(f.protected, f.secret), d == DECISION[Decision.ALLOW]), "PERM-3"),
                (
                    z3.And(
                        f.mode == MODE[Mode.PLAN],
                        KIND.is_in(f.kind, MUTATING_KINDS),
                        d != DECISION[Decision.DENY],
                    ),
                    "PERM-4",
                ),
                (z3.And(f.mode == MODE[Mode.DONT_ASK], d == DECISION[Decision.ASK]), "PERM-5"),
                (z3.Not(z3.And(res.decision == d, res.stage == p["stage"])), "PERM-1"),
                (z3.Not(p["keyed"]), "SCHED-2"),  # its key clause, before AUTH-4 (not mirrored)
                (at(lambda i: z3.And(s.b("vet", i), d != deny)), "CHILD-6"),
                (
                    at(lambda i: z3.And(z3.Not(s.b("vet", i)), d != deny, s.b("hkpend", i))),
                    "CHILD-6",
                ),
            ],
            "ask_resolved": [
                (z3.Not(found), "LOOP-1"),
                (
                    at(
                        lambda i: z3.Or(
                            z3.Not(s.b("decided", i)),
                            s.e("dec", i) != DECISION[Decision.ASK],
                            s.b("settled", i),
                        )
                    ),
                    "LOOP-1",
                ),
                (
                    z3.And(
                        at(lambda i: s.b("hp", i)),
                        z3.Or(
                            z3.Not(p["by_default"]),
                            p["approved"] != (s["hdef"] == DECISION[Decision.ALLOW]),
                        ),
                    ),
                    "PERM-6",
                ),
            ],
            "effect_start": [
                (z3.Not(found), "AUTH-1"),
                (at(lambda i: s.b("committed", i)), "RETRY-1"),
                (at(lambda i: z3.Not(s.admitted(i))), "AUTH-1"),
                (at(lambda i: z3.Not(s.b("surf", i))), "AUTH-3"),
                (at(lambda i: z3.Or(s.b("running", i), s.b("closed", i))), "LOOP-1"),
                (s["canc"], "SCHED-5"),
                (z3.And(z3.Not(s["eff"]), unsettled), "AUTH-2"),
                *sched,
            ],
            "commit": [
                (z3.Not(found), "LOOP-1"),
                (at(lambda i: z3.Or(z3.Not(s.b("running", i)), s.b("committed", i))), "LOOP-1"),
            ],
            "effect_end": [
                (z3.Not(found), "LOOP-1"),
                (at(lambda i: z3.Not(s.b("running", i))), "LOOP-1"),
                (p["outcome"] == OUT[EffectOutcome.DETACHED], "LOOP-1"),
                (
                    z3.And(
                        p["outcome"] == OUT[EffectOutcome.UNKNOWN],
                        s["phase"] != PHASE[Phase.INTERRUPTED],
                    ),
                    "LOOP-1",
                ),
                (at(lambda i: s.b("committed", i) != p["committed"]), "RETRY-2"),
                (
                    at(
                        lambda i: z3.Or(
                            z3.And(s.b("cov", i), z3.Not(p["committed"]), z3.Not(ended_cancelled)),
                            z3.And(ended_cancelled, z3.Not(s.b("cov", i)), z3.Not(s["stsrc"])),
                        )
                    ),
                    "SCHED-5",
                ),
            ],
            "handshake": [
                (z3.Not(found), "LOOP-1"),
                (
                    at(
                        lambda i: z3.Or(
                            z3.Not(s.is_cls(i, CallClass.BACKGROUND)), z3.Not(s.b("running", i))
                        )
                    ),
                    "SCHED-4",
                ),
                (self._job_at(s, p), "SCHED-4"),
            ],
            "job_done": [(z3.Or(z3.Not(self._job_at(s, p)), z3.Not(p["occ_match"])), "SCHED-4")],
            "result": [
                (z3.Not(found), "CLOSE-4"),
                (at(lambda i: s.b("closed", i)), "CLOSE-1"),
                (
                    z3.And(
                        s["phase"] == PHASE[Phase.RESUMED],
                        at(lambda i: z3.Not(s.b("committed", i))),
                    ),
                    "RETRY-2",
                ),
                (
                    z3.And(
                        STATUS.is_in(status, _NEEDS_CANCEL),
                        z3.Not(s["canc"]),
                        z3.Not(
                            z3.And(
                                status == STATUS[ResultStatus.CANCELLED],
                                at(lambda i: s.b("cov", i)),
                            )
                        ),
                    ),
                    "SCHED-5",
                ),
                (at(lambda i: s.b("running", i)), "LOOP-1"),
                (
                    z3.And(
                        status == STATUS[ResultStatus.OK],
                        at(lambda i: z3.Not(s.b("finished", i))),
                    ),
                    "LOOP-1",
                ),
                (
                    z3.And(
                        status == STATUS[ResultStatus.DENIED],
                        at(lambda i: z3.Not(s.refused(i))),
                    ),
                    "LOOP-1",
                ),
                (
                    z3.And(
                        status != STATUS[ResultStatus.CANCELLED],
                        at(
                            lambda i: z3.And(
                                s.b("finished", i),
                                s.e("out", i) == OUT[EffectOutcome.CANCELLED],
                                z3.Not(s.b("committed", i)),
                            )
                        ),
                    ),
                    "SCHED-5",
                ),
            ],
            "results_sent": [
                (s.any_open(), "CLOSE-2"),
                (z3.Not(p["inorder"]), "CLOSE-3"),
                (z3.Not(p["ids_known"]), "CLOSE-4"),
                (z3.Not(p["ids_inorder"]), "CLOSE-3"),
            ],
            "cancel": [(cancel_bad, "SCHED-5")],
            "repair": [
                (z3.Not(p["exact"]), "CLOSE-5"),
                # RETRY-2: a committed call is answered by its commit, never stubbed
                (over.any_call(lambda i: z3.And(s.open(i), s.b("committed", i))), "RETRY-2"),
                (stubs_bad, "RETRY-3"),
                (z3.Not(p["ids_known"]), "CLOSE-4"),
                (z3.Not(p["ids_inorder"]), "CLOSE-3"),
            ],
            "spawn": [
                (p["tools_extra"], "CHILD-1"),
                (
                    z3.And(p["parent_mode"] == MODE[Mode.PLAN], p["child_mode"] != MODE[Mode.PLAN]),
                    "CHILD-3",
                ),
                (z3.Not(mode_at_most_z3(p["child_mode"], p["parent_mode"])), "CHILD-2"),
                # a recorded request (req_none false): refused when more
                # permissive than the parent's, else granted as asked
                (
                    z3.And(
                        z3.Not(p["req_none"]),
                        p["parent_mode"] != MODE[Mode.PLAN],
                        z3.Or(
                            z3.Not(mode_at_most_z3(p["req"], p["parent_mode"])),
                            p["child_mode"] != p["req"],
                        ),
                    ),
                    "CHILD-2",
                ),
                (z3.And(p["child_mode"] == MODE[Mode.PLAN], p["locked"]), "CHILD-3"),
            ],
            "run_end": [
                (z3.And(completed, s["phase"] != PHASE[Phase.ANSWERED]), "LOOP-2"),
                (z3.And(completed, s.any_job()), "SCHED-4"),
                (
                    z3.And(p["rstatus"] != RUN[RunStatus.INTERRUPTED], s.any_open()),
                    "CLOSE-2",
                ),
            ],
        }
