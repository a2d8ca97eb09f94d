"""The settings hierarchy, read from the files' real locations
(https://code.claude.com/docs/en/settings, "Settings precedence";
https://code.claude.com/docs/en/managed-settings).

Claude Code's levels, highest first, onto the model's five sources
(`policy > cli > session > project > persisted`):

- managed: `/etc/claude-code/managed-settings.json` and `managed-settings.d/
  *.json` (alphabetical): policy;
- command line (`--settings FILE`): cli;
- local project (`<root>/.claude/settings.local.json`): project, read after
  the shared file so that it outranks it;
- shared project (`<root>/.claude/settings.json`): project;
- user (`~/.claude/settings.json`): persisted.

metis reads its own equivalents beside each (`/etc/metis/`, `.metis/`,
`~/.metis/`), after the Claude Code file of the same level. `session` is
for rules added while running (a child's extra denies, approvals).

Where `/x` rules anchor: a project or local file at the project root, a user
file at `~/.claude` (`~/.metis`), a `--settings` file at its directory, a
managed file at its directory.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from attrs import evolve
from attrs import frozen

from metis_trace import Mode
from metis_trace import Source

from ._policy import Policy
from ._policy import Settings
from ._policy import load_settings

MANAGED_DIRS = (Path("/etc/claude-code"), Path("/etc/metis"))
# Directories managed settings are read from instead, `:`-separated (tests, and
# machines that keep them elsewhere).
MANAGED_ENV = "METIS_MANAGED_SETTINGS_DIRS"


@frozen
class SettingsFile:
    """One file of the hierarchy: where, which level, its source and the root
    its `/x` rules anchor at."""

    path: Path
    level: str  # managed | cli | local | project | user
    source: Source
    root: Path


def managed_dirs() -> tuple[Path, ...]:
    raw = os.environ.get(MANAGED_ENV)
    if raw is None:
        return MANAGED_DIRS
    return tuple(Path(p) for p in raw.split(os.pathsep) if p)


def hierarchy(
    project: Path,
    home: Path | None = None,
    cli: Sequence[str | os.PathLike[str]] = (),
    managed: Sequence[Path] | None = None,
) -> list[SettingsFile]:
    """The settings files that exist, lowest authority first (the order a
    policy loads them in, so that a later file of a source outranks an
    earlier one)."""
    home = home if home is not None else Path(os.path.expanduser("~"))
    out: list[SettingsFile] = []
    for agent in (".claude", ".metis"):
        out.append(
            SettingsFile(home / agent / "settings.json", "user", Source.PERSISTED, home / agent)
        )
    for name in ("settings.json", "settings.local.json"):
        level = "project" if name == "settings.json" else "local"
        for agent in (".claude", ".metis"):
            out.append(SettingsFile(project / agent / name, level, Source.PROJECT, project))
    for f in cli:
        p = Path(f)
        out.append(SettingsFile(p, "cli", Source.CLI, p.absolute().parent))
    for d in managed if managed is not None else managed_dirs():
        out.append(SettingsFile(d / "managed-settings.json", "managed", Source.POLICY, d))
        fragments = d / "managed-settings.d"
        if fragments.is_dir():
            for frag in sorted(fragments.glob("*.json")):
                out.append(SettingsFile(frag, "managed", Source.POLICY, d))
    return [f for f in out if f.level == "cli" or f.path.is_file()]


def named_files(
    named: Sequence[str | os.PathLike[str]],
    project: Path,
    home: Path | None = None,
    source: Source | None = None,
) -> list[SettingsFile]:
    """Files named on the command line, each at its level when it lies at one
    of the real locations (`--settings .claude/settings.json` is the project
    file), else a command-line file; `source` overrides every file's source."""
    home = home if home is not None else Path(os.path.expanduser("~"))
    out = []
    for name in named:
        path = Path(name)
        found = level_of(path, project, home)
        if found is None:
            found = SettingsFile(path, "cli", Source.CLI, path.absolute().parent)
        out.append(found if source is None else evolve(found, source=source))
    return out


def run_files(
    named: Sequence[str | os.PathLike[str]],
    project: Path,
    home: Path | None = None,
    *,
    real: bool = True,
) -> list[SettingsFile]:
    """What a run reads: with `real`, the hierarchy of `project` with the
    named files as its command-line level (a named file at a real location is
    read once, at its own level); without, the named files only."""
    if not real:
        return named_files(named, project, home)
    home = home if home is not None else Path(os.path.expanduser("~"))
    cli = [n for n in named if level_of(Path(n), project, home) is None]
    return hierarchy(project, home, cli=cli)


@frozen
class Loaded:
    """A policy loaded from a hierarchy, the files read and what was ignored."""

    policy: Policy
    files: tuple[SettingsFile, ...]
    notes: tuple[str, ...]
    mode: Mode | None  # the winning defaultMode, if any
    auto: bool  # that defaultMode is `auto`
    # Each file as read, lowest authority first: the MCP setup reads its
    # server policy from these (`metis_runtime.mcp.read_setup`).
    read: tuple[tuple[SettingsFile, Settings], ...] = ()

    def mcp_levels(self) -> tuple[tuple[str, str, Mapping[str, Any]], ...]:
        """`(path, level, top-level keys)` of every file, lowest authority first."""
        return tuple((str(f.path), f.level, s.other) for f, s in self.read)


def load_hierarchy(files: Iterable[SettingsFile]) -> Loaded:
    """Load every file; one that cannot be read or is not JSON raises
    ConfigError (one line, naming it). A rule that cannot be read is a note
    (a lost deny or ask stands as an ask on its tool: `_salvage`).

    Docs applied: a `defaultMode` of `auto` (v2.1.142+) or `bypassPermissions`
    (v2.1.257+, anthropics/claude-code#91296) in a project or local file is
    ignored; `allowManagedPermissionRulesOnly` in a managed file drops every
    other file's rules."""
    files = list(files)
    read: list[tuple[SettingsFile, Settings]] = []
    for f in files:
        read.append((f, load_settings(f.path, f.root)))
    managed_only = any(s.managed_only for f, s in read if f.level == "managed")
    policy = Policy()
    notes: list[str] = []
    for f, settings in read:
        notes.extend(settings.warnings)
        if managed_only and f.level != "managed" and settings.rules_count():
            notes.append(f"{f.path}: rules ignored (allowManagedPermissionRulesOnly)")
            settings = settings.without_rules()
        if (
            f.level in ("project", "local")
            and settings.default_mode is not None
            and (settings.auto or settings.default_mode is Mode.BYPASS)
        ):
            name = "auto" if settings.auto else "bypassPermissions"
            notes.append(f"{f.path}: defaultMode {name} ignored in project settings")
            settings = settings.without_mode()
        policy.add_settings(settings, f.source)
    return Loaded(
        policy=policy,
        files=tuple(f for f, _ in read),
        notes=tuple(notes),
        mode=policy.default_mode,
        auto=policy.auto_mode,
        read=tuple(read),
    )


def level_of(path: Path, project: Path, home: Path) -> SettingsFile | None:
    """The hierarchy level of a file named on the command line, when it is one
    of the real locations (so `--settings .claude/settings.json` is a project
    file, not a command-line one)."""
    real = path.absolute()
    for f in hierarchy(project, home, managed=managed_dirs()):
        if f.level != "cli" and f.path.absolute() == real:
            return f
    return None
