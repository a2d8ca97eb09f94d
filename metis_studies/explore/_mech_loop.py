"""The loop's results message as the provider gets it (specs/closure.md,
CLOSE-3; `metis_runtime/_session.py` `results_message`, `_loop.py`).

- `results:job-note`: a background job that ends while a later foreground
  call runs; its note ("[background job ... ended: ...]") goes into that
  batch's results message, after the tool results (the Messages API reads
  `tool_result` blocks first in a user message). The workload runs in
  process, so the request bodies as posted are kept (`_wire.py`) and checked
  like every in-process run's; this case makes sure one of them carries a
  note beside its results.
- `results:job-note-responses`: the same on the OpenAI Responses wire
  (`Workload.wire`), whose encoder keeps the message's block order: the
  note must be a `message` item after the `function_call_output` items,
  never between the calls and their outputs, which strict Responses
  providers reject (OAR-6 under CLOSE-2, checked on the body as posted).
- `results:missing-ids`: an answer whose two `tool_use` blocks carry no id
  (an empty one, as some gateways send): the message builder synthesizes one
  per block (`missing-<message>-<index>`), and the request after it must
  hold two distinct ids, each answered once (ANT-4, ANT-5 under CLOSE-1,
  CLOSE-7, checked on the body as posted).
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from metis_trace import Mode

from ._mech_case import Case
from ._mech_read import Traces
from ._mech_read import script
from ._pieces import bash
from ._pieces import read
from ._wire import blocks_of
from ._wire import sent_bodies
from ._workload import Call
from ._workload import Turn
from ._workload import Wire
from ._workload import Workload

NOTE = "[background job"


def job_note(wire: Wire = "anthropic") -> Workload:
    job = bash("sleep 0.2; echo done > job.txt", background=True)
    wait = bash("until test -s job.txt; do sleep 0.05; done; sleep 0.5")
    focus = "results:job-note" + ("" if wire == "anthropic" else "-responses")
    return Workload(
        name=f"mech-{focus}",
        aims=(focus,),
        turns=script([job], [wait]),
        mode=Mode.BYPASS,
        wire=wire,
    )


def job_note_responses() -> Workload:
    return job_note("openai-responses")


def missing_ids() -> Workload:
    calls = tuple(Call(id="", tool=t, input=i) for t, i in (read("a.txt"), read("b.txt")))
    return Workload(
        name="mech-results:missing-ids",
        aims=("results:missing-ids",),
        files={"a.txt": "a\n", "b.txt": "b\n"},
        turns=(Turn(calls=calls), Turn(text="Done.")),
        mode=Mode.BYPASS,
    )


def reached(workload: Workload, root: Path, traces: Traces) -> Counter[str]:
    seen: Counter[str] = Counter()
    for body in sent_bodies(root):
        items = [i for i in body.get("input") or () if isinstance(i, Mapping)]
        for output, after in itertools.pairwise(items):
            if output.get("type") == "function_call_output" and NOTE in str(after.get("content")):
                seen["results:job-note-responses"] += 1  # the note after the outputs
        for message in body.get("messages") or ():
            blocks = blocks_of(message) if isinstance(message, Mapping) else []
            kinds = [b.get("type") for b in blocks]
            notes = [b for b in blocks if b.get("type") == "text" and NOTE in str(b.get("text"))]
            if "tool_result" in kinds and notes:
                seen["results:job-note"] += 1
            ids = [str(b.get("id")) for b in blocks if b.get("type") == "tool_use"]
            if sum(i.startswith("missing-") for i in ids) > 1:
                seen["results:missing-ids"] += 1
    return seen


CASES = (
    Case(
        "results:job-note",
        "loop",
        ("results:job-note",),
        job_note,
        reached,
        execution="in-process",  # the bodies as posted are kept in process only
    ),
    Case(
        "results:job-note-responses",
        "providers",
        ("results:job-note-responses",),
        job_note_responses,
        reached,
        execution="in-process",
    ),
    Case(
        "results:missing-ids",
        "providers",
        ("results:missing-ids",),
        missing_ids,
        reached,
        execution="in-process",
    ),
)
