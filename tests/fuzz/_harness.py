"""Run a `metis` command in-process under a time and a memory bound.

In-process (`metis_cli._main.main` through `tests/input/_cli.py`) rather than a
subprocess per example: a subprocess pays the interpreter start and imports
(about 0.3 s; see the README's fuzz figures) for every example, where an
in-process run of a small input takes milliseconds. The bounds are measured,
not imposed by the kernel:
- time: `SIGALRM` (`setitimer`) interrupts the command, blocking reads
  included (a FIFO would hang there), and the example fails as `Hung`;
- memory: `tracemalloc`'s peak of the Python heap during the command.
The tests of special files (`test_special_files.py`) also run a few commands
in a real subprocess with `RLIMIT_AS`, as the kernel would bound them.
"""

from __future__ import annotations

import signal
import tempfile
import tracemalloc
from collections.abc import Iterator
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path

import attrs

# Import what the commands load before any example is timed: an alarm that
# fires inside a first import would leave a half-initialized module behind.
import metis_runtime._yaml  # noqa: F401
from tests.input._cli import Outcome
from tests.input._cli import run_metis

# Generous: the bound catches a hang (a FIFO, an unbounded read), not slowness
# on a loaded machine.
SECONDS = 30.0
HEAP_BYTES = 256 * 1024 * 1024


class Hung(Exception):
    """The command ran past its time bound."""


@contextmanager
def _alarm(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise Hung(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@attrs.frozen
class Bounded:
    outcome: Outcome
    heap_peak: int


def bounded_run(
    argv: Sequence[str], *, seconds: float = SECONDS, stdin: bytes | None = None
) -> Bounded:
    """Run `metis argv`; fail (`Hung`, `AssertionError`) past either bound."""
    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        with _alarm(seconds):
            outcome = run_metis(argv, stdin=stdin)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        if started:
            tracemalloc.stop()
    assert peak < HEAP_BYTES, f"heap peak {peak} bytes"
    return Bounded(outcome, peak)


def assert_clean(outcome: Outcome, *places: str) -> None:
    """The four promises: exit 0, 1 or 2; no traceback; an error (exit 2) is
    one line naming its place (one of `places`)."""
    text = outcome.stdout + outcome.stderr
    assert outcome.code in (0, 1, 2), (outcome.code, text[-2000:])
    assert "Traceback" not in text, text[-2000:]
    if outcome.code == 2:
        assert len(outcome.error_lines) == 1, outcome.error_lines
        line = outcome.error_lines[0]
        assert line.startswith("metis"), line
        assert any(place in line for place in places), (line, places)


def conform_clean(data: bytes, *extra: str, name: str = "input.jsonl") -> None:
    """`metis conform` of `data`, as the file `name` of a fresh folder, keeps the promises."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        assert_clean(bounded_run(["conform", str(path), *extra]).outcome, str(path))
