"""Any number of rules per decision (issue 25): the rule cutoff lemma
(`metis_proofs/_rule_cutoff.py`) is proved, fails on a broken decision
encoding and on a view that leaves a read out, and cvc5 agrees. (Its
unbounded encoding against `resolve`: `test_perm_agreement.py`.)"""

from __future__ import annotations

import itertools
from pathlib import Path

import z3

from metis_model import resolve
from metis_proofs import LoopConfig
from metis_proofs import cvc5_answers
from metis_proofs._perm import STAGES
from metis_proofs._perm import Stages
from metis_proofs._perm import SymFacts
from metis_proofs._perm import resolve_z3
from metis_proofs._rule_cutoff import cutoff_queries
from metis_proofs._rule_cutoff import prove_rule_cutoff
from metis_proofs._rules import RuleAccess
from metis_proofs._rules import matches
from metis_proofs._smt2 import smt2_query
from metis_trace import Decision
from metis_trace import Facts
from metis_trace import Mode
from metis_trace import RuleBehavior
from metis_trace import RuleRef
from metis_trace import Source
from metis_trace import Stage
from metis_trace import ToolKind

ALLOW, DENY = RuleBehavior.ALLOW, RuleBehavior.DENY


def _two_allows(r: RuleAccess) -> z3.BoolRef:
    """Two allow rules (of different recency, so two rules)."""
    return r.some(
        lambda a: r.some(
            lambda b: z3.And(matches(a, ALLOW), matches(b, ALLOW), a.recency != b.recency)
        )
    )


# A broken decision: two allow rules outrank a deny (it reads a count of rules).
OUTVOTED: Stages = {
    **STAGES,
    Stage.DENY_RULE: (
        lambda f, r: z3.And(r.some(lambda x: matches(x, DENY)), z3.Not(_two_allows(r))),
        STAGES[Stage.DENY_RULE][1],
    ),
}


def test_the_rule_cutoff_is_proved() -> None:
    proof = prove_rule_cutoff(LoopConfig(), timeout_s=60)
    assert proof.proved, proof.answers
    assert set(proof.answers) >= {
        "cutoff",
        "step reads only the view",
        "step reads only the view, every width",
    }
    assert max(proof.seconds.values()) < 60
    assert proof.counterexample is None


def test_one_rule_suffices_and_none_does_not() -> None:
    """The cutoff is 1 (<= the system's 2 slots); with 0 slots a decision
    with one deny rule has no stand-in: the lemma can fail."""
    assert prove_rule_cutoff(LoopConfig(rule_slots=1)).answers["cutoff"] == "unsat"
    zero = prove_rule_cutoff(LoopConfig(rule_slots=0))
    assert zero.answers["cutoff"] == "sat"
    assert zero.counterexample is not None and zero.counterexample.rules


def _view(facts: Facts, stages: Stages) -> tuple[str, ...]:
    f = SymFacts.of(facts)
    r = resolve_z3(f, None, stages)
    deny = any(x.behavior is DENY for x in facts.rules)
    return (*(str(z3.simplify(t)) for t in (r.decision, r.stage)), str(deny))


def test_a_decision_that_counts_rules_breaks_the_cutoff() -> None:
    proof = prove_rule_cutoff(LoopConfig(), timeout_s=60, stages=OUTVOTED)
    assert proof.answers["cutoff"] == "sat" and not proof.proved
    cex = proof.counterexample
    assert cex is not None and len(cex.rules) > 2, cex
    # no sub-list of <= 2 of its rules looks the same to the step
    want = _view(cex, OUTVOTED)
    for k in range(3):
        for sub in itertools.combinations(cex.rules, k):
            assert _view(cex.model_copy(update={"rules": sub}), OUTVOTED) != want, sub


def test_the_step_reads_more_than_the_decision() -> None:
    """The checker mirror alone (no protocol) reads whether a deny rule
    matched (PERM-2 before PERM-1): a view without it fails part 3."""
    mirror = LoopConfig(protocol=False)
    name = "step reads only the view"
    assert prove_rule_cutoff(mirror).answers[name] == "unsat"
    assert prove_rule_cutoff(mirror, drop=frozenset({"deny"})).answers[name] == "sat"


def _cvc5(formula: z3.BoolRef, tmp_path: Path, name: str) -> list[str]:
    """cvc5's answer (enumerative instantiation: MBQI alone gives up on the
    cutoff's sub-list quantifier)."""
    text = smt2_query(formula, name, "unsat").text
    path = tmp_path / f"{name.replace(' ', '_').replace(',', '')}.smt2"
    path.write_text(
        text.replace("(set-logic ALL)", "(set-option :enum-inst true)\n(set-logic ALL)")
    )
    return cvc5_answers(path, timeout_s=60)


def test_cvc5_agrees_on_every_part(tmp_path: Path) -> None:
    answers = {n: _cvc5(q, tmp_path, n) for n, q in cutoff_queries(LoopConfig()).items()}
    assert all(a == ["unsat"] for a in answers.values()), answers


def test_the_broken_encoding_is_broken() -> None:
    """OUTVOTED lets two allows beat a deny (so its failure is the cutoff's)."""
    rules = (
        RuleRef(behavior=DENY, source=Source.PROJECT, pattern="d", recency=0),
        RuleRef(behavior=ALLOW, source=Source.PROJECT, pattern="a", recency=1),
        RuleRef(behavior=ALLOW, source=Source.PROJECT, pattern="b", recency=2),
    )
    facts = Facts(mode=Mode.DEFAULT, kind=ToolKind.EXEC, rules=rules)
    assert resolve(facts).decision is Decision.DENY
    assert _view(facts, OUTVOTED)[0] != _view(facts, STAGES)[0]
