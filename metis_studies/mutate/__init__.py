"""The mutation score (issue 11): seeded runtime faults through the conformance channel.

`tests/mutants/NN_name.patch` are realistic faults in `metis_runtime/`, each
a small patch that keeps ruff and mypy green. `run_mutant` applies one to a
copy of the repository and runs `metis explore` and `metis conform` on the
studies' traces there; `python -m metis_studies.mutate` (`make mutate`)
reports which invariant ID caught each fault.
"""

from ._record import (
    Record,
    check_records,
    make_record,
    patch_sha256,
    read_blind,
    read_record,
    read_records,
    readme_block,
    summary,
    write_record,
)
from ._run import (
    Caught,
    Mutant,
    MutantError,
    MutantResult,
    changed_files,
    mutants,
    patched_copy,
    read_mutant,
    run_mutant,
)

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
