"""Exported SMT-LIB is strict SMT-LIB 2.6 (issue 24): z3 prints one-argument
`and`/`or`, which `cvc5 --strict-parsing` refuses; `strict_smt2` rewrites
them by their meaning and `cvc5_answers` parses with strict parsing on (the
PyPI cvc5 package has no executable: its parser, option `strict-parsing`).
Every file `metis prove --out` writes is re-checked that way by
test_proofs.py; here the rewrite's cases, and random formulas on which
cvc5 (strict) agrees with z3."""

from __future__ import annotations

from pathlib import Path

import pytest
import z3
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_proofs import cvc5_answers
from metis_proofs._smt2 import smt2_query
from metis_proofs._strict import strict_smt2


@pytest.mark.parametrize(
    ("text", "strict"),
    [
        ("(assert (and x))", "(assert x)"),
        ("(assert (or (and a b)))", "(assert (and a b))"),
        ("(assert (and))", "(assert true)"),
        ("(assert (or))", "(assert false)"),
        ("(assert (= (+ y) (* z)))", "(assert (= y z))"),
        ("(assert (distinct y))", "(assert true)"),
        ("(assert (or (or (and p))))", "(assert p)"),
        ("(assert (and |and x| (or b)))", "(assert (and |and x| b))"),
        ('; (or x)\n(echo "(or x)")', '; (or x)\n(echo "(or x)")'),
        ("(let ((a!1 (or p))) (and a!1 q))", "(let ((a!1 p)) (and a!1 q))"),
        ("(assert (or and p))", "(assert (or true p))"),
        ("(assert (and or))", "(assert false)"),
        ("(assert (- y))", "(assert (- y))"),  # unary minus is SMT-LIB's own
        ("(assert (and x", "(assert (and x"),  # unbalanced: left as it was
    ],
)
def test_the_rewrite(text: str, strict: str) -> None:
    assert strict_smt2(text) == strict


def test_z3s_own_printout_is_refused_by_strict_cvc5(tmp_path: Path) -> None:
    """The check can fail: strict parsing is really on."""
    solver = z3.Solver()
    solver.add(z3.And(z3.Bool("x")))
    raw = tmp_path / "raw.smt2"
    raw.write_text("(set-logic ALL)\n" + solver.to_smt2())
    assert "(and x)" in raw.read_text()
    with pytest.raises(RuntimeError, match="AND"):
        cvc5_answers(raw)


_BOOLS = [z3.Bool(n) for n in "pqr"]
_INTS = [z3.Int(n) for n in "xy"]


def _atoms() -> st.SearchStrategy[z3.BoolRef]:
    ints = st.sampled_from(_INTS)
    compare = st.builds(lambda a, k: a > k, ints, st.integers(-2, 2))
    sums = st.builds(lambda xs: z3.Sum(xs) == 1, st.lists(ints, min_size=1, max_size=2))
    return st.one_of(st.sampled_from(_BOOLS), compare, sums)


_FORMULAS = st.recursive(
    _atoms(),
    lambda inner: st.one_of(
        st.builds(lambda xs: z3.And(xs), st.lists(inner, max_size=3)),
        st.builds(lambda xs: z3.Or(xs), st.lists(inner, max_size=3)),
        st.builds(z3.Not, inner),
    ),
    max_leaves=8,
)


@settings(max_examples=40, deadline=None)
@given(_FORMULAS)
def test_strict_cvc5_agrees_with_z3(
    tmp_path_factory: pytest.TempPathFactory, f: z3.BoolRef
) -> None:
    expect = _z3_answer(f)
    path = tmp_path_factory.mktemp("q") / "q.smt2"
    path.write_text(smt2_query(f, "random", expect).text)
    assert cvc5_answers(path, timeout_s=10) == [expect]


def _z3_answer(f: z3.BoolRef) -> str:
    solver = z3.Solver()
    solver.add(f)
    return str(solver.check())
