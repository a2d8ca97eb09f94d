"""The mutation score (issue 11): seeded runtime faults through the conformance channel.

`tests/mutants/NN_name.patch` are realistic faults in `metis_runtime/`, each
a small patch that keeps ruff and mypy green. `run_mutant` applies one to a
copy of the repository and runs `metis explore` and `metis conform` on the
studies' traces there; `python -m metis_studies.mutate` (`make mutate`)
reports which invariant ID caught each fault.
"""

from ._record import Record
from ._record import check_records
from ._record import make_record
from ._record import patch_sha256
from ._record import read_blind
from ._record import read_record
from ._record import read_records
from ._record import readme_block
from ._record import summary
from ._record import write_record
from ._run import Caught
from ._run import Mutant
from ._run import MutantError
from ._run import MutantResult
from ._run import changed_files
from ._run import mutants
from ._run import patched_copy
from ._run import read_mutant
from ._run import run_mutant

__all__ = [
    "Caught",
    "Mutant",
    "MutantError",
    "MutantResult",
    "Record",
    "changed_files",
    "check_records",
    "make_record",
    "mutants",
    "patch_sha256",
    "patched_copy",
    "read_blind",
    "read_mutant",
    "read_record",
    "read_records",
    "readme_block",
    "run_mutant",
    "summary",
    "write_record",
]
