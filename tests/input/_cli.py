"""Run the real `metis` entry point in-process: argv in, exit code and output out.

`metis_cli._main.main` is what the console script runs, with its error
mapping (usage errors, `InputError`), which `CliRunner.invoke(cli)` skips.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import attrs
from click.testing import CliRunner

from metis_cli import _run
from metis_cli._main import main


@attrs.frozen
class Outcome:
    code: int
    stdout: str
    stderr: str

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]


def run_metis(argv: Sequence[str], stdin: bytes | None = None) -> Outcome:
    runner = CliRunner()
    code: int | None = None
    with runner.isolation(input=stdin) as (out, err, _):
        saved, standalone, guard = sys.argv, _run.STANDALONE, _run.guard_tree
        sys.argv = ["metis", *argv]
        # `main()` marks `metis run` as the process's program, which then guards
        # the whole process tree (a subreaper in a cgroup of its own): the test
        # process is not that program.
        _run.guard_tree = lambda: None
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        finally:
            sys.argv, _run.STANDALONE, _run.guard_tree = saved, standalone, guard
        stdout, stderr = out.getvalue(), err.getvalue()
    assert code is not None, "main() always exits"
    return Outcome(code, stdout.decode(errors="replace"), stderr.decode(errors="replace"))
