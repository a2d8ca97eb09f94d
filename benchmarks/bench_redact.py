"""The redactor's cost per trace line (`Redactor.json_bytes`), side by side in
one run: the lines a no-op call writes (decision, effect_start, effect_end,
result), a result holding a credential (the slow path: every string
redacted), and JSON encoding alone (what a line costs without redaction).
Ratios go to `benchmark.extra_info`; nothing here asserts a time. The
per-call target itself is measured by bench_dispatch.py (trace writing is
part of it)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

from pydantic_core import to_json

from metis_runtime import Redactor

LINES: dict[str, dict[str, Any]] = {
    "decision": {
        "seq": 3, "t": 0.007464, "causes": [2], "kind": "decision", "occ": "1.0",
        "decision": "allow", "stage": "mode", "rule": None,
        "facts": {"mode": "acceptEdits", "kind": "read_only", "protected": False,
                  "secret": False, "in_scope": True, "transition": False, "rules": []},
        "route": "headless", "cls": "safe", "key": None,
    },
    "effect_start": {"seq": 4, "t": 0.0075, "causes": [3], "kind": "effect_start", "occ": "1.0"},
    "effect_end": {"seq": 5, "t": 0.0076, "causes": [4], "kind": "effect_end", "occ": "1.0",
                   "outcome": "ok", "committed": False},
    "result": {"seq": 6, "t": 0.0077, "causes": [5], "kind": "result", "occ": "1.0",
               "call_id": "toolu_01VRpZ7oRezbD698Bu1JuJp7", "status": "ok",
               "content": "README.md\nsrc/\n" + "a line of ordinary output\n" * 20},
}
_KEY = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
SECRET_LINE = {**LINES["result"], "content": _KEY * 3}


def _each(fn: Callable[[], Any], n: int = 20000) -> float:
    best = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            fn()
        best.append((time.perf_counter() - start) / n)
    return statistics.median(best)


def test_redactor_cost_per_trace_line(benchmark: Any) -> None:
    redactor = Redactor({"ACME_SERVICE_TOKEN": "s3rv1ce-t0ken-0123456789"})
    info = benchmark.extra_info
    call = 0.0
    for name, obj in LINES.items():
        redacted = _each(lambda obj=obj: redactor.json_bytes(obj))
        plain = _each(lambda obj=obj: to_json(obj))
        info[f"us_{name}"] = round(redacted * 1e6, 2)
        info[f"us_{name}_json_only"] = round(plain * 1e6, 2)
        call += redacted
    info["us_per_call_four_lines"] = round(call * 1e6, 2)
    slow = _each(lambda: redactor.json_bytes(SECRET_LINE), 2000)
    info["us_secret_line_slow_path"] = round(slow * 1e6, 2)
    benchmark.pedantic(redactor.json_bytes, args=(LINES["decision"],), rounds=200, iterations=10)
