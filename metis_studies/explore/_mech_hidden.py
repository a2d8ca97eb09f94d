"""What the gate hides, and what the file tools will not follow
(specs/permissions.md, "Read and Edit" on the search tools; specs/secrets.md,
"Containment"; `metis_runtime/tools/_fs.py`, `_search.py`, `_contain.py`).

- `search:all-hidden`: a `grep` of a folder whose every file a `Read` deny
  hides (the search tools skip the files a Read rule denies; the folder
  itself is not denied). Nothing may be searched: the files hold a marker
  planted as a canary, so a search that reads them puts it in the trace
  (TRACE-2).
- `contain:swapped-link`: in one batch, a project script (`python3
  swap.py`: the gate cannot see what it does, and bypass mode runs it)
  replaces `notes.txt` with a link to `vault/secret.txt` (which a `Read`
  deny covers), then a read of `notes.txt`, decided before the link
  existed. The file tools open without following links beneath the root
  (`openat2` RESOLVE_NO_SYMLINKS), so the read must fail; the linked file
  holds the marker too.
- `contain:racing-link`: a background script flips `notes.txt` between
  the plain file and that link (atomic renames, for 2.5 s) while batches
  of reads of `notes.txt` run. A read allowed as the plain file must never
  return the linked file: the name's check is the call's own, and the open
  follows no link, so a read that meets the link at its open fails (the
  window between the run-time check and the open is what
  RESOLVE_NO_SYMLINKS closes).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from metis_trace import Mode
from metis_trace import ResultStatus

from ._mech_case import Case
from ._mech_files import marker_token
from ._mech_read import Traces
from ._mech_read import answered
from ._mech_read import script
from ._pieces import bash
from ._pieces import read
from ._workload import Rule
from ._workload import Turn
from ._workload import Workload

HIDDEN_MARKER = f"metis-explore-hidden-{marker_token('hidden', 20)}"
_DENY = (Rule(behavior="deny", pattern="Read(vault/*.txt)"),)
SWAP = (
    'import os\nos.symlink("vault/secret.txt", "swap.tmp")\nos.replace("swap.tmp", "notes.txt")\n'
)


def all_hidden() -> Workload:
    files = {f"vault/{n}.txt": f"{n}: {HIDDEN_MARKER}\n" for n in ("a", "b")}
    return Workload(
        name="mech-search:all-hidden",
        aims=("search:all-hidden",),
        files={**files, "notes.txt": "notes\n"},
        turns=script([("grep", {"pattern": "metis-explore", "path": "vault"})]),
        mode=Mode.BYPASS,
        rules=_DENY,
        canaries=(HIDDEN_MARKER,),
    )


def _linked(focus: str, script_name: str, code: str, turns: tuple[Turn, ...]) -> Workload:
    """A workload whose project script makes `notes.txt` a link to the
    denied `vault/secret.txt`, which holds the planted marker."""
    return Workload(
        name=f"mech-{focus}",
        aims=(focus,),
        files={
            "notes.txt": "notes\n",
            "vault/secret.txt": f"secret {HIDDEN_MARKER}\n",
            script_name: code,
        },
        turns=turns,
        mode=Mode.BYPASS,
        rules=_DENY,
        canaries=(HIDDEN_MARKER,),
    )


def swapped_link() -> Workload:
    turns = script([bash("python3 swap.py"), read("notes.txt")])
    return _linked("contain:swapped-link", "swap.py", SWAP, turns)


# Flips `notes.txt` between a regular file and a link to `vault/secret.txt`
# (each an atomic rename) for a while, then leaves the regular file.
RACE = (
    "import os, time\n"
    "os.link('notes.txt', 'plain.txt')\n"
    "end = time.monotonic() + 2.5\n"
    "while time.monotonic() < end:\n"
    "    os.symlink('vault/secret.txt', 'l.tmp'); os.replace('l.tmp', 'notes.txt')\n"
    "    os.link('plain.txt', 'p.tmp'); os.replace('p.tmp', 'notes.txt')\n"
    "os.remove('plain.txt')\n"
)
RACING_READS = 16


def racing_link() -> Workload:
    reads = [read("notes.txt") for _ in range(RACING_READS)]
    flip, wait = [bash("python3 race.py", background=True)], [bash("sleep 0.3")]
    return _linked("contain:racing-link", "race.py", RACE, script(flip, wait, reads, reads, reads))


def reached(workload: Workload, root: Path, traces: Traces) -> Counter[str]:
    seen: Counter[str] = Counter()
    for _, tool, inp, r in answered(traces):
        if tool == "grep" and inp.get("path") == "vault":
            seen["search:all-hidden"] += 1  # answered: what it held, TRACE-2 scanned
        refused = r.status is ResultStatus.ERROR and workload.name.endswith("swapped-link")
        if tool == "read" and inp.get("path") == "notes.txt" and refused:
            seen["contain:swapped-link-refused"] += 1
        if tool == "read" and workload.name.endswith("racing-link"):
            seen["contain:racing-read"] += 1
            if r.status is ResultStatus.ERROR and "symlink on the way" in r.content:
                seen["contain:racing-link-refused-at-open"] += 1
    return seen


CASES = (
    Case("search:all-hidden", "tools", ("search:all-hidden",), all_hidden, reached),
    Case("contain:swapped-link", "tools", ("contain:swapped-link-refused",), swapped_link, reached),
    Case("contain:racing-link", "tools", ("contain:racing-read",), racing_link, reached),
)
