"""The loop system's protocol: which events a correct runtime may emit next
(the guards of a nondeterministic runtime, like `simulate`); each ablation
weakens one guard.
"""

from __future__ import annotations

from collections.abc import Callable

import z3

from metis_model._loop_state import Phase
from metis_trace import EVENT_KINDS
from metis_trace import CallClass
from metis_trace import Decision
from metis_trace import EffectOutcome
from metis_trace import MetisModelError
from metis_trace import Mode
from metis_trace import ResultStatus
from metis_trace import RunStatus

from ._perm import DECISION
from ._perm import MODE
from ._perm import child_mode_z3
from ._perm import resolve_z3
from ._perm import waitless
from ._sorts import ors
from ._system_fields import OUT
from ._system_fields import PHASE
from ._system_fields import RUN
from ._system_fields import STATUS
from ._system_sched import LoopScheduling
from ._system_terms import Index
from ._system_terms import Params
from ._system_terms import State

__all__ = ["LoopProtocol"]


class LoopProtocol(LoopScheduling):
    """What a correct runtime may do next."""

    def _result_ok(self, s: State, p: Params, i: int) -> z3.BoolRef:
        st = p["status"]
        fin, out = s.b("finished", i), s.e("out", i)
        by_status = {
            ResultStatus.OK: z3.And(fin, out == OUT[EffectOutcome.OK]),
            ResultStatus.ERROR: z3.And(fin, out == OUT[EffectOutcome.ERROR]),
            ResultStatus.DENIED: s.refused(i),
            ResultStatus.CANCELLED: z3.And(
                z3.Or(s["canc"], s.b("cov", i)), fin, out == OUT[EffectOutcome.CANCELLED]
            ),
            ResultStatus.SKIPPED: z3.And(s["canc"], z3.Not(fin)),
            # repair stubs, never the runtime's results
            ResultStatus.INTERRUPTED: z3.BoolVal(False),
            ResultStatus.UNKNOWN: z3.BoolVal(False),
        }
        return z3.And(
            z3.Not(s.b("closed", i)),
            z3.Not(s.b("running", i)),
            STATUS.table(st, by_status),
            z3.Implies(s["phase"] == PHASE[Phase.RESUMED], s.b("committed", i)),
        )

    def _protocol(self, s: State, p: Params) -> z3.BoolRef:
        """What a correct runtime may do next (the ablations weaken it)."""
        cfg = self.config

        def at(f: Callable[[Index], z3.BoolRef]) -> z3.BoolRef:
            return self._at(p, f)

        f = p.facts
        res = resolve_z3(f)
        bg = CallClass.BACKGROUND
        child, refused = child_mode_z3(
            s["mode"], p["req"], p["req_none"], cloned=not cfg.ablated("child-gate-not-cloned")
        )
        exact = (
            p["exact"] == z3.Not(s.any_open())  # it stubs nothing
            if cfg.ablated("no-closure-repair")
            else p["exact"]
        )
        # RETRY-3: a stub is unknown exactly when the call may have had an
        # effect (ablated: every stub says interrupted).
        told_apart = self.over.all_calls(
            lambda i: z3.Implies(
                s.open(i),
                p.at("unk", i)
                == (
                    z3.BoolVal(False)
                    if cfg.ablated("stub-started-as-interrupted")
                    else s.may_have_happened(i)
                ),
            )
        )
        deny = DECISION[Decision.DENY]
        enforced = (
            z3.BoolVal(True)
            if cfg.ablated("hooks-not-run")
            else z3.Not(
                at(lambda i: z3.And(z3.Not(s.b("vet", i)), p["d"] != deny, s.b("hkpend", i)))
            )
        )
        hdef_allows = s["hdef"] == DECISION[Decision.ALLOW]
        guards: dict[str, z3.BoolRef] = {
            "turn_start": p["turn_ok"],
            "compaction": z3.And(
                z3.Not(p["split"]),
                p["valid"],
                z3.Implies(s["phase"] == PHASE[Phase.STREAMING], p["retry"]),
            ),
            "hook": z3.And(
                at(lambda i: z3.And(s.b("inb", i), z3.Not(s.b("decided", i)), s.b("hkpend", i))),
                p["hknown"],
            ),
            "request": z3.BoolVal(True),
            "stream_repair": z3.BoolVal(True),
            "assistant": z3.Not(p["dup"]),
            "decision": z3.And(
                at(
                    lambda i: z3.And(
                        s.b("inb", i),
                        z3.Not(s.b("decided", i)),
                        self.over.before_done(i, s.done),
                    )
                ),
                f.mode == s["mode"],
                res.decision == p["d"],
                res.stage == p["stage"],
                p["droute"] == s["route"],
                z3.Not(at(lambda i: z3.And(s.b("vet", i), p["d"] != deny))),
                enforced,
                # SCHED-2's key clause: a Queue edit call writes only within its key
                z3.BoolVal(True) if cfg.ablated("queue-edit-unkeyed") else p["keyed"],
            ),
            "ask_resolved": z3.And(
                at(
                    lambda i: z3.And(
                        s.b("inb", i),
                        s.b("decided", i),
                        s.e("dec", i) == DECISION[Decision.ASK],
                        z3.Not(s.b("settled", i)),
                    )
                ),
                z3.If(
                    waitless(s["route"]),
                    z3.And(p["by_default"], p["approved"] == hdef_allows),
                    z3.Not(p["by_default"]),
                ),
            ),
            "effect_start": z3.And(
                z3.Not(s["canc"]),
                at(lambda i: z3.And(s.b("inb", i), self._may_start(s, p, i))),
            ),
            "commit": at(
                lambda i: z3.And(s.b("inb", i), s.b("running", i), z3.Not(s.b("committed", i)))
            ),
            "effect_end": z3.And(
                at(
                    lambda i: z3.And(
                        s.b("inb", i),
                        s.b("running", i),
                        z3.Implies(s.is_cls(i, bg), p["outcome"] != OUT[EffectOutcome.OK]),
                        p["committed"] == s.b("committed", i),
                        z3.Implies(
                            p["outcome"] == OUT[EffectOutcome.CANCELLED],
                            z3.Or(s["stsrc"], s.b("cov", i)),
                        ),
                        # a call its timeout named ends cancelled, unless it committed
                        z3.Implies(
                            z3.And(s.b("cov", i), z3.Not(p["committed"])),
                            p["outcome"] == OUT[EffectOutcome.CANCELLED],
                        ),
                    )
                ),
                z3.Implies(p["committed"], p["outcome"] != OUT[EffectOutcome.CANCELLED]),
                p["outcome"] != OUT[EffectOutcome.DETACHED],
                z3.Implies(
                    p["outcome"] == OUT[EffectOutcome.UNKNOWN],
                    s["phase"] == PHASE[Phase.INTERRUPTED],
                ),
            ),
            "handshake": z3.And(
                at(lambda i: z3.And(s.b("inb", i), s.b("running", i), s.is_cls(i, bg))),
                z3.Not(self._job_at(s, p)),
            ),
            "job_done": z3.And(self._job_at(s, p), p["occ_match"]),
            "result": at(lambda i: z3.And(s.b("inb", i), self._result_ok(s, p, i))),
            "results_sent": z3.And(
                z3.Not(s.any_open()), p["inorder"], p["ids_known"], p["ids_inorder"]
            ),
            # A timeout names the running calls past its limit; any other
            # cause covers the whole batch.
            "cancel": z3.If(
                p["timeout"],
                z3.And(
                    p["scoped"],
                    p["limit_ok"],
                    self.over.any_call(lambda i: p.at("cv", i)),
                    self.over.all_calls(
                        lambda i: z3.Implies(
                            p.at("cv", i), z3.And(s.b("inb", i), s.b("running", i))
                        )
                    ),
                ),
                z3.And(z3.Not(p["scoped"]), p["sourced"]),
            ),
            "interrupt": z3.BoolVal(True),
            # A stop's recorded sources: facts, enabled wherever `ENABLED` has them.
            "signal": z3.BoolVal(True),
            "stop_request": z3.BoolVal(True),
            "sink_error": z3.BoolVal(True),
            "resume": z3.Not(s.any_running()),
            "repair": z3.And(
                z3.Not(s.any_running()),
                # the committed calls were answered first, from the journal (RETRY-2)
                z3.Not(self.over.any_call(lambda i: z3.And(s.open(i), s.b("committed", i)))),
                exact,
                z3.Not(p["uextra"]),
                told_apart,
                p["ids_known"],
                p["ids_inorder"],
            ),
            "spawn": z3.And(
                p["parent_mode"] == s["mode"],
                z3.Not(p["tools_extra"]),
                z3.Implies(child == MODE[Mode.PLAN], z3.Not(p["locked"])),
                p["child_mode"] == child,
                z3.Not(refused),
            ),
            "run_end": z3.And(
                z3.Implies(
                    p["rstatus"] == RUN[RunStatus.COMPLETED],
                    z3.And(s["phase"] == PHASE[Phase.ANSWERED], z3.Not(s.any_job())),
                ),
                z3.Implies(p["rstatus"] != RUN[RunStatus.INTERRUPTED], z3.Not(s.any_open())),
                z3.Implies(
                    p["rstatus"] == RUN[RunStatus.INTERRUPTED],
                    s["phase"] == PHASE[Phase.INTERRUPTED],
                ),
            ),
        }
        missing = set(EVENT_KINDS) - set(guards)
        if missing:  # pragma: no cover - a new event kind needs a guard
            raise MetisModelError(f"protocol has no guard for {sorted(missing)}")
        hpend = self.over.any_call(lambda i: s.b("hp", i))
        return z3.And(
            self.enabled_in_phase(s["phase"], p["ev"]),
            z3.Implies(
                hpend,
                z3.And(self._ev(p, "ask_resolved"), at(lambda i: s.b("hp", i))),
            ),
            ors([z3.And(self._ev(p, k), g) for k, g in guards.items()]),
        )
