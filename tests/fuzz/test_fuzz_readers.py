"""Hypothesis over every CLI reader, from mutations of real files.

For each reader the promise is the same (`assert_clean`): the exit code is
0, 1 or 2; there is no traceback; an error is one line naming its place; and
the command stays within its time and heap bounds (`bounded_run`).
"""

from __future__ import annotations

import json
import os
import tempfile
from functools import cache
from pathlib import Path

from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_check import broken_trace
from metis_check import simulate
from metis_trace import dumps_trace

from ._harness import assert_clean
from ._harness import bounded_run
from ._harness import conform_clean
from ._mutate import mutated

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
CORPORA = ROOT.parent / "shared" / "corpora"
if not CORPORA.is_dir():
    CORPORA = Path("/work/shared/corpora")
SCENARIOS = ROOT / "metis_runtime" / "scenarios"
BUILTIN_AGENTS = ROOT / "metis_runtime" / "agents" / "builtin"

# `make fuzz` runs many more (METIS_FUZZ_EXAMPLES); `make test` these.
_SCALE = int(os.environ.get("METIS_FUZZ_EXAMPLES", "40"))
_FAST = settings(max_examples=_SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_SLOW = settings(
    max_examples=max(1, _SCALE // 4), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def _head(path: Path, lines: int) -> bytes:
    """The first lines of a (large) real file: mutations stay cheap to check."""
    return b"\n".join(path.read_bytes().split(b"\n")[:lines]) + b"\n"


@cache
def trace_seeds() -> tuple[bytes, ...]:
    seeds = [dumps_trace(*simulate(seed)).encode() for seed in (1, 2, 7)]
    seeds.append(dumps_trace(*broken_trace("CLOSE-1", 1)).encode())
    return tuple(seeds)


@cache
def claude_code_seeds() -> tuple[bytes, ...]:
    seeds = [p.read_bytes() for p in sorted((DATA / "transcripts" / "claude-code").glob("*.jsonl"))]
    seeds += [_head(p, 120) for p in sorted((CORPORA / "claude-code").glob("*.jsonl"))[:3]]
    return tuple(seeds)


@cache
def api_seeds() -> dict[str, tuple[bytes, ...]]:
    folder = DATA / "transcripts" / "provider-requests"
    by_format: dict[str, list[bytes]] = {"anthropic": [], "openai-chat": [], "openai-responses": []}
    for path in sorted(folder.glob("*.json")):
        fmt = next(
            f for f in ("openai-responses", "openai-chat", "anthropic") if path.name.startswith(f)
        )
        by_format[fmt].append(path.read_bytes())
    return {k: tuple(v) for k, v in by_format.items()}


@cache
def settings_seeds() -> tuple[bytes, ...]:
    # Shapes from the Claude Code settings documentation (rules, modes, folders).
    documents = [
        {
            "permissions": {
                "allow": ["Bash(npm run test:*)", "Read(~/.zshrc)"],
                "deny": ["Bash(curl:*)", "Read(./.env)"],
            }
        },
        {
            "permissions": {
                "ask": ["Bash(git push:*)"],
                "defaultMode": "acceptEdits",
                "additionalDirectories": ["../docs/"],
            }
        },
        {
            "permissions": {
                "deny": ["WebFetch", "Edit(/src/**)"],
                "disableBypassPermissionsMode": "disable",
            },
            "env": {"X": "1"},
        },
    ]
    return tuple(json.dumps(d, indent=2).encode() for d in documents)


@cache
def definition_seeds() -> tuple[bytes, ...]:
    return tuple(p.read_bytes() for p in sorted(BUILTIN_AGENTS.glob("*.md")))


@cache
def scenario_seeds() -> tuple[bytes, ...]:
    seeds = [(SCENARIOS / name).read_bytes() for name in ("edit_files.yaml", "repeated_ids.yaml")]
    seeds += [
        p.read_bytes()
        for p in sorted((CORPORA / "provider-streams" / "openai-chat").glob("*.yaml"))
    ]
    return tuple(seeds)


@_FAST
@given(mutated(trace_seeds()))
def test_conform_trace(data: bytes) -> None:
    conform_clean(data)


@_FAST
@given(mutated(claude_code_seeds()))
def test_conform_claude_code(data: bytes) -> None:
    conform_clean(data, "--format", "claude-code")


@_FAST
@given(
    st.sampled_from(["anthropic", "openai-chat", "openai-responses"]).flatmap(
        lambda fmt: st.tuples(st.just(fmt), mutated(api_seeds()[fmt]))
    )
)
def test_conform_api_transcripts(case: tuple[str, bytes]) -> None:
    fmt, data = case
    conform_clean(data, "--format", fmt)


@_FAST
@given(mutated(trace_seeds()), mutated(trace_seeds()))
def test_conform_run_directory(root: bytes, child: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        (run / "agents" / "a1").mkdir(parents=True)
        (run / "trace.jsonl").write_bytes(root)
        (run / "agents" / "a1" / "trace.jsonl").write_bytes(child)
        assert_clean(bounded_run(["conform", str(run)]).outcome, str(run))


@_FAST
@given(mutated(settings_seeds()), st.sampled_from(["bash", "read", "edit", "webfetch"]))
def test_permissions_check_settings(data: bytes, tool: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ".claude" / "settings.json"
        path.parent.mkdir()
        path.write_bytes(data)
        argv = [
            "permissions",
            "check",
            "--settings",
            str(path),
            "--tool",
            tool,
            "--input",
            '{"command": "git push origin", "file_path": "src/a.py", "url": "https://x.org"}',
        ]
        assert_clean(bounded_run(argv).outcome, str(path), "--")


@_FAST
@given(st.lists(mutated(definition_seeds()), min_size=1, max_size=3))
def test_agents_list(files: list[bytes]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / ".metis" / "agents"
        folder.mkdir(parents=True)
        for i, data in enumerate(files):
            (folder / f"agent{i}.md").write_bytes(data)
        outcome = bounded_run(
            ["agents", "list", "--project", tmp, "--user-dir", str(Path(tmp) / "none")]
        ).outcome
        assert_clean(outcome, tmp)
        if outcome.code == 1:  # bad files are listed, each naming its file
            problems = [
                line for line in outcome.stdout.splitlines() + outcome.error_lines if ".md" in line
            ]
            assert problems, outcome


def _replay_run(workspace: Path, trace: Path, *options: str) -> list[str]:
    """`metis run`'s arguments for a headless acceptEdits run of the replay provider."""
    ws, out = str(workspace), str(trace)
    mode = ("--provider", "replay", "--mode", "acceptEdits", "--headless", "-q")
    return ["run", "--workspace", ws, "--trace", out, *options, *mode]


@_SLOW
@given(mutated(scenario_seeds()))
def test_run_scenario_with_a_cassette(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "scenario.yaml"
        scenario.write_bytes(data)
        argv = _replay_run(
            Path(tmp) / "ws", Path(tmp) / "run" / "trace.jsonl", "--scenario", str(scenario)
        )
        assert_clean(bounded_run(argv, seconds=30).outcome, str(scenario), "--scenario")


@cache
def interrupted_run() -> tuple[Path, bytes, bytes]:
    """A real run (the edit_files scenario through `metis run`), cut back to
    just before its last turn ended, as a kill would leave it: the trace and
    the journal lose their tails. Returns the folder, trace and journal."""
    from ._harness import bounded_run as run

    folder = Path(tempfile.mkdtemp(prefix="metis-fuzz-resume-"))
    trace = folder / "run" / "trace.jsonl"
    argv = _replay_run(folder / "ws", trace)
    assert run(argv, seconds=60).outcome.code == 0
    journal = trace.with_name(trace.name + ".journal")
    trace_lines = trace.read_bytes().split(b"\n")
    journal_lines = journal.read_bytes().split(b"\n")
    cut_trace = b"\n".join(trace_lines[: len(trace_lines) * 2 // 3]) + b"\n"
    cut_journal = b"\n".join(line for line in journal_lines if b'"type":"end"' not in line)
    return folder, cut_trace, cut_journal


@cache
def journal_seeds() -> tuple[bytes, ...]:
    return (interrupted_run()[2],)


@_SLOW
@given(mutated(journal_seeds()))
def test_resume_with_a_damaged_journal(journal: bytes) -> None:
    import shutil

    source, trace_bytes, _ = interrupted_run()
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(source / "ws", Path(tmp) / "ws", symlinks=True)
        trace = Path(tmp) / "run" / "trace.jsonl"
        trace.parent.mkdir()
        header = json.loads(trace_bytes.split(b"\n", 1)[0])
        trace.write_bytes(trace_bytes)
        here = journal.replace(str(source / "ws").encode(), str(Path(tmp) / "ws").encode())
        trace.with_name(trace.name + ".journal").write_bytes(here)  # this copy's workspace
        outcome = bounded_run(["run", "--resume", "--trace", str(trace), "-q"], seconds=30).outcome
        # The journal may name another workspace: "the run's workspace is gone" names it.
        places = (str(trace.parent), str(Path(tmp) / "ws"), header["run_id"], "--", "workspace")
        assert_clean(outcome, *places)


@cache
def workload_seeds() -> tuple[tuple[str, bytes], ...]:
    """A workload as `metis explore` writes one: its JSON, and the replay
    scenario that carries it in an `explore:` section."""
    from metis_studies.explore import Call
    from metis_studies.explore import Turn
    from metis_studies.explore import Workload
    from metis_studies.explore import write_scenario

    workload = Workload(
        name="fuzz-seed",
        files={"a.txt": "one\n"},
        mode="acceptEdits",
        turns=(
            Turn(
                calls=(
                    Call(id="t1", tool="edit", input={"path": "a.txt", "old": "one", "new": "two"}),
                    Call(id="t2", tool="read", input={"path": "a.txt"}),
                )
            ),
            Turn(text="done"),
        ),
    )
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / "scenario.yaml"
        write_scenario(workload, scenario)
        return ((".json", workload.model_dump_json().encode()), (".yaml", scenario.read_bytes()))


@_SLOW
@given(
    st.sampled_from([".json", ".yaml"]).flatmap(
        lambda suffix: st.tuples(
            st.just(suffix), mutated([d for s, d in workload_seeds() if s == suffix])
        )
    )
)
def test_explore_replay_of_a_damaged_workload(case: tuple[str, bytes]) -> None:
    suffix, data = case
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("workload" + suffix)
        path.write_bytes(data)
        argv = [
            "explore",
            "--replay",
            str(path),
            "--execution",
            "in-process",
            "--out",
            str(Path(tmp) / "out"),
        ]
        assert_clean(bounded_run(argv, seconds=60).outcome, str(path))
