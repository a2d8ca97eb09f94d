"""`metis run` reads the settings hierarchy (issue 12 "The settings hierarchy"):
managed, `--settings`, local and shared project, user, each from its real
location, unless `--no-settings-hierarchy`; the trace header records the files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from metis_cli._main import cli
from tests.runtime._hierarchy import fake_hierarchy
from tests.runtime._hierarchy import write_permissions as _write


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """A workspace, a home and a managed-settings folder, none of them real;
    the hierarchy on (tests/conftest.py turns it off for every other test)."""
    monkeypatch.delenv("METIS_SETTINGS_HIERARCHY")
    return fake_hierarchy(tmp_path, monkeypatch, "ws")


def _run(ws: Path, *args: str) -> tuple[dict[str, object], list[dict[str, object]]]:
    """Run the shipped replay scenario; its summary and its trace's records."""
    done = CliRunner().invoke(cli, ["run", "--workspace", str(ws), "--headless", "--json", *args])
    assert done.exit_code in (0, 1), done.output
    summary = json.loads(done.stdout)
    records = [json.loads(line) for line in Path(summary["trace"]).read_text().splitlines()]
    return summary, records


def _denied_tools(records: list[dict[str, object]]) -> set[str]:
    tools = {
        c["occ"]: c["tool"]
        for r in records
        if r["kind"] == "assistant"
        for c in r["calls"]  # type: ignore[attr-defined]
    }
    return {tools[r["occ"]] for r in records if r["kind"] == "decision" and r["decision"] == "deny"}


def test_run_reads_the_user_and_managed_files_and_records_them(
    world: tuple[Path, Path, Path],
) -> None:
    ws, home, managed = world
    user = _write(home / ".claude" / "settings.json", {"deny": ["Edit"]})
    fragment = _write(managed / "managed-settings.d" / "10-org.json", {"deny": ["Write"]})
    summary, records = _run(ws)
    assert summary["results"]["denied"] >= 2  # type: ignore[index]
    assert _denied_tools(records) == {"edit", "write"}
    meta = records[0]["meta"]
    assert meta["settings_hierarchy"] is True  # type: ignore[index]
    assert meta["settings"] == [  # type: ignore[index]
        {"path": str(user), "level": "user", "source": "persisted"},
        {"path": str(fragment), "level": "managed", "source": "policy"},
    ]


def test_no_settings_hierarchy_reads_only_the_named_files(
    world: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    ws, home, _ = world
    _write(home / ".claude" / "settings.json", {"deny": ["Edit"]})
    named = _write(tmp_path / "ci.json", {"deny": ["Write"]})
    _, records = _run(ws, "--no-settings-hierarchy", "--settings", str(named))
    assert _denied_tools(records) == {"write"}
    meta = records[0]["meta"]
    assert meta["settings_hierarchy"] is False  # type: ignore[index]
    assert meta["settings"] == [  # type: ignore[index]
        {"path": str(named), "level": "cli", "source": "cli"}
    ]


def test_project_default_mode_applies_and_a_named_project_file_is_read_once(
    world: tuple[Path, Path, Path],
) -> None:
    ws, _, _ = world
    shared = _write(ws / ".claude" / "settings.json", {"defaultMode": "acceptEdits"})
    local = _write(ws / ".claude" / "settings.local.json", {"defaultMode": "bypassPermissions"})
    _, records = _run(ws, "--settings", str(shared))
    header = records[0]
    assert header["mode"] == "acceptEdits"  # no --mode: the settings' defaultMode
    meta = header["meta"]
    assert [f["path"] for f in meta["settings"]] == [str(shared), str(local)]  # type: ignore[index]
    # bypassPermissions as a project default is ignored, as the docs say (#91296).
    assert any("bypassPermissions ignored" in n for n in meta["settings_notes"])  # type: ignore[index]
    again = ws.parent / "again"
    _write(again / ".claude" / "settings.json", {"defaultMode": "acceptEdits"})
    _, explicit = _run(again, "--mode", "plan")
    assert explicit[0]["mode"] == "plan"  # --mode outranks every file


def test_a_bad_file_in_the_hierarchy_is_one_line_exit_2(world: tuple[Path, Path, Path]) -> None:
    ws, home, _ = world
    bad = home / ".claude" / "settings.json"
    bad.parent.mkdir()
    bad.write_text('{"permissions": {"deny": ["Edit"]')  # invalid JSON still stops the run
    done = CliRunner().invoke(cli, ["run", "--workspace", str(ws), "--headless", "-q"])
    assert done.exit_code == 2
    assert str(bad) in done.output and len(done.output.strip().splitlines()) == 1
    bad.write_text('{"permissions": {"deny": "Edit"}}')  # a lost deny: a warning, and Edit asks
    done = CliRunner().invoke(cli, ["run", "--workspace", str(ws), "--headless", "-q"])
    assert done.exit_code == 0, done.output
    assert f"metis run: warning: {bad}: permissions.deny: rule 'Edit' not read" in done.stderr
    ok = CliRunner().invoke(cli, ["run", "--workspace", str(ws), "-q", "--no-settings-hierarchy"])
    assert ok.exit_code == 0, ok.output
