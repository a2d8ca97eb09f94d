"""The loop properties' proofs (`LoopSession`): shared BMC, Houdini, k-induction.

Loop properties ("the checker never reports X") go through one shared BMC
run (iterative deepening with assumption literals) and one Houdini
invariant, then k-induction per ID: `proved` when induction closes (and,
1-inductive, over every width: `_widths.py`, `_rule_cutoff.py`), else
`bounded(depth)`; a solver timeout is `unknown`. Each property's SMT-LIB2
evidence is written as one self-contained file.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import z3

from metis_trace import dumps_trace

from ._convert import decode_path
from ._convert import path_to_trace
from ._engine import BmcOutcome
from ._engine import Induction
from ._engine import Invariant
from ._engine import Unrolling
from ._engine import bmc
from ._engine import houdini
from ._property_table import DEFAULT_DEPTH
from ._property_table import DEFAULT_TIMEOUT_S
from ._property_table import WIDTHS_TIMEOUT_S
from ._property_table import Property
from ._results import NO_CLAIM
from ._results import ProofResult
from ._results import Verdict
from ._results import refuted_scope
from ._rule_cutoff import CutoffProof
from ._rule_cutoff import prove_rule_cutoff
from ._smt2 import Query
from ._smt2 import smt2_query
from ._smt2 import write_smt2
from ._system import LoopSystem
from ._system_config import LoopConfig
from ._widths import WidthProof
from ._widths import Widths
from ._widths import all_widths_scope

__all__ = ["LoopSession"]


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
