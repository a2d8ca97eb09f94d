"""The witness: an observer outside the runtime that records a run's effects.

It runs as its own process (`python -m metis_witness`), never inside
`metis_runtime` (which does not import it), so a runtime bug cannot silence
it. It watches the workspace and the run's child workspaces through inotify
and process execution through strace, and writes a witness file
(specs/witness.md) that `metis conform` checks against the trace.

Public surface:
- `witness_argv(out, roots, ...)`: the argv prefix that runs a command under
  the witness (`[*witness_argv(...), *command]`); the command starts only
  after every watch is in place, and the witness exits with its status.
- `Witness(out, roots, ...)`: a context manager that starts the witness
  beside the calling process (for a run inside this process) and returns
  once it is ready; leaving it stops the witness.
- `run_plan(workspace, trace)`: the roots and exclusions for a `metis run`.
"""

from ._plan import Witness
from ._plan import WitnessError
from ._plan import run_plan
from ._plan import witness_argv
from ._plan import witness_path

__all__ = ["Witness", "WitnessError", "run_plan", "witness_argv", "witness_path"]
