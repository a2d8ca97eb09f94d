"""`metis run --witness`: the run restarted under the witness, before anything runs.

`early(argv)` is called by `metis` before it loads the `run` command (which
loads the whole runtime): when the arguments ask for a witness and name
what it needs (the workspace, or the trace of a run to resume), it execs the
witness at once, and the witness starts the same `metis run` (without
`--witness`, with the trace and run id fixed) once it watches. Otherwise it
returns, and `metis run` itself validates the arguments and calls
`exec_witness` after them. Either way the run reads `WITNESSED_ENV` and does
not start a witness again.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path

from ._plan import run_plan
from ._plan import witness_argv
from ._plan import witness_path

WITNESSED_ENV = "METIS_WITNESSED_RUN"  # set for the run a witness started: its run id
_VALUED = ("--workspace", "--trace")


def exec_witness(
    out_arg: str,
    trace: Path,
    workspace: Path,
    run_args: Sequence[str],
    run_id: str,
    env: Mapping[str, str],
) -> None:
    """Become the witness of `metis run *run_args --trace trace` (never returns).
    `out_arg` "-" means the default file beside the trace. Raises OSError
    when the witness file's folder cannot be made."""
    out = Path(out_arg) if out_arg != "-" else witness_path(trace)
    out.parent.mkdir(parents=True, exist_ok=True)
    roots, excluded = run_plan(workspace, trace)
    command = [sys.executable, "-m", "metis_cli", "run", *run_args, "--trace", str(trace)]
    argv = witness_argv(out, roots, excluded=excluded, trace=trace)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(argv[0], [*argv, *command], {**env, WITNESSED_ENV: run_id})


def _split(args: Sequence[str]) -> tuple[str | None, list[str], dict[str, str], bool]:
    """(the --witness value or None, the other args, --workspace/--trace, --resume),
    as click reads them: `--witness` takes the next word unless it is an option."""
    witness: str | None = None
    rest: list[str] = []
    values: dict[str, str] = {}
    resume = False
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            rest.extend(args[i:])
            break
        if a == "--witness":
            nxt = args[i + 1] if i + 1 < len(args) else None
            if nxt is not None and not nxt.startswith("-"):
                witness, i = nxt, i + 2
            else:
                witness, i = "-", i + 1
            continue
        if a.startswith("--witness="):
            witness, i = a.split("=", 1)[1] or "-", i + 1
            continue
        if a == "--resume":
            resume = True
        name = a.split("=", 1)[0]
        if name in _VALUED:
            if "=" in a:
                values[name] = a.split("=", 1)[1]
            elif i + 1 < len(args):
                values[name] = args[i + 1]
                rest.extend(args[i : i + 2])
                i += 2
                continue
        rest.append(a)
        i += 1
    return witness, rest, values, resume


def _resumed_workspace(trace: Path) -> Path | None:
    """The workspace of the run to resume, from its journal's first entry."""
    try:
        with trace.with_name(trace.name + ".journal").open(encoding="utf-8") as fh:
            entry = json.loads(fh.readline())
        workspace = entry["config"]["workspace"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return Path(workspace) if isinstance(workspace, str) else None


def early(argv: Sequence[str]) -> None:
    """Exec the witness for `metis run ... --witness` when the arguments allow;
    else return and let `metis run` go on."""
    if not argv or argv[0] != "run" or os.environ.get(WITNESSED_ENV) is not None:
        return
    witness, rest, values, resume = _split(argv[1:])
    if witness is None or "--help" in rest or "-h" in rest:
        return
    run_id = uuid.uuid4().hex
    if resume:
        if "--trace" in values:
            trace = Path(values["--trace"])
        elif "--workspace" in values:
            runs = sorted(
                (Path(values["--workspace"]) / ".metis" / "runs").glob("*/trace.jsonl"),
                key=lambda p: p.stat().st_mtime,
            )
            if not runs:
                return
            trace = runs[-1]
        else:
            return
        workspace = _resumed_workspace(trace)
        if workspace is None or not workspace.is_dir():
            return
    else:
        if "--workspace" not in values:
            return
        workspace = Path(values["--workspace"]).expanduser()
        if workspace.exists() and not workspace.is_dir():
            return
        default = workspace / ".metis" / "runs" / run_id / "trace.jsonl"
        trace = Path(values.get("--trace", str(default)))
        if trace.exists() and trace.stat().st_size > 0:
            return  # `metis run` says why
    try:
        exec_witness(witness, trace.absolute(), workspace.absolute(), rest, run_id, os.environ)
    except OSError:
        return  # `metis run` reports it
