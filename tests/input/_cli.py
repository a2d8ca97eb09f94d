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
        saved, standalone = sys.argv, _run.STANDALONE
        sys.argv = ["metis", *argv]
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        finally:
            # `main()` marks `metis run` as the process's program, so that it
            # guards the process tree; this worker must not inherit that (a
            # later in-process run would make it a subreaper in a cgroup and
            # mark every subprocess as a child agent's).
            sys.argv, _run.STANDALONE = saved, standalone
        stdout, stderr = out.getvalue(), err.getvalue()
    assert code is not None, "main() always exits"
    return Outcome(code, stdout.decode(errors="replace"), stderr.decode(errors="replace"))
