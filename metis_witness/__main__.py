"""`python -m metis_witness`: watch a run from outside the runtime.

    python -m metis_witness --out W --root DIR [--root DIR2] [--exclude P]
        [--trace T] [--no-exec] -- COMMAND...     # around a command: its exit status
    python -m metis_witness --out W --root DIR --beside PID   # beside a process:
        prints "ready" on stdout when watching; stops when stdin closes or PID dies

Bad arguments: a one-line error and exit 2.
"""

from __future__ import annotations

import argparse
import os
import sys

from ._file import WitnessFileError
from ._session import Plan
from ._session import run_around
from ._session import run_beside


def _bad(message: str) -> int:
    print(f"metis witness: error: {message}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    # The command's environment, as given: importing the runtime's redactor
    # later must not change it (the runtime pops METIS_FAILPOINT on import).
    environ = dict(os.environ)
    args = list(sys.argv[1:] if argv is None else argv)
    command: list[str] = []
    if "--" in args:
        cut = args.index("--")
        args, command = args[:cut], args[cut + 1 :]
    parser = argparse.ArgumentParser(prog="python -m metis_witness", add_help=True)
    parser.add_argument("--out", required=True, help="The witness file (appended to).")
    parser.add_argument("--root", action="append", default=[], help="A tree to watch.")
    parser.add_argument("--exclude", action="append", default=[], help="A path not to watch.")
    parser.add_argument("--trace", help="The trace of the witnessed run (recorded in the header).")
    parser.add_argument("--no-exec", action="store_true", help="Do not trace process execution.")
    parser.add_argument("--beside", type=int, metavar="PID", help="Witness this running process.")
    try:
        opts = parser.parse_args(args)
    except SystemExit as exc:
        return 2 if exc.code else 0
    if not opts.root:
        return _bad("--root DIR is required")
    if (opts.beside is None) == (not command):
        return _bad("give a command after -- or --beside PID (one of them)")
    out = os.path.abspath(opts.out)
    plan = Plan(
        out=out,
        roots=tuple(os.path.realpath(r) for r in opts.root),
        excluded=(out, *(os.path.realpath(e) for e in opts.exclude)),
        trace=opts.trace,
        exec_=not opts.no_exec,
    )
    for root in plan.roots:
        if os.path.exists(root) and not os.path.isdir(root):
            return _bad(f"--root {root}: not a directory")
    try:
        if opts.beside is not None:
            return run_beside(plan, opts.beside, sys.stdout, sys.stdin.fileno())
        return run_around(plan, command, env=environ)
    except WitnessFileError as exc:
        return _bad(str(exc))
    except FileNotFoundError as exc:
        return _bad(f"cannot start {command[0]!r}: {exc.strerror}")


if __name__ == "__main__":
    sys.exit(main())
