"""A settings hierarchy made up for a test: settings files written where
`metis run` and `metis check` look for them, under a home and a managed
settings folder that are not the machine's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def write_permissions(path: Path, permissions: dict[str, object]) -> Path:
    """A settings file at `path` holding `permissions`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": permissions}))
    return path


def fake_hierarchy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, project: str
) -> tuple[Path, Path, Path]:
    """A project folder `tmp_path/project`, a home and a managed-settings
    folder, none of them real: HOME and METIS_MANAGED_SETTINGS_DIRS name them."""
    ws, home, managed = tmp_path / project, tmp_path / "home", tmp_path / "etc"
    for d in (ws, home, managed):
        d.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("METIS_MANAGED_SETTINGS_DIRS", str(managed))
    return ws, home, managed
