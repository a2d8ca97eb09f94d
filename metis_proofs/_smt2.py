"""SMT-LIB2 evidence files, and their independent re-check with cvc5.

A file holds one or more queries separated by `(reset)`; each query is
self-contained (its own logic, sorts and declarations) and ends in
`(check-sat)`. The expected answers are recorded in a leading comment, so a
second solver can re-derive every verdict from the file alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import attrs
import z3

from ._results import Named
from ._strict import strict_smt2

_EXPECT = re.compile(r"^; expect: (.*)$", re.MULTILINE)


@attrs.frozen
class Query:
    text: str
    label: str
    expect: str  # "unsat" | "sat" | "unknown"


def smt2_query(formula: z3.BoolRef, label: str, expect: str) -> Query:
    """One query as strict SMT-LIB 2.6 (`_strict`: z3 prints one-argument
    `and`/`or`, which `cvc5 --strict-parsing` refuses)."""
    solver = z3.Solver()
    solver.add(formula)
    body = strict_smt2(solver.to_smt2())
    body = body.replace("(set-info :status unknown)", f"(set-info :status {expect})")
    return Query(f"; {label}\n(set-logic ALL)\n{body}", label, expect)


def write_smt2(out_dir: Path, prop: Named, queries: Sequence[Query]) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{prop.id}.smt2"
    head = [
        f"; metis proof {prop.id} ({prop.invariant}): {prop.title}",
        f"; expect: {' '.join(q.expect for q in queries)}",
        "",
    ]
    path.write_text("\n".join(head) + "\n(reset)\n".join(q.text for q in queries))
    return path


def expected_answers(path: Path) -> list[str]:
    match = _EXPECT.search(path.read_text())
    return match.group(1).split() if match else []


def z3_answers(path: Path, timeout_s: float | None = None) -> list[str]:
    """Re-check a file with z3, query by query (the file's own reading)."""
    answers = []
    for chunk in path.read_text().split("\n(reset)\n"):
        solver = z3.Solver()
        if timeout_s is not None:
            solver.set("timeout", int(timeout_s * 1000))
        text = "\n".join(
            line for line in chunk.splitlines() if not line.startswith(("(set-logic", "(check-sat"))
        )
        solver.from_string(text)
        answers.append(str(solver.check()))
    return answers


def cvc5_answers(path: Path, timeout_s: float | None = None) -> list[str]:
    """Run a file through cvc5's own SMT-LIB 2.6 parser with strict parsing
    on (what `cvc5 --strict-parsing FILE` does: the PyPI package ships the
    library and its Python API, no `cvc5` executable); one answer per
    check-sat. A file strict SMT-LIB refuses raises `RuntimeError`.

    cvc5 is a development dependency: imported here, on use."""
    import cvc5

    tm = cvc5.TermManager()
    solver = cvc5.Solver(tm)
    solver.setOption("strict-parsing", "true")
    if timeout_s is not None:
        solver.setOption("tlimit-per", str(int(timeout_s * 1000)))
    symbols = cvc5.SymbolManager(tm)
    parser = cvc5.InputParser(solver, symbols)
    parser.setFileInput(cvc5.InputLanguage.SMT_LIB_2_6, str(path))
    answers = []
    while True:
        command = parser.nextCommand()
        if command.isNull():
            break
        out = command.invoke(solver, symbols)
        if command.getCommandName() == "check-sat":
            answers.append(out.strip())
    return answers
