"""Proposals the shipped plan scenario does not make, for `plan:turns`
(`_mech_plan.py`): each is the notes scenario's first engine proposal with
its framework changed, replayed as a one-proposal scenario in a workspace of
its own (`ws-proposals`, so that neither the cache nor the replay position
of the main story sees them).

- `self-reference`: step 2 (`read_notes`) reads `from_step: 2`, its own
  output. Validation must refuse it (PLAN-2: references resolve only to
  completed earlier steps); the turn-log check validates the recorded
  framework again with the model, so a runtime that accepts it is caught
  from the record.
- `twice`: two `create_summary` steps with the same arguments. The owner
  approves the first ask; the second is the same action, and an approval
  authorizes one use (PLAN-9): it must not run on the first's approval.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

__all__ = ["PROPOSALS", "scenario"]

Framework = dict[str, Any]


def _self_reference(fw: Framework) -> None:
    fw["steps"][1]["args"]["from_step"] = 2


def _twice(fw: Framework) -> None:
    summary = dict(fw["steps"][2], args={**fw["steps"][2]["args"], "title": "Notes"})
    summary.pop("when", None)
    fw["steps"][2:3] = [summary, json.loads(json.dumps(summary))]
    fw["steps"][4]["args"]["text"] = "Wrote the summary twice."
    fw.pop("fillers", None)


# name -> (how the framework changes, whether the turn's ask is approved)
PROPOSALS: dict[str, tuple[Callable[[Framework], None], bool]] = {
    "self-reference": (_self_reference, False),
    "twice": (_twice, True),
}


def _framework(body: str) -> Framework:
    parts = []
    for line in body.split("\n"):
        if line.startswith("data: "):
            delta = json.loads(line[6:]).get("delta", {})
            if delta.get("type") == "input_json_delta":
                parts.append(delta["partial_json"])
    found: Framework = json.loads("".join(parts))
    return found


def scenario(root: Path, name: str) -> Path:
    """The one-proposal scenario file for proposal `name`, written under `root`."""
    from metis_runtime.plan import scenario_path

    notes = yaml.safe_load(scenario_path("notes").read_text(encoding="utf-8"))
    first = notes["interactions"][0]
    body: str = first["response"]["body"]["string"]
    fw = _framework(body)
    PROPOSALS[name][0](fw)
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "input_json_delta", "partial_json": json.dumps(fw)},
    }
    blocks = [b for b in body.split("\n\n") if "input_json_delta" not in b]
    at = next(i for i, b in enumerate(blocks) if "content_block_start" in b) + 1
    blocks.insert(at, f"event: content_block_delta\ndata: {json.dumps(delta)}")
    first["response"]["body"]["string"] = "\n\n".join(blocks)
    notes["interactions"] = [first]
    path = root / f"proposal-{name}.yaml"
    path.write_text(yaml.safe_dump(notes, sort_keys=False), encoding="utf-8")
    return path
