"""Fast start: light commands import none of the heavy dependencies.

Each command runs in a fresh interpreter exactly as `metis` does; at exit the
interpreter writes the names of every module it loaded. A module-level import
of z3, networkx, httpx, the shell parser or the runtime in a module those
commands load fails here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLAUDE_CODE = ROOT / "tests" / "data" / "transcripts" / "claude-code" / "tool_heavy.jsonl"

HEAVY = (
    "z3",
    "networkx",
    "graphviz",
    "httpx",
    "bashlex",
    "tree_sitter",
    "tree_sitter_bash",
    "metis_runtime",
    "metis_proofs",
    "hypothesis",
    "pytest",
    "yaml",
    "asyncio",
)
# The trace schema (pydantic) is loaded only where a metis trace is read.
SCHEMA = ("pydantic", "metis_trace")
# What every command that reads a file loads (both packages are lazy): the
# hardened file layer, strict JSON and the error classes.
INPUT_LAYER = {
    "metis_runtime",
    "metis_runtime._input",
    "metis_runtime._failpoints",
    # The one lazy-exports helper every package uses, and the error classes
    # (stdlib only; importing them runs metis_trace's lazy __init__, no pydantic).
    "metis_trace._lazy",
    "metis_trace._errors",
    # Where a run's files are (TRACE-2's scan of a trace's run): pathlib only.
    "metis_runtime._layout",
    "metis_trace",
    "metis_trace._strict_json",
    # The credential detector: output that may hold a credential is redacted
    # (metis_cli/_redacting.py; `--version` prints nothing that loads it).
    "metis_trace._credentials",
    *(
        f"metis_trace._credentials.{m}"
        for m in ("_families", "_names", "_rules", "_encoded", "_escapes", "_screen", "_scanner")
    ),
    # Its decoding of base64 and percent-escapes (stdlib only).
    "metis_trace._encodings",
    "metis_trace._plain_variables",
    # Its map from a decoded view back to the text (stdlib only).
    "metis_trace._offsets",
}

_PROBE = """
import atexit, json, sys
out = sys.argv.pop()
atexit.register(lambda: open(out, "w").write(json.dumps(sorted(sys.modules))))
sys.argv = ["metis", *sys.argv[1:]]
from metis_cli import main
main()
"""


def _loaded(tmp_path: Path, *args: str) -> tuple[int, set[str]]:
    out = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args, str(out)], capture_output=True, text=True
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.returncode, set(json.loads(out.read_text()))


def _heavy(modules: set[str], banned: tuple[str, ...]) -> list[str]:
    reads = "metis_model" not in banned  # `--version` reads no file
    kept = modules - INPUT_LAYER if reads else modules
    return sorted(m for m in kept if any(m == b or m.startswith(b + ".") for b in banned))


@pytest.mark.parametrize(
    ("args", "banned"),
    [
        (("--version",), (*HEAVY, *SCHEMA, "metis_model")),
        (("conform", "--format", "claude-code", str(CLAUDE_CODE)), (*HEAVY, *SCHEMA)),
        (("spec",), (*HEAVY, *SCHEMA)),
    ],
    ids=["version", "conform-claude-code", "spec"],
)
def test_light_commands_import_nothing_heavy(
    tmp_path: Path, args: tuple[str, ...], banned: tuple[str, ...]
) -> None:
    code, modules = _loaded(tmp_path, *args)
    assert code == 0
    assert _heavy(modules, banned) == []


def test_conform_on_a_trace_loads_the_schema_but_not_the_runtime(tmp_path: Path) -> None:
    from metis_check import simulate
    from metis_trace import dumps_trace

    trace = tmp_path / "run.jsonl"
    trace.write_text(dumps_trace(*simulate(3)))
    code, modules = _loaded(tmp_path, "conform", str(trace))
    assert code == 0
    assert "pydantic" in modules  # the probe does see imports
    assert _heavy(modules, HEAVY) == []


def test_the_probe_sees_a_heavy_command(tmp_path: Path) -> None:
    code, modules = _loaded(tmp_path, "prove", "--help")
    assert code == 0
    assert _heavy(modules, ("metis_proofs",)) != []


def test_every_command_in_the_table_loads_and_has_help() -> None:
    from click.testing import CliRunner

    from metis_cli._main import COMMANDS
    from metis_cli._main import cli

    listing = CliRunner().invoke(cli, ["--help"])
    assert listing.exit_code == 0
    for name in COMMANDS:
        assert name in listing.output
        assert cli.get_command(None, name) is not None  # type: ignore[arg-type]


_WITHOUT = """
import sys
for name in ("hypothesis", "pytest", "_pytest", "pytest_benchmark"):
    sys.modules[name] = None  # as if the test extra were not installed
sys.argv = ["metis", *sys.argv[1:]]
from metis_cli import main
main()
"""


def _without_test_extra(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _WITHOUT, *args], capture_output=True, text=True, check=False
    )


def test_the_light_commands_run_without_the_test_extra() -> None:
    assert _without_test_extra("--version").returncode == 0
    done = _without_test_extra("conform", "--format", "claude-code", str(CLAUDE_CODE))
    assert done.returncode == 0, done.stderr


def test_a_command_that_needs_hypothesis_says_so_in_one_line(tmp_path: Path) -> None:
    from metis_cli._main import COMMANDS

    if "explore" not in COMMANDS:
        pytest.skip("no explore command")
    done = _without_test_extra("explore", "--budget", "1", "--out", str(tmp_path / "x"))
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().splitlines() == [
        "metis: error: this command needs hypothesis, from the 'test' extra: "
        "pip install 'metis[test]'"
    ]
