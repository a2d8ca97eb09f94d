"""The exploration: draw workloads, run them for real, check them, shrink a divergence.

Hypothesis drives both halves. It draws `(workload, execution)` pairs, first
one per situation of the sweep (`SWEEP`: each situation in its simplest
form), then the mechanisms' fixed workloads (`MECH_SWEEP`, `_mech.py`),
then from `any_workload()` (seeded by `seed`); each is executed (`_execute`) and
checked (`_checks`); the first divergence makes the probe fail, and
Hypothesis's shrinker then looks for smaller workloads that diverge with the
same invariant ID (one that diverges otherwise, or not at all, counts as
passing). Budgets:

- generation stops at `runs` workloads or after `budget` seconds
  (a `BaseException` the engine lets through, so nothing is shrunk); with
  `whole_sweep` the sweep runs to its end whatever the clock says, and the
  budget bounds only what is drawn after it (on a loaded machine a timed
  sweep stops early, and a fault only a late situation shows goes unseen);
- shrinking gets `shrink_budget` seconds more; later candidates pass at once,
  and the smallest divergence seen is kept whatever Hypothesis then reports
  (a divergence that depends on timing may not repeat: then it is `flaky`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path

import attrs
from hypothesis import HealthCheck
from hypothesis import Phase
from hypothesis import Verbosity
from hypothesis import given
from hypothesis import seed as hseed
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky

from ._checks import Finding
from ._checks import Verdict
from ._checks import check_outcome
from ._coverage import situations
from ._execute import EXECUTIONS
from ._execute import Execution
from ._execute import execute
from ._mech import MECH_SWEEP
from ._situations import SWEEP
from ._situations import any_workload
from ._situations import workloads
from ._workload import Workload

Progress = Callable[[str], None]


@attrs.define
class Stats:
    runs: int = 0
    events: int = 0
    seconds: float = 0.0  # spent running and checking workloads
    shrink_runs: int = 0
    situations: Counter[str] = attrs.field(factory=Counter)
    executions: Counter[str] = attrs.field(factory=Counter)
    findings: Counter[str] = attrs.field(factory=Counter)


@attrs.frozen
class Divergence:
    """The smallest workload found that diverges, and its verdict."""

    workload: Workload
    execution: Execution
    verdict: Verdict
    first: Workload  # the workload that diverged first, before shrinking
    flaky: bool

    @property
    def finding(self) -> Finding:
        assert self.verdict.first is not None
        return self.verdict.first


@attrs.frozen
class Exploration:
    stats: Stats
    divergence: Divergence | None
    seconds: float
    seed: int


class _Spent(BaseException):
    """Generation is over (runs or budget): Hypothesis lets it through unshrunk."""


class _Diverged(Exception):
    pass


@attrs.define
class _State:
    work: Path
    keep: bool
    target: str | None = None
    best: tuple[Workload, Execution, Verdict] | None = None
    first: Workload | None = None
    counter: int = 0
    sweeping: bool = False  # in a whole sweep: the budget does not stop it


def explore(
    work: Path,
    *,
    runs: int | None = None,
    seed: int = 0,
    budget: float = 60.0,
    shrink_budget: float | None = None,
    executions: Sequence[Execution] = EXECUTIONS,
    strategy: st.SearchStrategy[Workload] | None = None,
    timeout: float = 60.0,
    keep_runs: bool = False,
    progress: Progress | None = None,
    whole_sweep: bool = False,
    only: Sequence[str] = (),
) -> Exploration:
    """Explore under `work` (each run in its own folder, removed unless it
    diverged or `keep_runs`). `only`: run just the sweep's situations whose
    name starts with one of these (and draw nothing after them)."""
    work.mkdir(parents=True, exist_ok=True)
    stats = Stats()
    state = _State(work, keep_runs)
    start = time.monotonic()
    deadline = start + budget
    shrink_deadline = [float("inf")]
    say = progress or (lambda _: None)

    def run_one(workload: Workload, execution: Execution) -> Verdict:
        state.counter += 1
        root = work / f"run-{state.counter:05d}"
        if root.exists():
            shutil.rmtree(root)
        t0 = time.monotonic()
        outcome = execute(workload, root, execution, timeout=timeout)
        verdict = check_outcome(outcome)
        stats.seconds += time.monotonic() - t0
        stats.events += verdict.events
        stats.executions[outcome.execution] += 1
        stats.situations.update(situations(verdict.traces, workload, outcome.paths.root))
        for f in verdict.findings:
            stats.findings[f.invariant] += 1
        return verdict

    seen: dict[tuple[str, Execution], str | None] = {}

    def judge(workload: Workload, execution: Execution) -> str | None:
        """Run a candidate; the divergence it shows (of the target ID), if any."""
        now = time.monotonic()
        key = (workload.model_dump_json(), execution)
        if state.target is None:
            timed_out = now >= deadline and not state.sweeping
            if (runs is not None and stats.runs >= runs) or timed_out:
                raise _Spent
            stats.runs += 1
        elif key in seen:
            return seen[key]  # Hypothesis replaying a candidate: already run
        elif now >= shrink_deadline[0]:
            return None
        else:
            stats.shrink_runs += 1
        verdict = run_one(workload, execution)
        first = verdict.first
        root = verdict.outcome.paths.root
        if first is None or (state.target is not None and first.invariant != state.target):
            if not state.keep:
                shutil.rmtree(root, ignore_errors=True)
            seen[key] = None
            return None
        if state.target is None:
            state.target = first.invariant
            state.first = workload
            extra = budget * 0.5 if shrink_budget is None else shrink_budget
            shrink_deadline[0] = time.monotonic() + max(extra, 10.0)
            say(f"run {stats.runs}: {first.one_line()} ({workload.name}); shrinking")
        best = state.best
        if best is None or (workload.size, _rank(execution)) < (best[0].size, _rank(best[1])):
            if best is not None and not state.keep:
                shutil.rmtree(best[2].outcome.paths.root, ignore_errors=True)
            state.best = (workload, execution, verdict)
            say(f"  smaller: size {workload.size}, {len(workload.calls)} calls, {execution}")
        elif not state.keep:
            shutil.rmtree(root, ignore_errors=True)
        seen[key] = first.one_line()
        return seen[key]

    def probe(workload: Workload, execution: Execution) -> None:
        found = judge(workload, execution)
        if found is not None:
            raise _Diverged(found)  # one place: Hypothesis tells failures apart by line

    def hypothesis_run(strategy: st.SearchStrategy[Workload], examples: int, salt: int) -> None:
        test = settings(
            database=None,
            max_examples=examples,
            deadline=None,
            derandomize=False,
            phases=(Phase.generate, Phase.shrink),
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
            verbosity=Verbosity.debug if os.environ.get("METIS_EXPLORE_DEBUG") else Verbosity.quiet,
            print_blob=False,
        )(hseed(seed + salt)(given(strategy, st.sampled_from(tuple(executions)))(probe)))
        # Flaky: Hypothesis's final replay did not fail; confirmed by a run of ours below.
        with contextlib.suppress(_Diverged, Flaky):
            test()

    with contextlib.suppress(_Spent):
        if strategy is not None:
            hypothesis_run(strategy, runs or 1_000_000, 0)
        else:
            # The sweep: each situation once, in its simplest form, then anything.
            state.sweeping = whole_sweep

            def chosen(focus: str) -> bool:
                return not only or any(focus.startswith(p) for p in only)

            for salt, focus in enumerate(SWEEP, 1):
                if state.target is None and chosen(focus):
                    hypothesis_run(workloads(focus=focus), 1, salt)
            # The mechanisms' workloads (`_mech.py`): fixed, one per situation.
            for salt, case in enumerate(MECH_SWEEP, len(SWEEP) + 1):
                if state.target is None and chosen(case.focus):
                    hypothesis_run(st.just(case.build()), 1, salt)
            state.sweeping = False
            if state.target is None and not only:
                hypothesis_run(any_workload(), runs or 1_000_000, 0)
    divergence = None
    if state.best is not None and state.first is not None:
        workload, execution, verdict = state.best
        # Once more: a divergence that does not repeat depends on timing.
        again = run_one(workload, execution)
        shutil.rmtree(again.outcome.paths.root, ignore_errors=True)
        flaky = again.first is None or again.first.invariant != state.target
        divergence = Divergence(workload, execution, verdict, state.first, flaky)
    return Exploration(stats, divergence, time.monotonic() - start, seed)


def _rank(execution: Execution) -> int:
    return EXECUTIONS.index(execution)
