"""The permission gate's decision time per call (issue 12).

Two workloads, each decided by the production `Gate` the way the loop's
preflight decides (the tool's kind, its paths; the shell analysis cache
cleared so that every call is parsed afresh, as a new command is):

1. every command of the bypass corpus and its controls
   (`tests/data/permissions/bypass_corpus.yaml`) under its own rules;
2. the tool calls of the shipped scenarios (`metis_runtime/scenarios/*.yaml`,
   read out of their recorded SSE bodies) under a policy of the usual shape.

Recorded in `benchmark.extra_info`: microseconds per call (median of rounds),
for each workload, and the ratio of a decision to a bare `analyze_command`
of the same lines measured in the same run. The figures before issue 12
(bashlex) were measured with `benchmarks/gate_before_after.py` and are in
the README.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from metis_runtime.permissions import Gate
from metis_runtime.permissions import Policy
from metis_runtime.permissions import _gate as gate_module
from metis_runtime.shell import analyze_command
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import Source
from metis_trace import ToolKind

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "permissions" / "bypass_corpus.yaml"
SCENARIOS = ROOT / "metis_runtime" / "scenarios"
ROUNDS = 7
USUAL = {
    "allow": ["Bash(npm test)", "Edit(src/**)", "Read"],
    "deny": ["Bash(rm:*)", "Read(.env)"],
    "ask": ["Bash(git push:*)"],
}
_KINDS = {"read": ToolKind.READ_ONLY, "ls": ToolKind.READ_ONLY, "grep": ToolKind.READ_ONLY,
          "glob": ToolKind.READ_ONLY, "write": ToolKind.EDIT, "edit": ToolKind.EDIT}  # fmt: skip


def corpus_calls() -> list[tuple[dict[str, list[str]], str]]:
    data = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))
    out = []
    for entry in [*data["shapes"], *data["controls"]]:
        rules = {"deny": entry.get("deny", ["Bash(rm:*)"]), "allow": entry.get("allow", ["Bash"])}
        out.append((rules, entry["command"]))
    return out


def scenario_calls() -> list[tuple[str, dict[str, Any]]]:
    """(tool, input) of every tool_use in the scenarios' recorded streams."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for path in sorted(SCENARIOS.glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        for body in re.findall(r"string: \|\+\n((?:        .*\n|\n)+)", text):
            open_blocks: dict[int, list[str]] = {}
            names: dict[int, str] = {}
            for line in body.splitlines():
                line = line.strip()
                if not line.startswith("data: "):
                    continue
                event = json.loads(line[len("data: ") :])
                kind, index = event.get("type"), event.get("index")
                if kind == "content_block_start" and event["content_block"]["type"] == "tool_use":
                    names[index], open_blocks[index] = event["content_block"]["name"], []
                elif kind == "content_block_delta" and index in open_blocks:
                    open_blocks[index].append(event["delta"].get("partial_json", ""))
                elif kind == "content_block_stop" and index in open_blocks:
                    raw = "".join(open_blocks.pop(index)) or "{}"
                    calls.append((names[index], json.loads(raw)))
    return calls


def _policy(rules: dict[str, list[str]]) -> Policy:
    policy = Policy()
    for behavior, patterns in rules.items():
        for pattern in patterns:
            policy.add(Source.PROJECT, RuleBehavior(behavior), pattern)
    return policy


def _per_call(fn: Callable[[], int]) -> float:
    """Microseconds per call: median over rounds."""
    values = []
    for _ in range(ROUNDS):
        gate_module._analyze.cache_clear()
        start = time.perf_counter()
        n = fn()
        values.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(values)


def test_gate_decision_per_call(benchmark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ws = Path(os.path.realpath(tmp_path))
    (ws / "src").mkdir()
    corpus = [(Gate(_policy(rules), Mode.DEFAULT, ws, Route.HEADLESS), cmd)
              for rules, cmd in corpus_calls()]  # fmt: skip
    usual = _policy(USUAL)
    scenario_gate = Gate(usual, Mode.ACCEPT_EDITS, ws, Route.HEADLESS)
    scenario = scenario_calls()
    assert len(corpus) >= 240 and len(scenario) >= 10

    def decide_corpus() -> int:
        for gate, command in corpus:
            gate.decide("bash", {"command": command}, ToolKind.EXEC)
        return len(corpus)

    def analyze_corpus() -> int:
        for _, command in corpus:
            analyze_command(command)
        return len(corpus)

    def decide_scenarios() -> int:
        for tool, tool_input in scenario:
            path = tool_input.get("path")
            paths = [path] if isinstance(path, str) else []
            scenario_gate.decide(tool, tool_input, _KINDS.get(tool, ToolKind.EXEC), paths)
        return len(scenario)

    corpus_us = _per_call(decide_corpus)
    analyze_us = _per_call(analyze_corpus)
    scenario_us = _per_call(decide_scenarios)
    benchmark.extra_info["bypass corpus calls"] = len(corpus)
    benchmark.extra_info["bypass corpus: us per decision"] = round(corpus_us, 1)
    benchmark.extra_info["bypass corpus: us per analyze_command"] = round(analyze_us, 1)
    benchmark.extra_info["decision / analysis"] = round(corpus_us / analyze_us, 2)
    benchmark.extra_info["scenario calls"] = len(scenario)
    benchmark.extra_info["scenario calls: us per decision"] = round(scenario_us, 1)
    benchmark.pedantic(decide_corpus, rounds=3, iterations=1)


def test_claude_code_hook_start(benchmark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """`metis hook claude-code` on one PreToolUse payload, in fresh processes,
    against `python -c pass` measured in the same rounds (the hook runs once
    per tool call of a Claude Code session)."""
    import subprocess
    import sys

    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text(
        json.dumps({"permissions": {"deny": ["Bash(rm *)"], "allow": ["Bash(npm test)"]}})
    )
    payload = json.dumps({
        "session_id": "bench", "transcript_path": str(tmp_path / "t.jsonl"), "cwd": str(project),
        "permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": "npm test && git status | head -5"}, "tool_use_id": "toolu_1",
    })  # fmt: skip
    # Without the session helper: every call loads the gate (bench_hook.py has both).
    env = {**os.environ, "HOME": str(tmp_path), "METIS_MANAGED_SETTINGS_DIRS": str(tmp_path),
           "METIS_HOOK_HELPER": "0"}  # fmt: skip
    argv = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "metis hook claude-code": [sys.executable, "-m", "metis_cli", "hook", "claude-code"],
    }

    def wall(args: list[str]) -> float:
        start = time.perf_counter()
        done = subprocess.run(args, input=payload, capture_output=True, text=True, env=env,
                              check=False)  # fmt: skip
        assert done.returncode == 0, done.stderr
        return time.perf_counter() - start

    times: dict[str, list[float]] = {name: [] for name in argv}
    for _ in range(10):
        for name, args in argv.items():
            times[name].append(wall(args))
    median = {name: statistics.median(v) for name, v in times.items()}
    for name, value in median.items():
        benchmark.extra_info[f"{name} s"] = round(value, 4)
    benchmark.extra_info["hook / python -c pass"] = round(
        median["metis hook claude-code"] / median["python -c pass"], 2
    )
    benchmark.pedantic(wall, args=(argv["metis hook claude-code"],), rounds=3, iterations=1)
