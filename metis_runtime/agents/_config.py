"""What a parent hands a child process: one JSON file (`ChildConfig`).

It carries the child's identity in the tree, its definition and task, its
narrowed authority (mode, tool surface, a serialized clone of the parent's
gate, hooks), how to build its provider, and where to write its trace and
result. A child's asks cannot reach its parent's user across processes, so
its gate is headless: an ask resolves at once to the parent's headless
default (deny unless the parent's own is allow): never more permissive.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from typing import Literal

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import field_validator

from metis_trace import Decision
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import Source

from .._errors import ConfigError
from ..dispatch import GateLike
from ..dispatch import PassThroughGate
from ..permissions import Gate
from ..permissions import Policy
from ..permissions import Refusal
from ..permissions import Settings
from ..providers import AnthropicProvider
from ..providers import OpenAIChatProvider
from ..providers import OpenAIResponsesProvider
from ..providers import Provider
from ..providers import ReplayProvider
from ..providers import RetryPolicy
from ..providers import Thinking
from ..providers import WireOptions
from ..providers import check_headers
from ._authority import child_mode
from ._definitions import AgentDefinition
from ._hooks import HookedGate
from ._hooks import HookSpec

_FROZEN = ConfigDict(extra="forbid", frozen=True)


class RuleConfig(BaseModel):
    model_config = _FROZEN

    behavior: RuleBehavior
    source: Source
    pattern: str
    base: str | None = None
    origin: str = ""


class GateConfig(BaseModel):
    """`gate`: the production gate with these rules; `passthrough`: the
    minimal gate (plan, scope, mode stages). `open` (a fresh bypass gate with
    no rules) exists only for the child-boundary ablation."""

    model_config = _FROZEN

    kind: Literal["gate", "passthrough", "open"] = "gate"
    mode: Mode
    headless_default: Decision = Decision.DENY
    rules: tuple[RuleConfig, ...] = ()
    additional_directories: tuple[str, ...] = ()
    protected_paths: tuple[str, ...] = ()  # the run's own files, protected like `.metis/`
    bypass_disabled: bool = False


class ProviderConfig(BaseModel):
    """How a child builds its provider.

    `factory`: `module:attribute`, called with the child's `AgentInfo`
    (a mapping: agent, agent_id, depth, task, workspace), returning a
    Provider (tests and embedders: scripted providers). `replay`: a scenario
    or cassette file per agent name in `scenarios`. `anthropic`, `openai`,
    `openai-responses`: the live providers with `model`, `base_url`,
    `max_retries` (transient failures before the first event; None: the
    provider's default), a `thinking` level, extra `headers` (attribution,
    such as OpenRouter's `HTTP-Referer` and `X-Title`) and `routing`
    preferences (OpenRouter's `provider` object); credentials come from the
    (inherited) environment. A child gets its parent's, narrowed by its
    definition (`child_provider`).
    """

    model_config = _FROZEN

    kind: Literal["factory", "replay", "anthropic", "openai", "openai-responses"]
    factory: str | None = None
    options: dict[str, Any] = Field(default_factory=dict)
    scenarios: dict[str, str] = Field(default_factory=dict)
    model: str | None = None
    base_url: str | None = None
    max_retries: int | None = Field(default=None, ge=0)
    thinking: Thinking | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    routing: dict[str, Any] | None = None

    @field_validator("headers")
    @classmethod
    def _no_credentials(cls, value: dict[str, str]) -> dict[str, str]:
        check_headers(value)
        return value

    def wire_options(self) -> WireOptions:
        return WireOptions(self.thinking, self.headers, self.routing)


class ChildConfig(BaseModel):
    model_config = _FROZEN

    agent: AgentDefinition
    task: str
    context: str = ""
    root_run_id: str
    run_id: str
    parent_id: str
    agent_id: str
    depth: int
    parent_pid: int
    run_dir: str
    agent_dir: str
    workspace: str
    project_dir: str | None = None  # where `.metis/agents` definitions are looked up
    mode: Mode
    tools: tuple[str, ...]
    filter_registry: bool = True  # False only in the child-boundary ablation
    gate: GateConfig
    hooks: tuple[HookSpec, ...] = ()
    provider: ProviderConfig
    child_deny: tuple[str, ...] = ()
    spawnable: tuple[str, ...] | None = None  # Claude Code's `Agent(a, b)`: the agents it may spawn
    context_budget: dict[str, int] | None = None
    max_turns: int = 50
    # MCP servers the child may use (entries as written, expanded again in the
    # child) and the class declarations (pattern, class, key): metis_runtime/mcp.
    mcp_servers: dict[str, dict[str, Any]] = {}
    mcp_classes: tuple[tuple[str, str, str | None], ...] = ()

    @property
    def trace_path(self) -> Path:
        return Path(self.agent_dir) / "trace.jsonl"

    @property
    def result_path(self) -> Path:
        return Path(self.agent_dir) / "result.json"

    @property
    def inbox_path(self) -> Path:
        return Path(self.agent_dir) / "inbox.jsonl"

    @property
    def ledger_path(self) -> Path:
        return Path(self.run_dir) / "guard.json"


AgentInfo = Mapping[str, Any]


def import_object(spec: str, what: str) -> Any:
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise ConfigError(f"{what}: {spec!r} must be 'module:attribute'")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{what}: cannot import {spec}: {exc}") from exc


def build_provider(cfg: ProviderConfig, info: AgentInfo) -> Provider:
    if cfg.kind == "factory":
        if cfg.factory is None:
            raise ConfigError("provider.factory: required for kind 'factory'")
        made = import_object(cfg.factory, "provider.factory")(info, **cfg.options)
        if not hasattr(made, "stream"):
            raise ConfigError(f"provider.factory: {cfg.factory} did not return a provider")
        return made  # type: ignore[no-any-return]
    if cfg.kind == "replay":
        name = str(info["agent"])
        path = cfg.scenarios.get(name) or cfg.scenarios.get("*")
        if path is None:
            raise ConfigError(f"provider.scenarios: no replay scenario for agent {name!r}")
        return ReplayProvider(path)
    if cfg.model is None:
        raise ConfigError(f"provider.model: required for {cfg.kind}")
    kinds = {
        "anthropic": AnthropicProvider,
        "openai": OpenAIChatProvider,
        "openai-responses": OpenAIResponsesProvider,
    }
    make: Any = kinds[cfg.kind]
    # The parent's base URL and retries are inherited; else each provider's default applies.
    options: dict[str, Any] = {}
    if cfg.base_url:
        options["base_url"] = cfg.base_url
    if cfg.max_retries is not None:
        options["retry"] = RetryPolicy(max_retries=cfg.max_retries)
    return make(cfg.model, options=cfg.wire_options(), **options)  # type: ignore[no-any-return]


# --- gates ---------------------------------------------------------------------


def _unwrap(gate: GateLike[Any]) -> GateLike[Any]:
    while isinstance(gate, HookedGate):
        gate = gate.inner
    return gate


def gate_mode(gate: GateLike[Any]) -> Mode:
    mode = getattr(_unwrap(gate), "mode", None)
    if not isinstance(mode, Mode):
        raise ConfigError(f"cannot tell the mode of a {type(gate).__name__} gate")
    return mode


def clone_gate_config(
    parent: GateLike[Any],
    requested: Mode | None,
    *,
    parent_workspace: Path,
    child_workspace: Path,
    headless_default: Decision,
    extra_deny: Sequence[str] = (),
) -> GateConfig | Refusal:
    """The parent's gate, cloned for a child (never more permissive), as data.

    Rules anchored at the parent's workspace are re-anchored at the child's,
    so `Write(secrets/**)` still denies in a branch worktree or a copy.
    """
    gate = _unwrap(parent)
    if isinstance(gate, Gate):
        clone = gate.clone_for_child(requested, extra_deny)
        if isinstance(clone, Refusal):
            return clone
        parent_ws = Path(os.path.realpath(parent_workspace))
        rules = tuple(
            RuleConfig(
                behavior=r.behavior,
                source=r.source,
                pattern=r.pattern,
                base=str(child_workspace if r.base == parent_ws else r.base)
                if r.base is not None
                else None,
                origin=f"parent: {r.origin}" if r.origin else "parent",
            )
            for r in clone.policy.rules
        )
        return GateConfig(
            kind="gate",
            mode=clone.mode,
            headless_default=headless_default,
            rules=rules,
            additional_directories=tuple(str(d) for d in clone.roots[1:]),
            protected_paths=tuple(str(p) for p in clone.protected_paths),
            bypass_disabled=clone.policy.bypass_disabled,
        )
    if isinstance(gate, PassThroughGate):
        mode = child_mode(gate.mode, requested)
        if isinstance(mode, Refusal):
            return mode
        if extra_deny:
            raise ConfigError("a passthrough gate has no rules: it cannot carry deny rules")
        return GateConfig(kind="passthrough", mode=mode, headless_default=headless_default)
    raise ConfigError(f"cannot clone a {type(gate).__name__} gate for a child")


def build_gate(cfg: GateConfig, workspace: Path) -> GateLike[Any]:
    if cfg.kind == "passthrough":
        return PassThroughGate(
            cfg.mode, workspace, route=Route.HEADLESS, headless_default=cfg.headless_default
        )
    policy = Policy()
    if cfg.kind == "gate":
        for i, r in enumerate(cfg.rules):
            base = Path(r.base) if r.base is not None else None
            policy.add(r.source, r.behavior, r.pattern, base=base, origin=r.origin or f"rules[{i}]")
        if cfg.bypass_disabled:
            policy.add_settings(
                Settings(path=Path("<parent>"), root=workspace, disable_bypass=True), Source.POLICY
            )
    mode = cfg.mode if cfg.kind == "gate" else Mode.BYPASS
    return Gate(
        policy,
        mode,
        workspace,
        Route.HEADLESS,
        headless_default=cfg.headless_default,
        additional_directories=cfg.additional_directories if cfg.kind == "gate" else (),
        protected_paths=cfg.protected_paths,
        search_hides_denied=True,  # the runtime's grep, glob and ls hide them (Gate.hides)
    )
