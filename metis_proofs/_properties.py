"""Every proved property, by ID, and how it is proved.

The proof logic lives here so that the CLI works from an installed package;
`metis prove` runs every entry of `PROPERTIES` and writes its SMT-LIB2 file.

* PERM-x and CHILD-2 are claims about `resolve_z3` / `settle_z3` /
  `child_mode_z3` over symbolic facts: the negated claim is unsat, so the
  claim holds for every input (`proved`).
* CHILD-4 (`_guard.py`, its pieces `_guard_*.py`): the spawn guard's claim
  over unbounded limits and counts (validity), and its ledger's counts within
  limits (1-induction over spawn and child-end steps); `proved` only when both
  close.
* PLAN-x (`_plan.py`; the encodings in `_plan_*.py`): the cache decision,
  consent binding, references and the cap as validity claims; PLAN-4/5/6 as
  an inductive invariant of the turn system (1-induction).
* Loop properties ("the checker never reports X") go through one shared BMC
  run (iterative deepening with assumption literals) and one Houdini
  invariant, then k-induction per ID: `proved` when induction closes, else
  `bounded(depth)`; a solver timeout is `unknown`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

import attrs
import z3

from metis_model._invariants import BY_ID
from metis_trace import MUTATING_KINDS
from metis_trace import Decision
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import dumps_trace

from ._convert import decode_path
from ._convert import path_to_trace
from ._engine import BmcOutcome
from ._engine import Induction
from ._engine import Invariant
from ._engine import Unrolling
from ._engine import bmc
from ._engine import houdini
from ._guard import prove_spawn_guard
from ._perm import DECISION
from ._perm import KIND
from ._perm import MODE
from ._perm import ROUTE
from ._perm import STAGE
from ._perm import SymFacts
from ._perm import child_mode_z3
from ._perm import decision_rank
from ._perm import has
from ._perm import mode_at_most_z3
from ._perm import resolve_z3
from ._perm import settle_z3
from ._perm import stage_decides
from ._plan import PLAN_PROPERTIES
from ._plan import prove_plan
from ._results import ALL_INPUTS
from ._results import NO_CLAIM
from ._results import ProofResult
from ._results import Verdict
from ._results import refuted_scope
from ._results import smt_result
from ._rule_cutoff import CutoffProof
from ._rule_cutoff import prove_rule_cutoff
from ._rules import BEHAVIOR
from ._rules import SymRule
from ._rules import authority_rank
from ._smt2 import Query
from ._smt2 import smt2_query
from ._smt2 import write_smt2
from ._sorts import ands
from ._sorts import timed
from ._system import LoopSystem
from ._system_config import LoopConfig
from ._widths import WidthProof
from ._widths import Widths
from ._widths import all_widths_scope

PERM_RULE_SLOTS = len(RuleBehavior) + 1  # every behaviour set, plus a same-behaviour tie
CHILD_EXTRA_SLOTS = 2
DEFAULT_DEPTH = 20
DEFAULT_TIMEOUT_S = 120.0
# Per query of the all-widths proof (an MBQI timeout: the finite scope stands).
WIDTHS_TIMEOUT_S = 10.0


@attrs.frozen
class Property:
    id: str
    invariant: str
    title: str
    method: str  # "smt" | "k-induction"


def _p(inv: str, title: str, method: str) -> Property:
    return Property(inv, inv, title, method)


PROPERTIES: tuple[Property, ...] = (
    _p("PERM-1", "the staged order is total: one stage decides", "smt"),
    _p("PERM-2", "deny dominates any allow", "smt"),
    _p("PERM-3", "bypass-immune checks hold in every mode", "smt"),
    _p("PERM-4", "plan admits no mutating effect", "smt"),
    _p("PERM-5", "dontAsk never returns ask", "smt"),
    _p("PERM-6", "headless never leaves an ask pending", "smt"),
    _p("CHILD-2", "a child gate is never more permissive", "smt"),
    _p("CHILD-4", "spawn guard: check order, counts within limits", "smt"),
    _p("AUTH-1", "no effect without allow or approval", "k-induction"),
    _p("AUTH-2", "batch preflight before any effect", "k-induction"),
    _p("CLOSE-1", "at most one result per occurrence", "k-induction"),
    _p("CLOSE-2", "closed before next request / end", "k-induction"),
    _p("CLOSE-3", "results in call order", "k-induction"),
    _p("CLOSE-4", "no result without an open call", "k-induction"),
    _p("CLOSE-5", "repair stubs exactly the open calls", "k-induction"),
    _p("CLOSE-6", "compaction never splits a call", "k-induction"),
    _p("SCHED-1", "exclusive runs alone", "k-induction"),
    _p("SCHED-2", "queue: FIFO per key, no overlap", "k-induction"),
    _p("SCHED-3", "exclusive is a barrier", "k-induction"),
    _p("SCHED-4", "background handshake pairing", "k-induction"),
    _p("SCHED-5", "cancel needs a cancel or interrupt", "k-induction"),
    _p("SCHED-6", "reads never overlap writes", "k-induction"),
    _p("AUTH-3", "no effect outside the tool surface", "k-induction"),
    _p("RETRY-1", "no automatic re-run after commit", "k-induction"),
    _p("RETRY-2", "commits in the trace before reports", "k-induction"),
    _p("RETRY-3", "resume tells unknown from not run", "k-induction"),
    _p("CHILD-1", "a child sees no tool its parent lacks", "k-induction"),
    _p("CHILD-3", "plan parent, plan-locked child", "k-induction"),
    _p("CHILD-6", "hooks run before decisions, vetoes deny", "k-induction"),
    _p("LOOP-1", "every event enabled in its phase", "k-induction"),
    _p("LOOP-2", "completed only after an answer", "k-induction"),
    _p("PLAN-2", "references read completed earlier steps", "smt"),
    _p("PLAN-4", "one recovery, never after a commit", "smt"),
    _p("PLAN-5", "operational errors are not recovered", "smt"),
    _p("PLAN-6", "resume never repeats a committed mutation", "smt"),
    _p("PLAN-7", "a cache hit has the current signatures", "smt"),
    _p("PLAN-8", "a cache hit is grounded", "smt"),
    _p("PLAN-9", "an approval admits only its action", "smt"),
    _p("PLAN-12", "the step cap is never raised", "smt"),
)
BY_PROPERTY: Mapping[str, Property] = MappingProxyType({p.id: p for p in PROPERTIES})
for _prop in PROPERTIES:  # an ID must exist in the invariant table
    BY_ID[_prop.invariant]


class UnknownProperty(KeyError):
    pass


# --- PERM claims ----------------------------------------------------------


def _perm_1(config: LoopConfig) -> z3.BoolRef:
    f = SymFacts.fresh("f.", PERM_RULE_SLOTS)
    decides = stage_decides(f)
    res = resolve_z3(f)
    exactly_one = z3.Sum([z3.If(d, 1, 0) for _, d in decides]) == 1
    reports_it = ands([z3.Implies(d, res.stage == STAGE[s]) for s, d in decides])
    return z3.And(exactly_one, reports_it)


def _perm_2(config: LoopConfig) -> z3.BoolRef:
    f = SymFacts.fresh("f.", PERM_RULE_SLOTS)
    res = resolve_z3(f)
    deny, allow = BEHAVIOR[RuleBehavior.DENY], BEHAVIOR[RuleBehavior.ALLOW]
    # The brief's form: a deny beats an allow of lower or equal authority...
    pairwise = [
        z3.Implies(
            z3.And(
                a.present,
                a.behavior == deny,
                b.present,
                b.behavior == allow,
                authority_rank(a.source) <= authority_rank(b.source),
            ),
            res.decision != DECISION[Decision.ALLOW],
        )
        for a in f.rules
        for b in f.rules
        if a is not b
    ]
    # ...and the invariant's stronger form: any matching deny rule means deny.
    strong = z3.Implies(has(f, RuleBehavior.DENY), res.decision == DECISION[Decision.DENY])
    return z3.And(strong, *pairwise)


def _perm_3(config: LoopConfig) -> z3.BoolRef:
    f = SymFacts.fresh("f.", PERM_RULE_SLOTS)
    res = resolve_z3(f)
    return z3.Implies(z3.Or(f.protected, f.secret), res.decision != DECISION[Decision.ALLOW])


def _perm_4(config: LoopConfig) -> z3.BoolRef:
    f = SymFacts.fresh("f.", PERM_RULE_SLOTS)
    res = resolve_z3(f)
    mutating = KIND.is_in(f.kind, MUTATING_KINDS)
    return z3.Implies(
        z3.And(f.mode == MODE[Mode.PLAN], mutating), res.decision == DECISION[Decision.DENY]
    )


def _perm_5(config: LoopConfig) -> z3.BoolRef:
    f = SymFacts.fresh("f.", PERM_RULE_SLOTS)
    res = resolve_z3(f)
    return z3.Implies(f.mode == MODE[Mode.DONT_ASK], res.decision != DECISION[Decision.ASK])


def _perm_6(config: LoopConfig) -> z3.BoolRef:
    f = SymFacts.fresh("f.", PERM_RULE_SLOTS)
    res = resolve_z3(f)
    route, hdef, answer = ROUTE.const("route"), DECISION.const("hdef"), z3.Bool("answer")
    settled = settle_z3(route, hdef, answer)
    headless = z3.Or(route == ROUTE[Route.HEADLESS], route == ROUTE[Route.BACKGROUND])
    pending = z3.And(res.decision == DECISION[Decision.ASK], settled.waited)
    return z3.Implies(
        headless,
        z3.And(
            z3.Not(pending),
            settled.by_default,
            settled.approved == (hdef == DECISION[Decision.ALLOW]),
        ),
    )


def _child_2(config: LoopConfig) -> z3.BoolRef:
    parent = SymFacts.fresh("parent.", PERM_RULE_SLOTS)
    keep = [z3.Bool(f"keep{i}") for i in range(PERM_RULE_SLOTS)]
    allow = BEHAVIOR[RuleBehavior.ALLOW]
    kept = tuple(
        SymRule(
            z3.And(r.present, z3.Or(r.behavior != allow, keep[i])),
            r.behavior,
            r.source,
            r.recency,
        )
        for i, r in enumerate(parent.rules)
    )
    extra = SymFacts.fresh("added.", CHILD_EXTRA_SLOTS).rules
    child_mode = MODE.const("child.mode")
    child = attrs.evolve(parent, mode=child_mode, rules=kept + extra)
    added_ok = ands([z3.Implies(r.present, r.behavior != allow) for r in extra])
    narrower = z3.And(mode_at_most_z3(child_mode, parent.mode), added_ok)
    monotone = z3.Implies(
        narrower,
        decision_rank(resolve_z3(child).decision) <= decision_rank(resolve_z3(parent).decision),
    )
    # The clone itself: a spawned child's mode is at most its parent's.
    pm, req, none = MODE.const("spawn.parent"), MODE.const("spawn.requested"), z3.Bool("spawn.none")
    cm, refused = child_mode_z3(pm, req, none, cloned=not config.ablated("child-gate-not-cloned"))
    cloned = z3.Implies(z3.Not(refused), mode_at_most_z3(cm, pm))
    # `mode_at_most` is a partial order (reflexive, antisymmetric, transitive).
    a, b, c = MODE.const("order.a"), MODE.const("order.b"), MODE.const("order.c")
    le = mode_at_most_z3
    order = z3.And(
        le(a, a),
        z3.Implies(z3.And(le(a, b), le(b, a)), a == b),
        z3.Implies(z3.And(le(a, b), le(b, c)), le(a, c)),
    )
    return z3.And(monotone, cloned, order)


PERM_CLAIMS: Mapping[str, Callable[[LoopConfig], z3.BoolRef]] = MappingProxyType(
    {
        "PERM-1": _perm_1,
        "PERM-2": _perm_2,
        "PERM-3": _perm_3,
        "PERM-4": _perm_4,
        "PERM-5": _perm_5,
        "PERM-6": _perm_6,
        "CHILD-2": _child_2,
    }
)


# Claims with their own prover: CHILD-4, the spawn guard's decision function
# (validity) and its ledger's counts (1-induction over spawn/finish).
GUARD_CLAIMS = frozenset({"CHILD-4"})
# The plan path's claims and its turn system's induction (`_plan.py`).
PLAN_CLAIMS = frozenset(p.invariant for p in PLAN_PROPERTIES)


def prove_claim(
    prop: Property,
    out_dir: Path | None,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
    config: LoopConfig | None = None,
) -> ProofResult:
    """Unsat of the negated claim = proved for every input."""
    if prop.id in GUARD_CLAIMS:  # the claim plus the ledger's induction (`_guard.py`)
        return prove_spawn_guard(prop, out_dir, timeout_s)
    if prop.id in PLAN_CLAIMS:
        return prove_plan(prop.invariant, out_dir, timeout_s, prop_id=prop.id)
    start = time.perf_counter()
    negated = z3.Not(PERM_CLAIMS[prop.id](config or LoopConfig()))
    solver = timed(z3.Solver(), timeout_s)
    solver.add(negated)
    r = solver.check()
    seconds = time.perf_counter() - start
    smt2 = None
    if out_dir is not None:
        expect = "unsat" if r == z3.unsat else "sat" if r == z3.sat else "unknown"
        smt2 = str(write_smt2(out_dir, prop, [smt2_query(negated, "negated claim", expect)]))
    if r == z3.unsat:
        return smt_result(
            prop,
            Verdict.PROVED,
            None,
            seconds,
            smt2,
            f"negated claim unsat ({PERM_RULE_SLOTS} rule slots)",
            scope=f"{ALL_INPUTS} (\u2264 {PERM_RULE_SLOTS} rules per decision)",
        )
    if r == z3.sat:
        return smt_result(
            prop,
            Verdict.REFUTED,
            None,
            seconds,
            smt2,
            "negated claim sat",
            witness=str(solver.model()),
            scope=refuted_scope("an input breaks the claim"),
        )
    return smt_result(
        prop,
        Verdict.UNKNOWN,
        None,
        seconds,
        smt2,
        f"solver: {solver.reason_unknown()}",
        scope=NO_CLAIM,
    )


# --- loop properties ------------------------------------------------------


class LoopSession:
    """The shared work of the loop proofs: one BMC run, one Houdini invariant."""

    def __init__(
        self,
        config: LoopConfig | None = None,
        depth: int = DEFAULT_DEPTH,
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
        on_depth: Callable[[int], None] | None = None,
        *,
        lemmas: bool = True,
        widths: bool = True,
        widths_timeout_s: float = WIDTHS_TIMEOUT_S,
    ) -> None:
        """`lemmas=False` proves without Houdini's lemmas (to compare: most
        properties are then not 1-inductive, and come out `bounded`).
        `widths_timeout_s` bounds each all-widths query (the rule cutoff gets
        three times it); on a timeout the finite scope stands."""
        self.system = LoopSystem(config)
        self.lemmas = lemmas
        self.depth = depth
        self.timeout_s = timeout_s
        self.on_depth = on_depth
        self._bmc: BmcOutcome | None = None
        self._invariant: Invariant | bool | None = False
        self._lemma_text: tuple[Query, Query] | None = None
        self._induction: Induction | None = None
        self._widths: Widths | None = None
        self._rules: CutoffProof | None = None
        self.widths_timeout_s = widths_timeout_s if widths else 0.0

    @property
    def bmc(self) -> BmcOutcome:
        if self._bmc is None:
            self._bmc = bmc(
                self.system,
                None,
                self.depth,
                timeout_s=self.timeout_s,
                on_depth=self.on_depth,
                invariant=self.invariant,
            )
        return self._bmc

    @property
    def invariant(self) -> Invariant | None:
        if self._invariant is False:
            self._invariant = (
                houdini(self.system, self.timeout_s)
                if self.lemmas
                else Invariant(
                    (), tuple(n for n, _ in self.system.lemmas(self.system.state("x"))), 0.0
                )
            )
        assert not isinstance(self._invariant, bool)
        return self._invariant

    def _all_widths(self, inv_id: str, invariant: Invariant | None, k: int) -> float | None:
        """The parametric proof of `inv_id` (`_widths.py`): its seconds, or None."""
        if invariant is None or k != 1 or self.widths_timeout_s <= 0:
            return None
        if self._widths is None:
            self._widths = Widths(self.system.config, invariant, self.widths_timeout_s)
        return self._widths.prove(inv_id)

    @property
    def rule_cutoff(self) -> CutoffProof:
        """Any number of rules per decision (`_rule_cutoff.py`), run once."""
        if self._rules is None:
            self._rules = prove_rule_cutoff(self.system.config, 3 * self.widths_timeout_s)
        return self._rules

    @property
    def shared_seconds(self) -> dict[str, float]:
        """The work every loop row shares (Houdini, the one BMC run), apart
        from each row's own seconds."""
        out: dict[str, float] = {}
        if isinstance(self._invariant, Invariant):
            out["houdini"] = round(self._invariant.seconds, 3)
        if self._bmc is not None:
            out["bmc"] = round(self._bmc.seconds, 3)
        if self._widths is not None and isinstance(self._widths.proof, WidthProof):
            out["widths"] = round(self._widths.proof.seconds, 3)
        if self._rules is not None:
            out["rules"] = round(sum(self._rules.seconds.values()), 3)
        return out

    def prove(self, prop: Property, out_dir: Path | None, max_k: int = 3) -> ProofResult:
        """One loop property. Its `seconds` are its own: the induction step
        for it (or, when refuted, the BMC depths up to its violation); the
        shared Houdini and BMC work is in `shared_seconds`."""
        inv_id = prop.invariant
        run = self.bmc
        bounds = self.system.config.bounds()
        start = time.perf_counter()
        if inv_id in run.found:
            k, model = run.found[inv_id]
            smt2 = self._write_bmc(prop, out_dir, k, "sat")
            header, events = path_to_trace(
                decode_path(model, run.unrolling, k), self.system.K, run_id=f"refuted-{inv_id}"
            )
            witness = None
            if out_dir is not None:
                out_dir.mkdir(parents=True, exist_ok=True)
                trace = out_dir / f"{inv_id}.cex.jsonl"
                trace.write_text(dumps_trace(header, events))
                witness = str(trace)
            return ProofResult(
                prop.id,
                inv_id,
                "bmc",
                Verdict.REFUTED,
                k,
                sum(run.depth_seconds[:k]) + time.perf_counter() - start,
                smt2,
                f"a {k}-event trace reaches {inv_id}",
                witness=witness,
                scope=refuted_scope(f"a {k}-event trace ({bounds})"),
            )
        invariant = self.invariant
        induction = None
        if invariant is not None:
            if self._induction is None:
                self._induction = Induction(self.system, invariant, self.timeout_s)
            induction = self._induction.check(inv_id, max_k)
        seconds = time.perf_counter() - start
        if induction is not None and induction.proved and run.clean_depth >= induction.k - 1:
            smt2 = self._write_induction(prop, out_dir, invariant, induction.k)
            wide = self._all_widths(inv_id, invariant, induction.k)
            if wide is not None:
                rules = self.rule_cutoff.proved
                took = induction.seconds + wide
                detail = (
                    f"1-inductive over every width with {len(self._widths.families)} "  # type: ignore[union-attr]
                    f"quantified lemma families (z3, MBQI); in the finite system "
                    f"{induction.k}-inductive, BMC clean to depth {run.clean_depth}"
                    + ("; any number of rules: rule cutoff (z3)" if rules else "")
                )
                scope = all_widths_scope(self.system.config, rules)
            else:
                took = induction.seconds
                detail = (
                    f"{induction.k}-inductive with {len(invariant.names) if invariant else 0} "
                    f"Houdini lemmas; BMC clean to depth {run.clean_depth}"
                )
                scope = f"proved for {bounds}"
            return ProofResult(
                prop.id,
                inv_id,
                "k-induction",
                Verdict.PROVED,
                run.clean_depth,
                took,
                smt2,
                detail,
                k=induction.k,
                scope=scope,
            )
        if run.unknown_at is None and run.clean_depth >= self.depth:
            smt2 = self._write_bmc(prop, out_dir, run.clean_depth, "unsat")
            why = "induction timed out" if induction and induction.unknown else "not inductive"
            return ProofResult(
                prop.id,
                inv_id,
                "bmc",
                Verdict.BOUNDED,
                run.clean_depth,
                seconds,
                smt2,
                f"BMC clean to depth {run.clean_depth}; {why}",
                scope=f"bounded to depth {run.clean_depth} ({bounds})",
            )
        return ProofResult(
            prop.id,
            inv_id,
            "bmc",
            Verdict.UNKNOWN,
            run.clean_depth,
            seconds,
            None,
            f"BMC stopped at depth {run.clean_depth} (timeout)",
            scope=NO_CLAIM,
        )

    # The SMT-LIB2 evidence, one self-contained file per property.

    def _write_bmc(
        self, prop: Property, out_dir: Path | None, depth: int, expect: str
    ) -> str | None:
        if out_dir is None:
            return None
        solver = z3.Solver()
        path = Unrolling(self.system, solver, prefix="bmc.")
        bad = []
        for _ in range(depth):
            s = path.extend()
            bad.append(self.system.bad(s, prop.invariant))
        query = z3.And(*solver.assertions(), z3.Or(bad))
        label = f"paths of 1..{depth} steps from init reaching {prop.invariant}"
        return str(write_smt2(out_dir, prop, [smt2_query(query, label, expect)]))

    def _lemma_queries(self, invariant: Invariant) -> tuple[Query, Query]:
        """Init and step queries for the lemmas: the same in every file, built once."""
        if self._lemma_text is None:
            sys_ = self.system
            s0 = sys_.state("init")
            init = smt2_query(
                z3.And(sys_.init(s0), z3.Not(invariant.holds(sys_, s0))),
                "the lemmas hold initially",
                "unsat",
            )
            s, p, t = sys_.state("pre"), sys_.params("step"), sys_.state("post")
            step = smt2_query(
                z3.And(
                    invariant.holds(sys_, s), sys_.trans(s, p, t), z3.Not(invariant.holds(sys_, t))
                ),
                "the lemmas are inductive",
                "unsat",
            )
            self._lemma_text = (init, step)
        return self._lemma_text

    def _write_induction(
        self, prop: Property, out_dir: Path | None, invariant: Invariant | None, k: int
    ) -> str | None:
        if out_dir is None or invariant is None:
            return None
        sys_ = self.system
        queries = list(self._lemma_queries(invariant))
        if k > 1:
            base = z3.Solver()
            path = Unrolling(sys_, base, prefix="base.")
            bad = []
            for _ in range(k - 1):
                bad.append(sys_.bad(path.extend(), prop.invariant))
            queries.append(
                smt2_query(
                    z3.And(*base.assertions(), z3.Or(bad)),
                    f"base case: no violation within {k - 1} steps",
                    "unsat",
                )
            )
        assert self._induction is not None
        query = self._induction.query(prop.invariant, k)
        queries.append(smt2_query(query, f"{k}-induction step for {prop.invariant}", "unsat"))
        return str(write_smt2(out_dir, prop, queries))


def property_ids() -> tuple[str, ...]:
    return tuple(p.id for p in PROPERTIES)


def get_property(prop_id: str) -> Property:
    try:
        return BY_PROPERTY[prop_id]
    except KeyError:
        raise UnknownProperty(
            f"unknown property {prop_id!r}; valid: {', '.join(BY_PROPERTY)}"
        ) from None


def prove(
    prop_id: str,
    out_dir: Path | None = None,
    *,
    depth: int = DEFAULT_DEPTH,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
    session: LoopSession | None = None,
    config: LoopConfig | None = None,
) -> ProofResult:
    """Prove one property (sharing `session` across loop properties, if given)."""
    prop = get_property(prop_id)
    if prop.method == "smt":
        return prove_claim(prop, out_dir, timeout_s, session.system.config if session else config)
    session = session or LoopSession(config, depth, timeout_s)
    return session.prove(prop, out_dir)


def prove_all(
    out_dir: Path | None = None,
    *,
    depth: int = DEFAULT_DEPTH,
    timeout_s: float | None = DEFAULT_TIMEOUT_S,
    config: LoopConfig | None = None,
    on_result: Callable[[ProofResult], None] | None = None,
    on_depth: Callable[[int], None] | None = None,
    session: LoopSession | None = None,
) -> list[ProofResult]:
    """Every property; pass `session` to read its `shared_seconds` afterwards."""
    session = session or LoopSession(config, depth, timeout_s, on_depth)
    results = []
    for prop in PROPERTIES:
        result = prove(prop.id, out_dir, depth=depth, timeout_s=timeout_s, session=session)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results
