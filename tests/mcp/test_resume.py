"""A run killed after an MCP call committed, resumed: the servers start
again from the journaled sources, the committed call is reported from the
journal and never re-run (RETRY-1), and the resumed trace conforms."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from metis_cli._main import cli
from tests._metis_cli import env
from tests._metis_cli import metis

from .conftest import stdio_entry
from .test_cli import ALLOW
from .test_cli import config_files
from .test_cli import run_args


def test_killed_after_commit_then_resumed(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    entry = stdio_entry(MCP_FIXTURE_LOG=str(log))
    config, settings = config_files(tmp_path, {"fixture": entry}, ALLOW)
    trace = tmp_path / "run" / "trace.jsonl"
    args = run_args(tmp_path, "-q", "--mcp-config", str(config), "--settings", str(settings))
    # SIGKILLed at call 2.0's journal commit
    first = metis(*args, environ=env(METIS_FAILPOINT="journal:commit:2.0"), timeout=60)
    assert first.returncode in (-9, 137), first.stderr
    assert log.read_text().splitlines() == ["lookup greeting", "append notes.txt"]
    resumed = CliRunner().invoke(cli, ["run", "--resume", "--trace", str(trace), "-q"])
    assert resumed.exit_code == 0, resumed.stderr
    assert "the report counted three" in resumed.stdout
    assert log.read_text().splitlines() == ["lookup greeting", "append notes.txt"]  # not re-run
    assert (tmp_path / "ws" / "notes.txt").read_text() == "value of greeting\n"
    conform = CliRunner().invoke(cli, ["conform", str(trace)])
    assert conform.exit_code == 0, conform.output
