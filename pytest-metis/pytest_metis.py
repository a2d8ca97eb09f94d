"""pytest plugin: every trace a test records is replayed against the model.

Installed as the `pytest-metis` distribution, it registers itself through the
`pytest11` entry point (`pip install ./pytest-metis`): pytest then rewrites the
asserts of this one module only, not of the whole `metis` distribution. For
each test it sets `METIS_TRACE_LOG` to a fresh file from the start of its
setup to the end of its teardown; the runtime's trace writer appends the path
of every trace it opens there (children and resumed processes too, since the
variable is inherited), so traces written by fixtures count as well. After the
test body, each trace listed so far (by the fixtures' setup and the body) is
checked with `metis_model.check_trace`: a divergence fails the test and prints
the report. Traces written during teardown are checked after it: a
divergence there is an error in teardown.

At the end of the session it reports which invariant IDs and which model
transitions the recorded traces exercised, and which they never did
(`--metis-coverage=FILE` also writes them as JSON).

Opt out for a test that records broken traces on purpose:
`@pytest.mark.metis_nonconforming`.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from metis_model import ENABLED, INVARIANTS, Report, check_trace
from metis_model.trace import InputError
from metis_runtime._input import read_trace_path

ENV = "METIS_TRACE_LOG"


class _Coverage:
    def __init__(self) -> None:
        self.traces = 0
        self.checks: Counter[str] = Counter()
        self.transitions: Counter[str] = Counter()

    def add(self, report: Report) -> None:
        self.traces += 1
        self.checks.update(report.checks)
        self.transitions.update(report.transitions)

    def dump(self) -> dict[str, Any]:
        return {
            "traces": self.traces,
            "checks": dict(self.checks),
            "transitions": dict(self.transitions),
        }

    def merge(self, data: dict[str, Any]) -> None:
        self.traces += int(data.get("traces", 0))
        self.checks.update(data.get("checks", {}))
        self.transitions.update(data.get("transitions", {}))

    def summary(self) -> dict[str, Any]:
        all_transitions = sorted(f"{p.value}--{k}" for p, kinds in ENABLED.items() for k in kinds)
        return {
            "traces": self.traces,
            "invariants": {inv.id: self.checks.get(inv.id, 0) for inv in INVARIANTS},
            "never_checked": [inv.id for inv in INVARIANTS if not self.checks.get(inv.id)],
            "transitions": {t: self.transitions.get(t, 0) for t in all_transitions},
            "never_taken": [t for t in all_transitions if not self.transitions.get(t)],
        }


_COVERAGE = _Coverage()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("metis")
    group.addoption(
        "--metis-coverage",
        metavar="FILE",
        default=None,
        help="Write invariant and transition coverage of recorded traces as JSON.",
    )
    group.addoption(
        "--no-metis-conformance",
        action="store_true",
        default=False,
        help="Do not replay recorded traces against the model.",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "metis_nonconforming: the test records broken traces on purpose"
    )


def check_trace_file(path: Path) -> Report:
    header, events, line_of = read_trace_path(path)
    return check_trace(events, header, source=str(path), line_of=line_of)


def _listed(log: Path) -> list[Path]:
    if not log.exists():
        return []
    seen: dict[str, None] = {}
    for line in log.read_text(encoding="utf-8").splitlines():
        if line.strip():
            seen[line.strip()] = None
    return [Path(p) for p in seen]


class _Watch:
    """One test's trace log, and how many of its traces were checked already."""

    def __init__(self) -> None:
        self.log = Path(tempfile.mkdtemp(prefix="metis-traces-")) / "traces.log"
        self.previous = os.environ.get(ENV)
        self.checked: set[Path] = set()
        os.environ[ENV] = str(self.log)

    def restore(self) -> None:
        if self.previous is None:
            os.environ.pop(ENV, None)
        else:
            os.environ[ENV] = self.previous

    def check_new(self, item: pytest.Item, when: str) -> None:
        fresh = [p for p in _listed(self.log) if p not in self.checked]
        self.checked.update(fresh)
        if item.get_closest_marker("metis_nonconforming"):
            return
        problems = _check_listed(fresh)
        if problems:
            where = "" if when == "call" else f" (written during {when})"
            pytest.fail(
                f"recorded trace does not conform to the model{where}:\n" + "\n".join(problems),
                pytrace=False,
            )


_WATCH = pytest.StashKey[_Watch]()


def _active(item: pytest.Item) -> bool:
    return not item.config.getoption("--no-metis-conformance")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    if _active(item):
        item.stash[_WATCH] = _Watch()  # fixtures set up from here on record into it
    return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    result = yield  # a failing test body raises here and is reported as it is
    watch = item.stash.get(_WATCH, None)
    if watch is not None:
        watch.check_new(item, "call")  # what the fixtures' setup and the body wrote
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, object, object]:
    watch = item.stash.get(_WATCH, None)
    try:
        result = yield
    finally:
        if watch is not None:
            watch.restore()
    if watch is not None:
        watch.check_new(item, "setup or teardown")
    return result


def _check_listed(paths: list[Path]) -> list[str]:
    problems: list[str] = []
    for path in paths:
        if not path.exists():
            continue
        try:
            report = check_trace_file(path)
        except InputError as exc:
            problems.append(str(exc))
            continue
        if report.ok:
            _COVERAGE.add(report)
        else:
            v = report.first
            assert v is not None
            problems.append(
                f"{path}: {v.one_line()}\n    state: {v.state}\n    slice: {list(v.slice)}"
            )
    return problems


def pytest_sessionfinish(session: pytest.Session) -> None:
    # Under xdist each worker checks its own tests' traces; hand the counts on.
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["metis_coverage"] = json.dumps(_COVERAGE.dump())


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    data = getattr(node, "workeroutput", {}).get("metis_coverage")
    if data:
        _COVERAGE.merge(json.loads(data))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if not _COVERAGE.traces:
        return
    summary = _COVERAGE.summary()
    checked = len(INVARIANTS) - len(summary["never_checked"])
    taken = len(summary["transitions"]) - len(summary["never_taken"])
    tr = terminalreporter
    tr.section("metis conformance")
    tr.write_line(f"{summary['traces']} recorded traces replayed against the model")
    tr.write_line(
        f"invariants checked: {checked}/{len(INVARIANTS)}; never: "
        f"{', '.join(summary['never_checked']) or 'none'}"
    )
    tr.write_line(
        f"transitions taken: {taken}/{len(summary['transitions'])}; never: "
        f"{', '.join(summary['never_taken']) or 'none'}"
    )
    target = config.getoption("--metis-coverage")
    if target:
        Path(target).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
