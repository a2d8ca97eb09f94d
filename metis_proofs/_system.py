"""The agent loop as a z3 transition system (pySMT style: init / trans / bad).

Two layers share one state space:

* the *checker mirror*: for any abstract state and any event, the variable
  `viol` of the next state is the invariant ID that `metis_model.step` reports
  first for that event (or `ok`). It follows `step` (`_loop.py` and the
  handler modules it dispatches to) check by check, in the same order, and
  a Hypothesis test compares the two on concrete steps;
* the *protocol*: which events a correct runtime may emit (the guards of a
  nondeterministic runtime, like `simulate`). Ablation flags weaken a guard.

`bad` is "the checker reported X": `viol == X`. A step is only possible from
a state with `viol == ok`, so every path stops at its first divergence, just
as `check_trace` does. With `protocol=False` the system is the checker alone
and any event may happen; the tests use that to compare the mirror with the
Python model on states no correct runtime would reach.

Abstraction: a batch has at most `slots` calls (slots are reused by the next
batch), at most `jobs` background jobs are outstanding, queue keys are two
(a Bool), and the facts of a decision have `rule_slots` rules. Footprints are
`regions` abstract areas per call (read and written), enough to tell which
Safe call conflicts with which Queue call (an Exclusive call's conflicts are
caught by SCHED-1/3 first, so its footprint is not encoded). Hooks are what
the label says of them (the call is covered, this run was the last one it
needed, the hook is in force); the tool surface is a Bool per call. Turn
numbers, ids, timestamps and text live only in the conversion to a trace.

Here: `init`, `bad`, `trans` (and the label constraints and `_monitor` it
applies). The parts `LoopSystem` inherits, one concern a module:
`_system_space` (variables, cleared slots, reading an event), `_system_checks`
(the mirror's per-event checks), `_system_sched` (starting a call: SCHED
checks, `_may_start`), `_system_protocol` (the guards), `_system_updates` (the
next state) and `_system_lemmas` (k-induction candidates); the vocabulary is in
`_system_fields`, `Slots` / `State` / `Params` in `_system_terms`, `LoopConfig`
and the ablations in `_system_config`.
"""

from __future__ import annotations

from collections.abc import Sequence

import z3

from metis_model._loop_state import Phase
from metis_trace import EVENT_KINDS

from ._system_checks import LoopChecks
from ._system_fields import _FROZEN
from ._system_fields import _GLOBAL
from ._system_fields import _REGION_FIELDS
from ._system_fields import _SLOT_FIELDS
from ._system_fields import _STATE_BOOLS
from ._system_fields import CHECK
from ._system_fields import OK
from ._system_fields import PHASE
from ._system_lemmas import LoopLemmas
from ._system_protocol import LoopProtocol
from ._system_terms import Params
from ._system_terms import State
from ._system_terms import queue_edit_z3
from ._system_updates import LoopUpdates

__all__ = ["LoopSystem"]


def _first(checks: Sequence[tuple[z3.BoolRef, str]], otherwise: z3.ExprRef) -> z3.ExprRef:
    out = otherwise
    for cond, inv in reversed(checks):
        out = z3.If(cond, CHECK[inv], out)
    return out


class LoopSystem(LoopChecks, LoopProtocol, LoopUpdates, LoopLemmas):
    """init / trans / bad over `State`s; see the module docstring."""

    # --- init ------------------------------------------------------------

    def init(self, s: State) -> z3.BoolRef:
        parts = [
            s["phase"] == PHASE[Phase.READY],
            s["viol"] == CHECK[OK],
            z3.Not(s["eff"]),
            z3.Not(s["canc"]),
            z3.Not(s["stsrc"]),
        ]
        if self.parametric:
            parts.append(
                self.over.all_calls(lambda i: z3.And(z3.Not(s.b("inb", i)), *self.cleared(s, i)))
            )
            parts.append(self.over.all_calls(lambda j: z3.Not(s.b("job", j))))
            return z3.And(parts)
        for i in range(self.K):
            parts += [s[n] == v for n, v in self.canonical(i).items()]
        parts += [z3.Not(s.b("job", j)) for j in range(self.J)]
        return z3.And(parts)

    # --- bad -------------------------------------------------------------

    def bad(self, s: State, inv: str | None = None) -> z3.BoolRef:
        """`viol == inv`, or any violation when `inv` is None."""
        if inv is None:
            return s["viol"] != CHECK[OK]
        return s["viol"] == CHECK[inv]

    # --- trans -----------------------------------------------------------

    def trans(self, s: State, p: Params, t: State) -> z3.BoolRef:
        parts = [s["viol"] == CHECK[OK], self._wellformed(p), self._structural(s, p)]
        parts += [t[n] == s[n] for n in _FROZEN]
        if self.config.protocol:
            parts.append(self._protocol(s, p))
        parts.append(t["viol"] == self._monitor(s, p))
        upd = self._updates(s, p)
        if self.parametric:
            for name in (*_GLOBAL, *_STATE_BOOLS):
                if name not in _FROZEN and name != "viol":
                    parts.append(t[name] == upd.build(name, s[name]))
            for f in (*_SLOT_FIELDS, "job"):
                parts.append(
                    self.over.all_calls(lambda i, f=f: t.b(f, i) == upd.build_at(f, s.b(f, i), i))  # type: ignore[misc]
                )
            for f in _REGION_FIELDS:
                parts.append(
                    self.over.all_calls(
                        lambda i, f=f: self.over.all_calls(  # type: ignore[misc]
                            lambda r: t.region(f, i, r) == upd.build_at(f, s.region(f, i, r), i, r)
                        )
                    )
                )
            return z3.And(parts)
        for name in self.state_names():
            if name in _FROZEN or name == "viol":
                continue
            parts.append(t[name] == upd.build(name, s[name]))
        return z3.And(parts)

    def _wellformed(self, p: Params) -> z3.BoolRef:
        if self.parametric:  # no upper bounds: any call, job or batch size
            return z3.And(
                p["slot"] >= 0,
                p["jslot"] >= 0,
                p["n"] >= 0,
                z3.Implies(p["dup"], p["n"] >= 2),
            )
        return z3.And(
            p["slot"] >= 0,
            p["slot"] <= self.K,
            p["jslot"] >= 0,
            p["jslot"] <= self.J,
            p["n"] >= 0,
            p["n"] <= self.K,
            z3.Implies(self._ev(p, "handshake"), p["jslot"] < self.J),
            z3.Implies(p["dup"], p["n"] >= 2),
        )

    def _structural(self, s: State, p: Params) -> z3.BoolRef:
        """What every concrete event's label satisfies in its state (the
        abstraction computes these from the same facts): a hook run never makes
        hooks pending again; a cancel names only calls of the batch, some if it
        names its calls within a limit; a repair that stubs exactly the open
        calls and marks a closed or foreign one unknown marks one it does not stub;
        known ids of no calls are in order."""
        over = self.over
        parts = [
            z3.Implies(
                z3.And(self._ev(p, "hook"), self._at(p, lambda i: z3.Not(s.b("hkpend", i)))),
                p["hdone"],
            ),
            z3.Implies(
                z3.And(self._ev(p, "cancel"), p["scoped"], p["limit_ok"]),
                over.any_call(lambda i: p.at("cv", i)),
            ),
        ]
        parts.append(
            over.all_calls(
                lambda i: z3.Implies(z3.And(self._ev(p, "cancel"), p.at("cv", i)), s.b("inb", i))
            )
        )
        parts.append(
            over.all_calls(
                lambda i: z3.Implies(
                    z3.And(self._ev(p, "repair"), p["exact"], p.at("unk", i), z3.Not(s.open(i))),
                    p["uextra"],
                )
            )
        )
        # Only a Queue edit call can be unkeyed, and only by a write (which
        # is a Queue write: it has a region).
        parts.append(
            z3.Implies(
                z3.And(self._ev(p, "decision"), z3.Not(p["keyed"])),
                z3.And(
                    queue_edit_z3(p["dcls"], p.facts.kind),
                    over.any_region(lambda r: p.at("dwr", r)),
                ),
            )
        )
        # With no calls, ids that are all known are all of them, in order.
        parts.append(z3.Implies(z3.And(p["ids_known"], z3.Not(s.b("inb", 0))), p["ids_inorder"]))
        return z3.And(parts)

    # --- the checker mirror ---------------------------------------------

    def _monitor(self, s: State, p: Params) -> z3.ExprRef:
        """The ID `step` reports first for this event, or `ok`."""
        hpend = self.over.any_call(lambda i: s.b("hp", i))
        settles_it = z3.And(self._ev(p, "ask_resolved"), self._at(p, lambda i: s.b("hp", i)))
        per_kind = self._checks(s, p)
        body: z3.ExprRef = CHECK[OK]
        for kind in reversed(EVENT_KINDS):
            if per_kind.get(kind):
                body = z3.If(self._ev(p, kind), _first(per_kind[kind], CHECK[OK]), body)
        rerun = z3.And(
            self._ev(p, "effect_start"),
            PHASE.is_in(s["phase"], (Phase.INTERRUPTED, Phase.RESUMED)),
            self._at(p, lambda i: z3.And(s.b("inb", i), s.b("committed", i))),
        )
        pre = [
            (z3.And(hpend, z3.Not(settles_it)), "PERM-6"),
            (rerun, "RETRY-1"),
            (z3.Not(self.enabled_in_phase(s["phase"], p["ev"])), "LOOP-1"),
        ]
        return _first(pre, body)
