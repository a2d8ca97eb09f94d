"""A run's scenario and workspace: the scenario read once, its files seeded,
its extras (children's cassettes, `workspace.git`), the workspace made; all
of it in the order `metis run` needs by `prepare_run`.

Bad input is a `ConfigError` whose message is the one line `metis run` prints.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import NoReturn

import attrs

from metis_trace import InputError

from .._errors import ConfigError
from .._errors import MetisRuntimeError
from .._errors import ToolError
from .._input import read_input_text
from .._private import write_private
from .._yaml import load_yaml
from ..agents._worktree import remove_stale_worktrees
from ..permissions import is_protected
from ..providers import Scenario
from ..providers import builtin_scenarios
from ..providers import load_cassette
from ..providers import load_scenario
from ..tools._contain import Roots
from ..tools._contain import write_at

STDIN = "-"
STDIN_SCENARIO = "scenario.yaml"  # `--scenario -`, kept in the run's folder
_GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "metis",
    "GIT_AUTHOR_EMAIL": "metis@localhost",
    "GIT_COMMITTER_NAME": "metis",
    "GIT_COMMITTER_EMAIL": "metis@localhost",
}


def _bad(message: str) -> NoReturn:
    raise ConfigError(message)


def read_scenario(spec: str) -> tuple[Scenario, str]:
    """The scenario and its text, read once (`-`: standard input)."""
    shipped = builtin_scenarios()
    path = shipped.get(spec, Path(spec))
    if spec != STDIN and spec not in shipped and not path.exists() and not path.is_symlink():
        _bad(f"--scenario {spec!r}: no such scenario (shipped: {', '.join(shipped)}) or file")
    try:
        text = read_input_text(STDIN if spec == STDIN else path)
        return load_scenario(spec if spec == STDIN else path, text=text), text
    except InputError as exc:
        _bad(f"--scenario {exc}" if spec == STDIN else str(exc))
    except MetisRuntimeError as exc:
        _bad(str(exc))


def keep_stdin_scenario(text: str, tree: Path) -> Path:
    """A scenario read from standard input, kept in the run's folder (0600,
    redacted like every file metis writes) so that a resume, or the run the
    witness starts again, reads it from there."""
    copy = tree / STDIN_SCENARIO
    try:
        write_private(copy, text)
    except OSError as exc:
        _bad(f"{copy}: cannot write the scenario read from stdin: {exc.strerror or exc}")
    return copy


def seed_workspace(workspace: Path, files: Mapping[str, str]) -> None:
    """Write the scenario's files through the same checks the agent's write
    tool has: inside the workspace, no symlink followed (`Roots`), never a
    protected path (`.metis/`, `.git/`, shell start-up files, ...); refuse to
    overwrite a different existing file. All checked before any is written."""
    roots = Roots((workspace,))
    targets: dict[Path, bytes] = {}
    for name, content in files.items():
        if not name or os.path.isabs(name) or "\x00" in name:
            _bad(f"scenario file {name!r}: must be a relative path")
        # Resolved as the write tool resolves it: a symlink on the way is followed
        # here, to be checked; the write then follows none.
        target = Path(os.path.realpath(workspace / name))
        try:
            roots.locate(target, "seed")
        except ToolError:
            _bad(f"scenario file {name!r}: outside the workspace")
        if is_protected(target, (), workspace):
            _bad(f"scenario file {name!r}: a protected path; scenarios cannot seed it")
        if target.exists() and not target.is_file():
            _bad(f"{target}: exists and is not a regular file; refusing to seed over it")
        if target.exists():
            try:
                same = target.read_text(encoding="utf-8") == content
            except (OSError, UnicodeDecodeError):
                same = False
            if not same:
                _bad(
                    f"{target}: exists with other content; refusing to overwrite "
                    "(use an empty --workspace)"
                )
            continue
        targets[target] = content.encode("utf-8")
    for target, data in targets.items():
        try:
            with roots.parent(target, tool="seed", create=True) as dir_fd:
                write_at(dir_fd, target.name, data)  # whole files or none
        except (OSError, ToolError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            _bad(f"{target}: cannot write: {reason}")


@attrs.frozen
class Extras:
    """What `metis run` reads from a scenario beyond the cassette and its files."""

    agents: dict[str, str]  # agent name -> absolute path of its cassette
    git: bool = False


def scenario_extras(scenario: Scenario, text: str) -> Extras:
    path = scenario.path
    # A scenario on stdin names its children's cassettes relative to the current folder.
    folder = Path.cwd() if os.fspath(path) == STDIN else path.parent
    try:
        data = load_yaml(text, source=str(path))
    except InputError as exc:
        _bad(str(exc))
    data = data if isinstance(data, dict) else {}
    workspace = data.get("workspace") or {}
    git = workspace.get("git", False) if isinstance(workspace, dict) else False
    if not isinstance(git, bool):
        _bad(f"{path}: workspace.git: must be true or false")
    raw = data.get("agents") or {}
    if not isinstance(raw, dict):
        _bad(f"{path}: agents: must be a mapping of agent name to cassette file")
    agents: dict[str, str] = {}
    for name, rel in raw.items():
        if not isinstance(name, str) or not isinstance(rel, str) or not rel:
            _bad(f"{path}: agents[{name!r}]: must name a cassette file")
        cassette = (folder / rel).resolve()
        try:
            load_cassette(cassette)  # a bad child cassette is bad input now, not a child failure
        except MetisRuntimeError as exc:
            _bad(f"{path}: agents[{name!r}]: {exc}")
        agents[name] = str(cassette)
    return Extras(agents, git)


def git_init(workspace: Path) -> None:
    """A repository for a workspace that is in none: `.metis/` (runs, worktrees)
    excluded, the seeded files as its first commit. A repository is left alone."""

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                ["git", "-c", f"core.hooksPath={os.devnull}", *args],  # no hook runs
                cwd=workspace,
                env={**os.environ, **_GIT_IDENTITY, "GIT_TERMINAL_PROMPT": "0"},
                capture_output=True,
                text=True,
                check=False,
                timeout=60,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            _bad(f"the scenario needs git (workspace.git): {exc}")

    if git("rev-parse", "--is-inside-work-tree").returncode == 0:
        return
    for args in (
        ("init", "-q"),
        ("add", "--all", "--", "."),
        ("commit", "-q", "--allow-empty", "-m", "metis: the scenario's workspace"),
    ):
        done = git(*args)
        if done.returncode != 0:
            _bad(f"{workspace}: git {args[0]} failed: {' '.join(done.stderr.split())[:200]}")
        if args[0] == "init":
            exclude = workspace / ".git" / "info" / "exclude"
            exclude.parent.mkdir(parents=True, exist_ok=True)
            with exclude.open("a", encoding="utf-8") as fh:
                fh.write(".metis/\n")


def open_workspace(raw: str) -> Path:
    """`--workspace`: made when missing; it must be a readable, writable folder."""
    path = Path(raw).expanduser()
    if path.exists() and not path.is_dir():
        _bad(f"--workspace {raw}: not a directory")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _bad(f"--workspace {raw}: cannot create: {exc.strerror or exc}")
    if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
        _bad(f"--workspace {raw}: not readable and writable")
    return path.resolve()


@attrs.frozen
class Prepared:
    """The run's scenario read and its workspace made and seeded."""

    task: str
    workspace: Path
    scenario: Scenario | None
    scenario_text: str
    scenario_path: str
    extras: Extras


def prepare_run(provider: str, scenario: str, workspace_arg: str, task: str | None) -> Prepared:
    """The scenario (replay) read, the workspace made and seeded, and the
    worktrees that runs which died left behind removed. With a replay the
    task defaults to the scenario's prompt."""
    loaded, text = read_scenario(scenario) if provider == "replay" else (None, "")
    extras = scenario_extras(loaded, text) if loaded is not None else Extras({})
    workspace = open_workspace(workspace_arg)
    scenario_path = ""
    if loaded is not None:
        scenario_path = str(loaded.path)
        task = task or loaded.prompt
        seed_workspace(workspace, loaded.workspace_files)
        if extras.git:
            git_init(workspace)
    if not task:
        raise ConfigError("TASK is required with a live provider")
    remove_stale_worktrees(workspace)  # what runs that died left behind
    return Prepared(task, workspace, loaded, text, scenario_path, extras)
