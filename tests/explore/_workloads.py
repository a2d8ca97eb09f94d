"""Small explore workloads the `metis explore` command tests replay."""

from __future__ import annotations

from metis_studies.explore import Call
from metis_studies.explore import Turn
from metis_studies.explore import Workload

# One edit of `a.txt` ("one" -> "two") in acceptEdits, then a final answer.
ONE_EDIT = Workload(
    name="one-edit",
    files={"a.txt": "one\n"},
    mode="acceptEdits",
    turns=(
        Turn(
            calls=(Call(id="t1", tool="edit", input={"path": "a.txt", "old": "one", "new": "two"}),)
        ),
        Turn(text="done"),
    ),
)
