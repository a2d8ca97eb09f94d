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

The traces of one tree of agents (one `root_run_id`, its root among them)
are checked as one tree (`check_trace_tree`: CHILD-4..6 across it); a turn log
is checked with `metis_model.plan.check_turn_log`; the files each run wrote
(its journal, its agent tree's files, offloads) are scanned for credentials
(TRACE-2). The test also sets `METIS_REPORT_LOG`: `metis conform`, run in the
test, adds there the counts of what it checked (transcripts, turn logs).

At the end of the session it reports, per invariant ID and per model
transition, how often the recorded traces exercised it (the checks that had
something to check: specs/trace-format.md, "Coverage"), summed over every
xdist worker, and which were never reached (`--metis-coverage=FILE` also
writes them as JSON). With `--metis-require-coverage` the session fails when
one was never reached, and names each.

Opt out for a test that records broken traces on purpose:
`@pytest.mark.metis_nonconforming`.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Generator
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from metis_check import Coverage
from metis_check import Report
from metis_check import check_trace
from metis_check import check_trace_tree
from metis_model import INVARIANTS
from metis_runtime._input import read_input_text
from metis_runtime._input import read_trace_path
from metis_trace import InputError
from metis_trace import TraceEvent
from metis_trace import TraceHeader

ENV = "METIS_TRACE_LOG"
REPORT_ENV = "METIS_REPORT_LOG"  # where `metis conform` adds the counts of what it checked

_COVERAGE = Coverage()
_MISSING = pytest.StashKey[list[str]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("metis")
    group.addoption(
        "--metis-coverage",
        metavar="FILE",
        default=None,
        help="Write invariant and transition coverage of recorded traces as JSON.",
    )
    group.addoption(
        "--metis-require-coverage",
        action="store_true",
        default=False,
        help="Fail the session when an invariant ID or a model transition was never "
        "exercised (counted over every worker), naming each.",
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
        folder = Path(tempfile.mkdtemp(prefix="metis-traces-"))
        self.log = folder / "traces.log"
        self.reports = folder / "reports.log"
        self.previous = {k: os.environ.get(k) for k in (ENV, REPORT_ENV)}
        self.checked: set[Path] = set()
        self.scanned: set[Path] = set()  # files checked for credentials (TRACE-2)
        self.counted = 0  # lines of the report log already counted
        os.environ[ENV] = str(self.log)
        os.environ[REPORT_ENV] = str(self.reports)

    def restore(self) -> None:
        for key, value in self.previous.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

    def count_reports(self) -> None:
        """What `metis conform` checked during the test (transcripts, turn logs,
        traces this plugin did not see recorded: it counts those it did itself)."""
        if not self.reports.exists():
            return
        lines = self.reports.read_text(encoding="utf-8").splitlines()
        mine = [str(p) for p in self.checked]
        for line in lines[self.counted :]:
            try:
                entry = json.loads(line)
                source = str(entry.pop("source", ""))
                if source and any(p == source or p.startswith(source + os.sep) for p in mine):
                    continue
                _COVERAGE.merge({"reports": 1, **entry})
            except (ValueError, TypeError, AttributeError):
                continue  # a torn line: not counted
        self.counted = len(lines)

    def check_new(self, item: pytest.Item, when: str) -> None:
        fresh = [p for p in _listed(self.log) if p not in self.checked]
        self.checked.update(fresh)
        self.count_reports()
        if item.get_closest_marker("metis_nonconforming"):
            return
        problems = _check_listed(fresh, self.scanned)
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


def _problem(report: Report) -> str:
    v = report.first
    assert v is not None
    state = f"\n    state: {v.state}" if v.state else ""
    slice_ = f"\n    slice: {list(v.slice)}" if v.slice else ""
    more = "".join(f"\n    also: {w.one_line()}" for w in report.violations[1:])
    return f"{report.source}: {v.one_line()}{state}{slice_}{more}"


def _read(path: Path) -> tuple[TraceHeader, list[TraceEvent], list[int]] | str:
    try:
        return read_trace_path(path)
    except InputError as exc:
        return str(exc)


def _turn_log(path: Path) -> bool:
    if not path.is_file():  # not opened: the trace reader refuses it in one line
        return False
    with path.open("rb") as fh:
        first = fh.readline(4096)
    return b'"metis-turnlog"' in first and b'"header"' in first


def _check_turn_log(path: Path) -> Report | str:
    from metis_check import check_turn_log
    from metis_trace import read_turn_log

    try:
        header, records, line_of = read_turn_log(read_input_text(path).split("\n"))
    except InputError as exc:
        return str(exc)
    return check_turn_log(header, records, source=str(path), line_of=line_of)


def _check_listed(paths: Sequence[Path], scanned: set[Path]) -> list[str]:
    """Replay each trace (a tree of agents as one tree: CHILD-4..6 across it),
    check each turn log, and scan the files each run wrote (TRACE-2)."""
    problems: list[str] = []
    reports: list[Report] = []
    traces: dict[Path, tuple[TraceHeader, list[TraceEvent], list[int]]] = {}
    for path in paths:
        if not path.exists():
            continue
        if _turn_log(path):
            got = _check_turn_log(path)
            if isinstance(got, str):
                problems.append(got)
            else:
                reports.append(got)
            continue
        read = _read(path)
        if isinstance(read, str):
            problems.append(read)
        else:
            traces[path] = read
    trees: dict[str, list[Path]] = {}
    for path, (header, _, _) in traces.items():
        trees.setdefault(header.root_run_id, []).append(path)
    for members in trees.values():
        roots = [p for p in members if traces[p][0].parent_id is None]
        if len(members) > 1 and len(roots) == 1:
            tree = {str(p): (traces[p][0], traces[p][1]) for p in members}
            reports.append(check_trace_tree(tree, source=str(roots[0].parent)))
            continue
        for p in members:
            header, events, line_of = traces[p]
            reports.append(check_trace(events, header, source=str(p), line_of=line_of))
    scan = _scan(list(traces), scanned)
    if scan.checks or scan.violations:
        reports.append(scan)
    for report in reports:
        if report.ok:
            _COVERAGE.add(report)
        else:
            problems.append(_problem(report))
    return problems


def _scan(traces: Sequence[Path], scanned: set[Path]) -> Report:
    """TRACE-2 over the files the runs of `traces` wrote, each file once per test."""
    from metis_check import check_run_files
    from metis_runtime import run_files

    files = [f for t in traces for f in run_files(t) if f not in scanned]
    files = list(dict.fromkeys(files))
    scanned.update(files)
    texts = ((str(f), f.read_bytes().decode("utf-8", "replace")) for f in files)
    return check_run_files(texts, source="the files the test's runs wrote")


def pytest_sessionfinish(session: pytest.Session) -> None:
    # Under xdist each worker checks its own tests' traces; hand the counts on.
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["metis_coverage"] = json.dumps(_COVERAGE.dump())
        return
    # Here (one process, or the controller once every worker is down): the totals.
    if session.config.getoption("--metis-require-coverage"):
        missing = _COVERAGE.never_checked() + _COVERAGE.never_taken()
        session.config.stash[_MISSING] = missing
        if missing and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    data = getattr(node, "workeroutput", {}).get("metis_coverage")
    if data:
        _COVERAGE.merge(json.loads(data))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    missing = config.stash.get(_MISSING, None)
    if not _COVERAGE.reports and missing is None:
        return
    summary = _COVERAGE.summary()
    checked = len(INVARIANTS) - len(summary["never_checked"])
    taken = len(summary["transitions"]) - len(summary["never_taken"])
    tr = terminalreporter
    tr.section("metis conformance")
    tr.write_line(
        f"{summary['reports']} reports (recorded traces, trees, run files, "
        "and what metis conform checked) counted"
    )
    tr.write_line(
        f"invariants checked: {checked}/{len(INVARIANTS)}; never: "
        f"{', '.join(summary['never_checked']) or 'none'}"
    )
    tr.write_line(
        f"transitions taken: {taken}/{len(summary['transitions'])}; never: "
        f"{', '.join(summary['never_taken']) or 'none'}"
    )
    if missing:
        tr.write_line(
            "FAILED --metis-require-coverage: never reached by the workload: " + ", ".join(missing),
            red=True,
            bold=True,
        )
    target = config.getoption("--metis-coverage")
    if target:
        Path(target).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
