"""A run's providers: the root's (a replay of the scenario's cassette, or a
live one) and the children's, built from the run's config as its journal
records it; and `--pass-env`, which the tools' environment honours.

The root agent's provider and every child's start from the same
`ProviderConfig` (`live_provider_config`), with the base URL resolved once
(the run's `base_url`, else `ANTHROPIC_BASE_URL` / `OPENAI_BASE_URL`), so a
child talks to the endpoint its parent does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from .._errors import ConfigError
from .._errors import MetisRuntimeError
from .._errors import ProviderError
from ..agents import ProviderConfig
from ..agents import build_provider
from ..agents._process import PASSTHROUGH_ENV
from ..providers import Cassette
from ..providers import Provider
from ..providers import ReplayProvider
from ..providers import RetryPolicy
from ..providers._base import configured_base_url
from ._scenario import read_scenario

PROVIDERS = ("replay", "anthropic", "openai")
DEFAULT_MAX_RETRIES = RetryPolicy().max_retries
DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4.1"}
BASE_URL_ENV = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL"}


def live_provider_config(config: Mapping[str, Any]) -> ProviderConfig:
    """The live provider `config` names (a run's config: provider, model,
    max_retries, base_url, thinking, headers, routing), the base URL resolved.
    ConfigError for an unusable base URL."""
    kind = str(config["provider"])
    try:
        base_url = configured_base_url(config.get("base_url"), BASE_URL_ENV[kind])
    except ProviderError as exc:
        raise ConfigError(str(exc)) from None
    return ProviderConfig.model_validate(
        {
            "kind": kind,
            "model": config.get("model") or DEFAULT_MODELS[kind],
            "max_retries": config.get("max_retries"),
            "base_url": base_url,
            "thinking": config.get("thinking"),
            "headers": dict(config.get("headers") or {}),
            "routing": config.get("routing"),
        }
    )


def check_provider_config(config: Mapping[str, Any]) -> None:
    """What `root_provider` reads from a journal, strictly typed (ValueError)."""
    name = config["provider"]
    if name not in PROVIDERS:
        raise ValueError(f"provider {name!r} is not one of {', '.join(PROVIDERS)}")
    if name == "replay" and not isinstance(config.get("scenario"), str):
        raise ValueError("a replay run needs its 'scenario' (a string)")
    if not isinstance(config.get("model"), str | None):
        raise ValueError("'model' must be a string or null")
    retries = config.get("max_retries", DEFAULT_MAX_RETRIES)
    if type(retries) is not int:
        raise ValueError(f"max_retries {retries!r} is not an integer")


def root_provider(config: Mapping[str, Any], skip: int = 0) -> Provider:
    """The root agent's provider; a resumed replay skips the `skip` answers it had."""
    name = config["provider"]
    if name == "replay":
        scenario, _ = read_scenario(config["scenario"])
        cassette = scenario.cassette
        # A resumed run continues after the answers it already has.
        return ReplayProvider(Cassette(cassette.path, cassette.interactions[skip:]))
    # The root's provider is built as its children's are, from the same settings.
    try:
        return build_provider(child_provider(config), {"agent": "root"})
    except MetisRuntimeError as exc:
        raise ConfigError(str(exc)) from None


def live_config(config: Mapping[str, Any]) -> ProviderConfig:
    """The run's live provider settings; runs recorded before --max-retries
    existed retry as the default does."""
    config = {"max_retries": DEFAULT_MAX_RETRIES, **config}
    try:
        RetryPolicy(max_retries=config["max_retries"])  # its one-line error for a bad value
        # The endpoint: --base-url, else ANTHROPIC_BASE_URL / OPENAI_BASE_URL.
        return live_provider_config(config)
    except (ValidationError, ValueError) as exc:
        raise ConfigError(" ".join(str(exc).split())) from None


def pass_env(names: tuple[str, ...]) -> None:
    """`--pass-env`: the names join $METIS_TOOL_ENV_PASSTHROUGH, which the
    tools' environment (`tool_env`) of this run and of its children honours."""
    for name in names:
        if not name or "," in name or "=" in name:
            raise ConfigError(f"--pass-env {name!r}: not a variable name")
    if names:
        old = [n for n in os.environ.get(PASSTHROUGH_ENV, "").split(",") if n]
        os.environ[PASSTHROUGH_ENV] = ",".join(dict.fromkeys([*old, *names]))


def child_provider(config: Mapping[str, Any]) -> ProviderConfig:
    """The children's provider: the scenario's per-agent cassettes, or the run's live one."""
    name = str(config["provider"])
    if name == "replay":
        scenarios = {str(k): str(v) for k, v in (config.get("agent_scenarios") or {}).items()}
        return ProviderConfig(kind="replay", scenarios=scenarios)
    return live_config(config)
