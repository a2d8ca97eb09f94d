"""`metis run --mcp-config FILE` against a real server (the replay scenario
tests/mcp/data/mcp_scenario.yaml), its trace checked by `metis conform`;
bad configurations and servers that do not start as one line and exit 2;
`.mcp.json` only when approved."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from metis_cli._main import cli
from metis_trace import read_trace

from .conftest import start_http
from .conftest import stdio_entry
from .conftest import stop

SCENARIO = Path(__file__).parent / "data" / "mcp_scenario.yaml"
ALLOW = {"permissions": {"allow": ["mcp__fixture"]}}


def config_files(
    tmp_path: Path, servers: dict[str, object], settings: dict[str, object]
) -> tuple[Path, Path]:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    settings_path = tmp_path / "settings.json"
    settings_path.write_text(json.dumps(settings))
    return config, settings_path


def run_args(tmp_path: Path, *extra: str, run: str = "run") -> list[str]:
    """`metis run` of the MCP scenario in `tmp_path/ws`, its trace in `tmp_path/<run>`."""
    trace = tmp_path / run / "trace.jsonl"
    return [
        "run",
        *("--workspace", str(tmp_path / "ws"), "--scenario", str(SCENARIO)),
        *("--headless", "--trace", str(trace), *extra),
    ]


def _run(tmp_path: Path, *extra: str, run: str = "run") -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, run_args(tmp_path, *extra, run=run))
    return result.exit_code, result.stdout, result.stderr


def test_run_with_a_real_server_conforms(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    entry = stdio_entry(MCP_FIXTURE_LOG=str(log), FIXTURE_TOKEN="${HOME}")
    config, settings = config_files(tmp_path, {"fixture": entry}, ALLOW)
    code, out, err = _run(tmp_path, "--mcp-config", str(config), "--settings", str(settings))
    assert code == 0, err
    assert "the report counted three" in out
    assert "env FIXTURE_TOKEN withheld" in err  # secret-named: filtered as the tools' env is
    assert "mcp__fixture__broken_schema: not offered" in err
    assert (tmp_path / "ws" / "notes.txt").read_text() == "value of greeting\n"
    assert log.read_text().splitlines() == ["lookup greeting", "append notes.txt"]
    conform = CliRunner().invoke(cli, ["conform", str(tmp_path / "run" / "trace.jsonl")])
    assert conform.exit_code == 0, conform.output
    with (tmp_path / "run" / "trace.jsonl").open(encoding="utf-8") as fh:
        header, _ = read_trace(fh)
    assert "mcp__fixture__append" in header.tools
    meta = header.meta["mcp"]
    assert meta["servers"]["fixture"]["transport"] == "stdio"
    assert meta["tools"]["mcp__fixture__append"] == {
        "server": "fixture",
        "tool": "append",
        "annotations": {},
        "class": "exclusive",
        "key": None,
    }
    assert meta["tools"]["mcp__fixture__purge"]["class"] == "exclusive"  # destructive wins
    assert "FIXTURE_TOKEN" not in json.dumps(header.meta)


def test_run_with_a_server_over_http_conforms(tmp_path: Path) -> None:
    log, ws = tmp_path / "log.txt", tmp_path / "ws"
    ws.mkdir()
    proc, port = start_http(log, cwd=ws)  # the server resolves `notes.txt` in its own cwd
    try:
        entry = {"type": "http", "url": f"http://127.0.0.1:{port}/mcp"}
        config, settings = config_files(tmp_path, {"fixture": entry}, ALLOW)
        code, out, err = _run(tmp_path, "--mcp-config", str(config), "--settings", str(settings))
    finally:
        stop(proc)
    assert code == 0, err
    assert "the report counted three" in out
    assert (ws / "notes.txt").read_text() == "value of greeting\n"
    assert log.read_text().splitlines() == ["lookup greeting", "append notes.txt"]
    trace = tmp_path / "run" / "trace.jsonl"
    conform = CliRunner().invoke(cli, ["conform", str(trace)])
    assert conform.exit_code == 0, conform.output
    with trace.open(encoding="utf-8") as fh:
        header, _ = read_trace(fh)
    assert header.meta["mcp"]["servers"]["fixture"]["transport"] == "http"


def test_denied_server_tool_is_denied_in_the_run(tmp_path: Path) -> None:
    settings = {"permissions": {"allow": ["mcp__fixture"], "deny": ["mcp__fixture__append"]}}
    config, settings_path = config_files(tmp_path, {"fixture": stdio_entry()}, settings)
    code, _, err = _run(
        tmp_path, "--mcp-config", str(config), "--settings", str(settings_path), "--json"
    )
    assert code == 0, err
    assert not (tmp_path / "ws" / "notes.txt").exists()


def test_bad_config_is_one_line_exit_2(tmp_path: Path) -> None:
    entry = {"command": "x", "env": {"T": "${METIS_TEST_SURELY_UNSET}"}}
    config, _ = config_files(tmp_path, {"fixture": entry}, {})
    code, _, err = _run(tmp_path, "--mcp-config", str(config))
    assert code == 2
    assert err.strip().count("\n") == 0
    assert "mcpServers.fixture.env.T: ${METIS_TEST_SURELY_UNSET} is not set" in err
    code, _, err = _run(tmp_path, "--mcp-config", '{"mcpServers": ')
    assert code == 2 and err.count("\n") == 1 and "--mcp-config" in err


def test_server_that_fails_to_start_is_one_line_exit_2(tmp_path: Path) -> None:
    config, _ = config_files(tmp_path, {"fixture": {"command": "/nonexistent/server"}}, {})
    code, _, err = _run(tmp_path, "--mcp-config", str(config), "-q")
    assert code == 2
    assert (
        err
        == f"metis run: error: mcp server 'fixture' ({config}): failed to start: command not found: /nonexistent/server\n"
    )
    assert not (tmp_path / "run").exists()


def test_project_file_needs_approval(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"fixture": {"command": "/nonexistent/server"}}})
    )
    code, _, err = _run(tmp_path, "--max-turns", "1")
    assert "'.mcp.json' server" not in err and ".mcp.json server 'fixture' not started" in err
    assert code == 1  # the scenario's calls name tools this run does not have
    settings = tmp_path / "approve.json"
    settings.write_text(json.dumps({"enabledMcpjsonServers": ["fixture"]}))
    code, _, err = _run(tmp_path, "--settings", str(settings), run="approved")
    assert code == 2 and "failed to start: command not found: /nonexistent/server" in err
    code, _, err = _run(
        tmp_path,
        "--settings",
        str(settings),
        "--strict-mcp-config",
        "--max-turns",
        "1",
        run="strict",
    )
    assert "failed to start" not in err


def test_denied_in_settings_local_json_the_server_never_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`deniedMcpServers` in the workspace's `.claude/settings.local.json` (the
    hierarchy the gate reads, not only `--settings`) keeps a real server from
    starting: the marker its command touches first never appears (issue 26)."""
    import sys

    from .conftest import SERVER

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("METIS_MANAGED_SETTINGS_DIRS", str(tmp_path / "etc"))
    monkeypatch.setenv("METIS_SETTINGS_HIERARCHY", "1")  # tests/conftest.py turns it off
    marker = tmp_path / "started"
    entry = {
        "command": "/bin/sh",
        "args": ["-c", f'touch "{marker}"; exec "{sys.executable}" "{SERVER}"'],
    }
    config, settings = config_files(tmp_path, {"fixture": entry}, ALLOW)
    args = ("--mcp-config", str(config), "--settings", str(settings), "--max-turns", "1")
    code, _, err = _run(tmp_path, *args, run="control")
    assert marker.exists(), err  # the control: undenied, it starts
    marker.unlink()
    local = tmp_path / "ws" / ".claude" / "settings.local.json"
    local.parent.mkdir(parents=True)
    local.write_text(json.dumps({"deniedMcpServers": [{"serverName": "fixture"}]}))
    code, _, err = _run(tmp_path, *args, run="denied")
    assert "mcp server 'fixture' not started: denied by deniedMcpServers" in err
    assert not marker.exists()
    assert code == 1  # the scenario's calls name tools this run does not have


def test_the_projects_own_settings_cannot_approve_its_mcp_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A committed `.claude/settings.json` approving `.mcp.json` servers is not
    honoured (metis does not model Claude Code's trust dialog); the same key in
    `.claude/settings.local.json` is."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("METIS_MANAGED_SETTINGS_DIRS", str(tmp_path / "etc"))
    monkeypatch.setenv("METIS_SETTINGS_HIERARCHY", "1")  # tests/conftest.py turns it off
    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    (ws / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"fixture": {"command": "/nonexistent/server"}}})
    )
    (ws / ".claude" / "settings.json").write_text(json.dumps({"enableAllProjectMcpServers": True}))
    code, _, err = _run(tmp_path, "--max-turns", "1", run="project")
    assert "enableAllProjectMcpServers not honoured" in err
    assert ".mcp.json server 'fixture' not started" in err and code == 1
    (ws / ".claude" / "settings.local.json").write_text(
        json.dumps({"enabledMcpjsonServers": ["fixture"]})
    )
    code, _, err = _run(tmp_path, run="local")
    assert code == 2 and "failed to start: command not found: /nonexistent/server" in err
