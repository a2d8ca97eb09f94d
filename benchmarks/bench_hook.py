"""CPU per PreToolUse payload of the Claude Code hook, in fresh processes (issue 26).

Claude Code starts the hook afresh for every tool call. Measured side by side
in one run, as CPU seconds (user + system, `resource.getrusage` of the
children; the helper's own from `/proc/<pid>/stat`), each a ratio to
`python -c pass` measured in the same rounds:

- `metis hook claude-code` with its session helper up (the normal case after
  a session's first call): the hook process plus the helper's share;
- `metis-hook` (the console script, no click) the same way;
- either with `METIS_HOOK_HELPER=0`: everything loaded in the hook process,
  what a session's first call costs without the SessionStart hook;
- the SessionStart hook (it starts the helper and returns), the helper's
  load (once per session, while the session starts), and the session's first
  PreToolUse after it.

Target: at most 0.1 s of CPU per payload (about 3x `python -c pass`). The
figures go to the README; the test asserts only that the helper answered.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROUNDS = 12
HOOK = [sys.executable, "-m", "metis_cli", "hook", "claude-code"]
METIS_HOOK = [sys.executable, "-m", "metis_cli._hook_client"]
_TICK = os.sysconf("SC_CLK_TCK")


def _child_cpu(argv: list[str], stdin: str, env: dict[str, str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, done.stderr
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _helper_pid(project: Path) -> int | None:
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if b"metis_cli._hook_helper" in cmdline:
            environ = Path(f"/proc/{entry}/environ")
            try:
                if str(project).encode() in environ.read_bytes():
                    return int(entry)
            except OSError:
                continue
    return None


def _proc_cpu(pid: int) -> float:
    raw = Path(f"/proc/{pid}/stat").read_text()
    fields = raw[raw.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def test_hook_cpu_per_payload(benchmark, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"permissions": {
        "deny": ["Bash(rm *)", "Read(./.env)"], "allow": ["Bash(npm test)"]}}))  # fmt: skip
    calls = [
        ("Bash", {"command": "npm test && git status | head -5"}),
        ("Bash", {"command": "rm -rf build"}),
        ("Read", {"file_path": str(project / "README.md")}),
        ("Grep", {"pattern": "TODO"}),
        ("Edit", {"file_path": str(project / "a.py"), "old_string": "a", "new_string": "b"}),
    ]
    payloads = [json.dumps({
        "session_id": "bench-hook", "transcript_path": str(tmp_path / "t.jsonl"),
        "cwd": str(project), "permission_mode": "default", "hook_event_name": "PreToolUse",
        "tool_name": tool, "tool_input": tool_input, "tool_use_id": f"toolu_{i}",
    }) for i, (tool, tool_input) in enumerate(calls)]  # fmt: skip
    env = {**os.environ, "HOME": str(tmp_path), "METIS_MANAGED_SETTINGS_DIRS": str(tmp_path),
           "CLAUDE_PROJECT_DIR": str(project)}  # fmt: skip
    alone = {**env, "METIS_HOOK_HELPER": "0"}
    env["METIS_HOOK_HELPER"] = "1"

    start = payloads[0].replace('"PreToolUse"', '"SessionStart"')
    session_start = _child_cpu(HOOK, start, env)  # starts the session's helper
    deadline = time.monotonic() + 30
    while (helper := _helper_pid(project)) is None or not _listening(helper):
        assert time.monotonic() < deadline, "the helper did not start"
        time.sleep(0.2)
    helper_load = _proc_cpu(helper)
    first = _child_cpu(HOOK, payloads[0], env) + _proc_cpu(helper) - helper_load

    cpu: dict[str, list[float]] = {name: [] for name in (
        "python -c pass", "metis hook claude-code (helper up)", "metis-hook (helper up)",
        "metis hook claude-code (no helper)", "metis-hook (no helper)")}  # fmt: skip
    helper_share = 0.0
    for r in range(ROUNDS):
        payload = payloads[r % len(payloads)]
        cpu["python -c pass"].append(_child_cpu([sys.executable, "-c", "pass"], "", env))
        for name, argv in (("metis hook claude-code", HOOK), ("metis-hook", METIS_HOOK)):
            start = _proc_cpu(helper)
            client = _child_cpu(argv, payload, env)
            share = _proc_cpu(helper) - start
            helper_share += share
            cpu[f"{name} (helper up)"].append(client + share)
            cpu[f"{name} (no helper)"].append(_child_cpu(argv, payload, alone))
    _child_cpu(HOOK, payloads[0].replace('"PreToolUse"', '"SessionEnd"'), env)  # helper ends
    median = {name: statistics.median(v) for name, v in cpu.items()}
    base = median["python -c pass"]
    for name, value in median.items():
        benchmark.extra_info[f"{name}: CPU s"] = round(value, 4)
        if name != "python -c pass":
            benchmark.extra_info[f"{name} / python -c pass"] = round(value / base, 2)
    benchmark.extra_info["helper's CPU s per call"] = round(helper_share / (2 * ROUNDS), 4)
    for name, value in (("SessionStart (starts the helper)", session_start),
                        ("the helper's load, once per session", helper_load),
                        ("first PreToolUse after SessionStart", first)):  # fmt: skip
        benchmark.extra_info[f"{name}: CPU s"] = round(value, 4)
        benchmark.extra_info[f"{name} / python -c pass"] = round(value / base, 2)
    benchmark.extra_info["load average"] = round(os.getloadavg()[0], 1)
    print(json.dumps(benchmark.extra_info, indent=1))
    benchmark.pedantic(_child_cpu, args=(HOOK, payloads[0], alone), rounds=3, iterations=1)


def _listening(pid: int) -> bool:
    """Whether the helper has bound its socket (it loads the gate first)."""
    try:
        links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:
        return False
    return sum(link.startswith("socket:") for link in links) > 0
