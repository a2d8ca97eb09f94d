"""The seeded runtime faults of `make mutate`: each patch is well formed, applies
to the tree as it is, touches `metis_runtime/` only and keeps ruff green (mypy
is checked on each patched copy by `make mutate`, which also runs them)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from metis_studies.mutate import MutantError
from metis_studies.mutate import changed_files
from metis_studies.mutate import mutants
from metis_studies.mutate import patched_copy
from metis_studies.mutate import read_mutant

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
ALL = mutants(HERE)


def test_there_are_at_least_25_faults_with_distinct_numbers() -> None:
    assert len(ALL) >= 25, len(ALL)
    numbers = [m.number for m in ALL]
    assert len(set(numbers)) == len(numbers)


@pytest.mark.parametrize("mutant", ALL, ids=[m.label for m in ALL])
def test_the_patch_applies_touches_the_runtime_and_keeps_ruff_green(
    mutant: object, tmp_path: Path
) -> None:
    from metis_studies.mutate import Mutant

    assert isinstance(mutant, Mutant)
    files = changed_files(mutant)
    assert files and all(f.startswith("metis_runtime/") for f in files), files
    for rel in files:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes((REPO / rel).read_bytes())
    done = subprocess.run(
        ["git", "apply", str(mutant.patch)], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, f"{mutant.label} does not apply: {done.stderr}"
    for rel in files:
        patched = (tmp_path / rel).read_text()
        assert patched != (REPO / rel).read_text()
        lint = subprocess.run(
            [sys.executable, "-m", "ruff", "check", "--stdin-filename", rel, "-"],
            cwd=REPO,
            input=patched,
            capture_output=True,
            text=True,
        )
        assert lint.returncode == 0, f"{mutant.label}: {lint.stdout}"


def test_a_malformed_patch_is_refused_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "7_x.patch"
    bad.write_text("no description\n")
    with pytest.raises(MutantError, match="line 1 must be"):
        read_mutant(bad)
    with pytest.raises(MutantError, match=r"NN_name\.patch"):
        read_mutant(tmp_path / "nameless.patch")
    stale = tmp_path / "99_stale.patch"
    stale.write_text(
        "# a patch whose context is gone\n--- a/metis_runtime/_loop.py\n+++ b/metis_runtime/_loop.py\n"
        "@@ -1,1 +1,1 @@\n-no such line\n+another\n"
    )
    with pytest.raises(MutantError, match="does not apply"):
        patched_copy(REPO, read_mutant(stale), tmp_path / "copy")


# --- mutant 16: the fault its line 1 names reaches the trace --------------------------

_FOLD_RUN = """
import asyncio, sys
from pathlib import Path
from metis_trace import Mode
from metis_runtime import AgentLoop, TraceWriter, make_header
from metis_runtime.context import ContextBudget, ContextController
from metis_runtime.dispatch import PassThroughGate
from metis_runtime.providers import ScriptedProvider, TextBlock, ToolUseBlock
from metis_runtime.tools import JobManager, ToolContext, ToolRegistry

ws = Path(sys.argv[1])
ws.mkdir()
for i in range(4):
    (ws / f"f{i}.txt").write_text("x" * 3000)
script = [(ToolUseBlock(f"c{i}", "read", {"path": f"f{i}.txt"}),) for i in range(4)]
registry = ToolRegistry(ToolRegistry.builtin())
trace = TraceWriter(Path(sys.argv[2]), make_header(mode=Mode.BYPASS, tools=registry.names()))
controller = ContextController(ContextBudget.for_window(2000, recent=1))
loop = AgentLoop(
    ScriptedProvider([*script, (TextBlock("done"),)]),
    registry,
    PassThroughGate(Mode.BYPASS, ws),
    ToolContext(ws, {"PATH": "/usr/bin:/bin"}, JobManager()),
    trace,
    context_hook=controller.hook(trace),
)
print(asyncio.run(loop.run("read them")).status.value)
trace.close()
"""


def _fold_run(code_root: Path, tmp: Path) -> tuple[Any, Any]:
    from metis_check import check_trace
    from metis_trace import read_trace

    env = {k: v for k, v in os.environ.items() if not k.startswith("METIS_")}
    env["PYTHONPATH"] = str(code_root)
    trace = tmp / "trace.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", _FOLD_RUN, str(tmp / "ws"), str(trace)],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    with trace.open(encoding="utf-8") as fh:
        header, events = read_trace(fh)
    return events, check_trace(events, header)


def test_16_the_late_fold_is_taken_and_close6_flags_its_compaction(tmp_path: Path) -> None:
    """Mutant 16 as first written moved the cut but left `fold`'s own
    cut-point check: every fold raised ValueError and the run just failed,
    with no `compaction` recorded, so no ID could see it. Patched as it says
    (the cut one message late, no check left), the fold is taken and its
    `compaction` separates the last folded call from its result."""
    (mutant,) = [m for m in ALL if m.number == "16"]
    for pkg in ("metis_runtime", "metis_model"):
        shutil.copytree(
            REPO / pkg, tmp_path / "code" / pkg, ignore=shutil.ignore_patterns("__pycache__")
        )
    done = subprocess.run(
        ["git", "apply", str(mutant.patch)], cwd=tmp_path / "code", capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    (tmp_path / "as-is").mkdir()
    events, report = _fold_run(REPO, tmp_path / "as-is")
    assert report.ok, report.first
    assert [e.step for e in events if e.kind == "compaction"], "the run never folds"
    (tmp_path / "patched").mkdir()
    events, report = _fold_run(tmp_path / "code", tmp_path / "patched")
    assert [e.kind for e in events].count("compaction") >= 1
    assert report.first is not None and report.first.invariant in ("CLOSE-6", "CLOSE-8")
    assert "separates calls from results" in report.first.message, report.first


def test_keep_is_made_when_missing_and_an_unusable_one_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--keep DIR` once raised FileNotFoundError (a traceback) when DIR did not exist."""
    from metis_studies.mutate.__main__ import main

    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["--keep", str(blocker / "runs"), "--only", "no-such-fault"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--keep {blocker / 'runs'}:" in err, err
    fresh = tmp_path / "a" / "b"
    assert main(["--keep", str(fresh), "--only", "no-such-fault"]) == 2  # no such fault
    assert fresh.is_dir() and "no mutant" in capsys.readouterr().err


# --- every package holding decision logic has a fault (issue 23) -------------------------

# The units of metis_runtime that decide something an invariant ID states:
# its subpackages, and the top-level modules of the runtime itself.
DECISION_UNITS = (
    "permissions/",  # the staged order, rules, settings hierarchy, salvage of lost rules
    "shell/",  # what a command line reads, writes and runs (kinds, paths, opacity)
    "plan/",  # framework validation, consent, recovery
    "mcp/",  # MCP call classes and the paths its arguments name
    "agents/",  # definitions, child authority, the spawn guard, agent tools, hooks
    "dispatch/",  # the four-class scheduler, commits
    "context/",  # the context-control steps and what a compaction records
    "tools/",  # containment, search hiding, bash classes, background jobs
    "providers/",  # stream normalisation: ids, repairs, arguments
    "_loop.py",  # the agent loop: preflight, batches, the end of a run
    "_journal.py",  # the write-ahead journal and a trace read back on resume
    "_session.py",  # the messages sent back (results first)
    "_hook_session.py",  # the Claude Code hook's trace (answers, settings)
    "_private.py",  # metis's own files, redacted
    "_redact.py",  # what a credential is and how it is cut
)
# The rest, with why each decides nothing an invariant states.
LEFT_OUT = {
    "scenarios/": "recorded cassettes and workspaces (data, no code beyond a docstring)",
    "assemble/": "puts a run together from `metis run`'s options or its journal (once "
    "the CLI's); the gate, loop and supervisor it builds decide",
    "__init__.py": "the package's exports only",
    "_errors.py": "the error classes only",
    "_failpoints.py": "kills the process at a named place, for crash tests only",
    "_graph.py": "the trace as a graph, for analysis only",
    "_input.py": "hardened file reading; refuses bad input, decides no event",
    "_layout.py": "the names of a run's files",
    "_lifeline.py": "ties a subprocess's life to the runtime's (prctl), no choice",
    "_named_output.py": "writes a path a user named (a file, not a trace event)",
    "_realpath.py": "realpath retried while a swap races it; its callers refuse",
    "_trace.py": "writes the events it is handed (seq, t; redaction is _redact's)",
    "_yaml.py": "YAML held to JSON's data model (a reader)",
}


def _units() -> set[str]:
    root = REPO / "metis_runtime"
    dirs = {f"{p.name}/" for p in root.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    return dirs | {p.name for p in root.glob("*.py")}


def test_every_runtime_unit_is_listed_as_deciding_or_left_out_with_a_reason() -> None:
    """A new package or top-level module must be classified here."""
    listed = set(DECISION_UNITS) | set(LEFT_OUT)
    assert not set(DECISION_UNITS) & set(LEFT_OUT)
    assert _units() == listed, (sorted(_units() - listed), sorted(listed - _units()))
    assert all(reason.strip() for reason in LEFT_OUT.values())


def _untouched(faults: list[Any]) -> list[str]:
    """The decision units no patch of `faults` touches."""
    touched = {f.removeprefix("metis_runtime/") for m in faults for f in changed_files(m)}
    return [
        unit
        for unit in DECISION_UNITS
        if not any(t == unit or (unit.endswith("/") and t.startswith(unit)) for t in touched)
    ]


def test_every_package_holding_decision_logic_has_a_fault() -> None:
    assert _untouched(ALL) == [], f"no seeded fault touches {_untouched(ALL)}"
    # The check can fail: one fault alone leaves all but its own unit untouched.
    (one,) = [m for m in ALL if m.number == "32"]
    assert _untouched([one]) == [u for u in DECISION_UNITS if u != "permissions/"]
