"""Evidence per invariant ID: what backs each one, gathered in one run.

Used by `metis check` and `metis demo`. Each source adds counts under an ID:
traces checked and conforming, broken traces caught with that ID, proofs.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from metis_check import MUTATORS
from metis_check import Report
from metis_check import SimConfig
from metis_check import break_trace
from metis_check import check_trace
from metis_check import simulate
from metis_check._mutate import RICH
from metis_model import INVARIANTS
from metis_trace import Route
from metis_trace import TraceEvent
from metis_trace import TraceHeader
from metis_trace import dumps_trace

from ._params import WIDTHS_TIMEOUT_S


@attrs.define
class Evidence:
    traces: int = 0  # conforming traces in which the ID was checked
    checks: int = 0  # times the ID was evaluated over those traces
    caught: int = 0  # broken traces rejected with this ID
    missed: int = 0  # broken traces for this ID that were not rejected with it
    proof: str = ""  # each proof's scope and method, when proofs ran
    notes: list[str] = attrs.field(factory=list)
    # One entry per proof of this ID: its result, scope, method and own seconds.
    proofs: list[dict[str, Any]] = attrs.field(factory=list)

    def add_proof(self, entry: dict[str, Any]) -> None:
        self.proofs.append(entry)
        verdict = f"{entry['scope']} ({entry['method']})"
        self.proof = verdict if not self.proof else f"{self.proof}; {verdict}"

    @property
    def holds(self) -> bool:
        return self.missed == 0 and not self.proof.startswith(("refuted", "unknown"))

    @property
    def verdict(self) -> str:
        if not self.holds:
            return "FAILS"
        if not (self.traces or self.caught or self.proof):
            return "no evidence here"  # backed by tests only (see the spec page)
        return "holds"

    def to_json(self) -> dict[str, Any]:
        return {
            "traces": self.traces,
            "checks": self.checks,
            "caught": self.caught,
            "missed": self.missed,
            "proof": self.proof,
            "proofs": self.proofs,
            "holds": self.holds,
        }


@attrs.define
class EvidenceTable:
    rows: dict[str, Evidence] = attrs.field(
        factory=lambda: {inv.id: Evidence() for inv in INVARIANTS}
    )
    failures: list[str] = attrs.field(factory=list)  # valid traces that did not conform

    def add_conforming(self, report: Report) -> None:
        if not report.ok:
            self.failures.append(f"{report.source}: {report.first.one_line()}")  # type: ignore[union-attr]
            return
        for inv_id, n in report.checks.items():
            if n and inv_id in self.rows:
                self.rows[inv_id].traces += 1
                self.rows[inv_id].checks += n

    def add_broken(self, expected: str, report: Report) -> None:
        row = self.rows[expected]
        if report.first is not None and report.first.invariant == expected:
            row.caught += 1
        else:
            row.missed += 1

    @property
    def ok(self) -> bool:
        return not self.failures and all(r.holds for r in self.rows.values())


def simulated_runs(count: int, seed: int = 0) -> Iterable[tuple[TraceHeader, list[TraceEvent]]]:
    configs = [SimConfig(), RICH, SimConfig(route=Route.HEADLESS)]
    for i in range(count):
        yield simulate(seed + i, configs[i % len(configs)])


def gather_model_evidence(
    table: EvidenceTable, runs: int, broken_per_id: int, out_dir: Path | None = None
) -> None:
    """Check simulated runs, and broken copies of them for every mutator."""
    for i, (header, events) in enumerate(simulated_runs(runs)):
        report = check_trace(events, header, source=f"sim-{i}")
        table.add_conforming(report)
        if out_dir is not None and i < 5:
            (out_dir / f"valid-{i}.jsonl").write_text(dumps_trace(header, events))
    for inv_id in MUTATORS:
        made = 0
        seed = 0
        while made < broken_per_id and seed < broken_per_id * 40:
            header, events = simulate(seed, RICH)
            broken = break_trace(events, inv_id, random.Random(seed))
            seed += 1
            if broken is None:
                continue
            made += 1
            report = check_trace(broken, header, source=f"broken-{inv_id}-{seed}")
            table.add_broken(inv_id, report)
            if out_dir is not None and made == 1:
                (out_dir / f"broken-{inv_id}.jsonl").write_text(dumps_trace(header, broken))
        if made == 0:
            table.rows[inv_id].notes.append("no run could be broken for it")
    gather_file_evidence(table, runs, broken_per_id)
    gather_exit_evidence(table, runs, broken_per_id)
    gather_signal_evidence(table, runs, broken_per_id)
    gather_plan_evidence(table, runs, broken_per_id, out_dir)


# AWS's documented example access key id (not a live key): what a leak looks like.
_EXAMPLE_KEY = "AKIA" + "IOSFODNN7EXAMPLE"


def gather_file_evidence(table: EvidenceTable, runs: int, broken_per_id: int) -> None:
    """TRACE-2 on the files simulated runs would write (their traces as JSON
    Lines, clean), and on copies with a credential in a result's content, in
    a journal-like line, and JSON-escaped."""
    from metis_check import check_run_files

    for i, (header, events) in enumerate(simulated_runs(min(runs, 50))):
        text = dumps_trace(header, events)
        table.add_conforming(check_run_files([(f"sim-{i}.jsonl", text)], source=f"sim-{i} files"))
    leaks = (
        f'{{"kind":"result","content":"aws_access_key_id = {_EXAMPLE_KEY}"}}\n',
        f'{{"type":"commit","content":"{_EXAMPLE_KEY[:4]}\\u0049{_EXAMPLE_KEY[5:]}"}}\n',
        f"progress: 1.0 read .env: AWS_ACCESS_KEY_ID={_EXAMPLE_KEY}\n",
    )
    for k in range(broken_per_id):
        header, events = simulate(k)
        leaked = dumps_trace(header, events) + leaks[k % len(leaks)]
        report = check_run_files([(f"leak-{k}.jsonl", leaked)], source=f"leak-{k}")
        table.add_broken("TRACE-2", report)


def gather_exit_evidence(table: EvidenceTable, runs: int, broken_per_id: int) -> None:
    """TRACE-3 on made-up witnessed runs (`metis_check._witness_cases`): the
    witness agrees with the trace, then copies where one call's exit does not."""
    from metis_check._witness_cases import break_exit
    from metis_check._witness_cases import exit_case

    _witness_evidence(table, runs, broken_per_id, "TRACE-3", "exits", exit_case, break_exit)


def gather_signal_evidence(table: EvidenceTable, runs: int, broken_per_id: int) -> None:
    """TRACE-4 on simulated runs with made-up deliveries
    (`metis_check._witness_signal_cases`): the witness saw each recorded
    signal, then copies where one recorded signal was never delivered."""
    from metis_check._witness_signal_cases import break_signal
    from metis_check._witness_signal_cases import signal_case

    _witness_evidence(table, runs, broken_per_id, "TRACE-4", "signals", signal_case, break_signal)


def _witness_evidence(
    table: EvidenceTable,
    runs: int,
    broken_per_id: int,
    inv_id: str,
    name: str,
    case: Any,
    breaker: Any,
) -> None:
    """Made-up witnessed runs for one witness ID, and broken copies of them."""
    from metis_check import Report
    from metis_check import WitnessedTrace
    from metis_check import check_witness

    def report(source: str, header: Any, events: Any, sessions: Any) -> Report:
        found = check_witness(sessions, [WitnessedTrace(source, header, events)], source=source)
        # Only `inv_id` counts here: these runs are made up for it, not for AUTH-1.
        checked = {inv_id: found.checks[inv_id]} if inv_id in found.checks else {}
        return Report(source, len(events), found.violations, checked)

    for k in range(min(runs, 50)):
        header, events, sessions = case(random.Random(k))
        table.add_conforming(report(f"{name}-{k}", header, events, sessions))
    for k in range(broken_per_id):
        rng = random.Random((10_000 if inv_id == "TRACE-3" else 20_000) + k)
        header, events, sessions = case(rng)
        events, sessions = breaker(events, sessions, rng)
        table.add_broken(inv_id, report(f"{name}-broken-{k}", header, events, sessions))


def gather_plan_evidence(
    table: EvidenceTable, runs: int, broken_per_id: int, out_dir: Path | None = None
) -> None:
    """Simulated plan turns (`metis_model.plan`), and broken copies per PLAN ID."""
    from metis_check import check_turn_log
    from metis_check._plan_generate import simulate_turn
    from metis_check._plan_mutate import PLAN_MUTATORS
    from metis_check._plan_mutate import break_turn
    from metis_trace import dumps_turn_log

    for i in range(runs):
        turn = simulate_turn(i)
        table.add_conforming(check_turn_log(turn.header, turn.records, source=f"turn-{i}"))
    for inv_id in PLAN_MUTATORS:
        made = seed = 0
        while made < broken_per_id and seed < broken_per_id * 80:
            broken = break_turn(simulate_turn(seed), inv_id, random.Random(seed))
            seed += 1
            if broken is None:
                continue
            made += 1
            header, records = broken
            table.add_broken(inv_id, check_turn_log(header, records, source=f"broken-{inv_id}"))
            if out_dir is not None and made == 1:
                text = dumps_turn_log(header, records)
                (out_dir / f"broken-{inv_id}.turn.jsonl").write_text(text)
        if made == 0:
            table.rows[inv_id].notes.append("no turn could be broken for it")


def gather_proof_evidence(
    table: EvidenceTable, depth: int = 20, widths_timeout_s: float = WIDTHS_TIMEOUT_S
) -> None:
    """Every z3 proof and bounded model check, and the context-control check.

    Each proof is joined onto its invariant with its scope, which says how
    far it reaches: `proved for all widths (...)`, `proved for <= 3 calls,
    ... (k-induction, k=1)`, `bounded to depth 20 (...)`, `unknown: ...` or
    `refuted: ...`; `proofs` lists them with their own seconds.
    """
    from metis_proofs import LoopSession
    from metis_proofs import prove_all
    from metis_proofs._context import prove_context

    from ._prove import context_scope

    session = LoopSession(depth=depth, widths_timeout_s=widths_timeout_s)
    for result in prove_all(depth=depth, session=session):
        method = result.method + (f", k={result.k}" if result.k is not None else "")
        table.rows[result.invariant].add_proof(
            {
                "property": result.prop_id,
                "result": result.label,
                "scope": result.scope,
                "method": method,
                "seconds": round(result.seconds, 3),
            }
        )
    for proof in prove_context():
        if not proof.expected_to_hold:
            continue  # ablations of the cut rule: refuted on purpose
        bounded = proof.verdict == "bounded"
        table.rows[proof.invariant].add_proof(
            {
                "property": proof.invariant,
                "result": proof.label,
                "scope": context_scope(proof.max_len) if bounded else proof.label,
                "method": f"bmc, {proof.name}",
                "seconds": proof.seconds,
            }
        )


def gather_transcript_evidence(table: EvidenceTable, paths: Iterable[Path]) -> None:
    """Claude Code sessions: CLOSE-7 and the other CLOSE checks on real data."""
    from metis_check.transcripts import check_claude_code_tree
    from metis_runtime._input import read_input_text

    for path in paths:
        folder = path.with_suffix("") / "subagents"
        subagents = {p.name: read_input_text(p) for p in sorted(folder.glob("*.jsonl"))}
        report = check_claude_code_tree(read_input_text(path), subagents, source=str(path))
        table.add_conforming(report)
