"""The provider of a plan turn: a live API, or a replay scenario that
successive turns continue (`metis plan` / `metis tasks`, specs/plan.md).

With no API key (or `replay`) proposals come from a replay scenario (default:
the shipped `notes`, whose files are seeded into an empty workspace); the
position in its recording is kept in the workspace's plan store, so
successive turns continue it. Bad input (an unknown scenario or provider, a
scenario that does not load, a file that cannot be seeded) is a
`ConfigError` whose message names the place.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._errors import ConfigError

__all__ = [
    "DEFAULT_SCENARIO",
    "PLAN_SCENARIOS",
    "TurnProvider",
    "provider_name",
    "scenario_path",
    "seed_workspace",
]

PLAN_SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios" / "plan"
DEFAULT_SCENARIO = "notes"


def provider_name(given: str | None, env: Mapping[str, str] = os.environ) -> str:
    """The given provider, else the one whose API key is set, else `replay`."""
    if given:
        return given
    if env.get("ANTHROPIC_API_KEY"):
        return "anthropic"
    if env.get("OPENAI_API_KEY"):
        return "openai"
    return "replay"


def scenario_path(spec: str) -> Path:
    """A shipped plan scenario by name, or a scenario file."""
    shipped = PLAN_SCENARIOS / f"{spec}.yaml"
    if shipped.is_file():
        return shipped
    path = Path(spec)
    if not path.is_file():
        names = ", ".join(sorted(p.stem for p in PLAN_SCENARIOS.glob("*.yaml")))
        raise ConfigError(f"--scenario {spec!r}: no such plan scenario (shipped: {names}) or file")
    return path.resolve()


def seed_workspace(workspace: Path, files: Mapping[str, str]) -> None:
    """Create the scenario's files that the workspace does not have yet; the
    ones it has (a manifest you changed, say) are left as they are."""
    from ..tools import atomic_write

    for name, content in files.items():
        target = workspace / name
        if target.exists() or target.is_symlink():
            continue
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(target, content.encode("utf-8"))
        except OSError as exc:
            raise ConfigError(f"{target}: cannot write ({exc.strerror or exc})") from exc


class TurnProvider:
    """The turn's provider; for a replay, where the recording has got to.
    `model` is the live provider's model (the caller's default when none was given)."""

    def __init__(self, name: str, model: str | None, scenario: str, workspace: Path) -> None:
        from ..providers import AnthropicProvider
        from ..providers import Cassette
        from ..providers import OpenAIChatProvider
        from ..providers import ReplayProvider
        from ..providers import load_scenario
        from ._store import PlanStore

        self.name = name
        self.replay: Any = None
        self.key = ""
        if name == "replay":
            path = scenario_path(scenario)
            try:
                loaded = load_scenario(path)
            except Exception as exc:  # a bad scenario file is bad input
                raise ConfigError(str(exc)) from exc
            seed_workspace(workspace, loaded.workspace_files)
            self.key = str(path)
            with PlanStore(workspace) as store:
                self.start = store.replay_position(self.key)
            rest = loaded.cassette.interactions[self.start :]
            self.replay = ReplayProvider(Cassette(loaded.cassette.path, rest))
            self.provider: Any = self.replay
        elif name in ("anthropic", "openai") and model:
            live = AnthropicProvider if name == "anthropic" else OpenAIChatProvider
            self.provider = live(model)
        else:
            raise ConfigError(f"--provider {name!r}: one of replay, anthropic, openai")

    @property
    def live(self) -> bool:
        return self.name != "replay"

    def done(self, workspace: Path) -> None:
        """Keep how far the replay got, for the next turn."""
        if self.replay is None:
            return
        from ._store import PlanStore

        used = len(self.replay.cassette.interactions) - self.replay.remaining
        with PlanStore(workspace) as store:
            store.set_replay_position(self.key, self.start + used)
