"""What a definition means for one child of one parent (`resolve_agent`).

Precedence, as the multi-agent page gives it: the agent's front matter
first, then the parent's runtime context, then the global defaults. Each
resolved value says which of the three it came from.

- **Tools**: the parent's visible tools ∩ the definition's `tools` (Claude
  Code's names mapped, `_claude.map_tools`) ∩ the call's `tools`, minus
  `disallowedTools` (a `Bash(rm:*)` entry becomes a deny rule of the child's
  gate instead), the call's and the tree's deny lists (CHILD-1).
- **Mode**: `permissionMode` bounds the child: a mode no more permissive
  than the parent's is taken; a more permissive one is cut down to the
  parent's, and the result says so (a definition is configuration, not a
  request: it never fails a spawn). A call's `permission_mode` may only
  narrow further; the gate is then cloned with `clone_for_child` (CHILD-2).
- **Provider**: `child_provider` (below).
- **Workspace**: the definition's `worktree` (or `isolation: worktree`:
  `branch`), else the call's, else `inherit`; a call that asks for another
  one than the definition's is refused (`branch:<name>` may name the branch
  of a definition's `branch`).
- **Turns**: `maxTurns`, else the parent's limit. **Background**: a call
  without `mode` runs async when the definition says `background: true`.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from attrs import frozen

from metis_trace import Mode

from .._errors import ConfigError
from ..permissions import mode_at_most
from ._authority import child_surface
from ._claude import INHERIT_MODELS
from ._claude import alias_model
from ._claude import deny_names
from ._claude import map_tools
from ._config import ProviderConfig
from ._definitions import AgentDefinition
from ._placement import WorkspacePlan
from ._placement import WorkspaceRequest
from ._placement import parse_worktree
from ._placement import plan_workspace
from ._worktree import WorkspaceError

_LIVE = ("anthropic", "openai", "openai-responses")
_VENDOR_HOSTS = {"anthropic": "api.anthropic.com", "openai": "api.openai.com"}
_PREFIX_KINDS = ("anthropic", "openai")


@frozen
class ParentContext:
    """What a child inherits: the parent's mode, visible tools, provider
    settings (resolved: model, base URL, thinking, headers, routing), its
    workspace and turn limit."""

    mode: Mode
    tools: tuple[str, ...]
    provider: ProviderConfig
    workspace: Path
    max_turns: int = 50


@frozen
class ResolveRefusal:
    """A spawn the definition and the call cannot agree on (code, one line)."""

    code: str
    message: str


@frozen
class ResolvedAgent:
    """A definition resolved against a parent (and a call, for a spawn)."""

    definition: AgentDefinition
    tools: tuple[str, ...]
    not_available: tuple[str, ...]
    spawnable: tuple[str, ...] | None
    deny_rules: tuple[str, ...]
    mode: Mode
    mode_note: str
    provider: ProviderConfig
    sources: Mapping[str, str]
    notes: tuple[str, ...]
    workspace: WorkspacePlan | ResolveRefusal
    max_turns: int
    background: bool

    def to_json(self) -> dict[str, Any]:
        d = self.definition
        provider = self.provider
        ws = self.workspace
        out: dict[str, Any] = {
            "name": d.name,
            "description": d.description,
            "origin": d.origin,
            "format": d.dialect,
            "path": d.path,
            "tools": list(self.tools),
            "tools_requested": list(d.tools) if d.tools is not None else None,
            "tools_not_available": list(self.not_available),
            "disallowed_tools": list(d.disallowed_tools),
            "deny_rules": list(self.deny_rules),
            "spawnable": list(self.spawnable) if self.spawnable is not None else None,
            "mode": self.mode.value,
            "provider": provider.kind,
            "model": provider.model,
            "base_url": provider.base_url,
            "thinking": provider.thinking,
            "headers": sorted(provider.headers),
            "routing": provider.routing,
            "sources": dict(self.sources),
            "workspace": ws.kind.value if isinstance(ws, WorkspacePlan) else None,
            "max_turns": self.max_turns,
            "background": self.background,
            "kept": d.kept(),
            "notes": list(self.notes),
        }
        if self.mode_note:
            out["mode_note"] = self.mode_note
        if isinstance(ws, WorkspacePlan):
            out["workspace_requested"] = str(ws.requested)
            if ws.branch is not None:
                out["branch"] = ws.branch
            if ws.reason:
                out["workspace_note"] = ws.describe()
        else:
            out["workspace_refused"] = ws.message
        return out


def definition_mode(parent: Mode, definition: AgentDefinition) -> tuple[Mode, str]:
    """The mode a definition's `permissionMode` gives under `parent`, and a note
    when it was not taken as written."""
    wanted = definition.mode
    if wanted is None:
        return parent, ""
    written = definition.permission_mode
    if parent is Mode.PLAN:
        note = "" if wanted is Mode.PLAN else f"permissionMode {written}: a plan parent means plan"
        return Mode.PLAN, note
    if mode_at_most(wanted, parent):
        note = f"permissionMode {written} runs as {wanted.value}" if written != wanted.value else ""
        return wanted, note
    return parent, (
        f"permissionMode {written} is more permissive than the parent's {parent.value}: "
        f"runs in {parent.value}"
    )


def at_vendor_endpoint(provider: ProviderConfig) -> bool:
    """Whether the provider talks to the vendor's own API (not a router or proxy)."""
    if provider.base_url is None:
        return True
    host = urlsplit(provider.base_url).hostname or ""
    return any(host == h for h in _VENDOR_HOSTS.values())


def child_provider(
    parent: ProviderConfig, definition: AgentDefinition, mode: Mode
) -> tuple[ProviderConfig, dict[str, str], list[str]]:
    """The child's provider settings: the definition's `model` and thinking
    level first, then the parent's resolved provider, model, base URL,
    headers, routing and retries, then the defaults.

    A model is taken as written, except: `inherit` / `default` (or none) is
    the parent's; a Claude Code alias (`sonnet`, ...) is an Anthropic model
    id, used when the provider is Anthropic's (another provider keeps the
    parent's model, with a note); and at a vendor's own endpoint an
    `anthropic/` or `openai/` prefix picks that provider (the parent's base
    URL, headers and routing, which belong to the parent's endpoint, are not
    carried to another provider). Behind a router or proxy (a base URL of
    another host, such as OpenRouter) `vendor/model` is the router's own
    model id and is sent as written.
    """
    sources: dict[str, str] = {"provider": "parent"}
    notes: list[str] = []
    update: dict[str, Any] = {}
    requested = (definition.model or "").strip()
    if not requested or requested in INHERIT_MODELS:
        sources["model"] = "parent"
    else:
        sources["model"] = "frontmatter"
        alias = alias_model(requested, plan=mode is Mode.PLAN)
        prefix, _, rest = requested.partition("/")
        if alias is not None:
            if parent.kind in ("openai", "openai-responses"):
                sources["model"] = "parent"
                notes.append(
                    f"model {requested!r} is Claude Code's alias of an Anthropic model; the "
                    f"parent's provider is {parent.kind}: the parent's model is kept"
                )
            else:
                update["model"] = alias
        elif (
            rest and prefix in _PREFIX_KINDS and parent.kind in _LIVE and at_vendor_endpoint(parent)
        ):
            kind = (
                "anthropic"
                if prefix == "anthropic"
                else (parent.kind if parent.kind != "anthropic" else "openai")
            )
            update["model"] = rest
            if kind != parent.kind:
                sources["provider"] = "frontmatter"
                update.update(kind=kind, base_url=None, headers={}, routing=None)
                notes.append(
                    f"provider {kind} (the model's prefix): the parent's {parent.kind} base URL, "
                    "headers and routing are not carried over"
                )
        else:
            update["model"] = requested
    level = definition.thinking_level
    if level is not None:
        update["thinking"] = level
        sources["thinking"] = "frontmatter"
    else:
        sources["thinking"] = "parent" if parent.thinking is not None else "default"
    child = parent.model_copy(update=update)
    for name in ("base_url", "headers", "routing", "max_retries"):
        if name not in sources:
            value = getattr(child, name)
            sources[name] = "parent" if value not in (None, {}) else "default"
    if child.model is None and sources["model"] == "parent":
        sources["model"] = "default"
    return child, sources, notes


def _workspace_request(
    definition: AgentDefinition, call: str | None
) -> WorkspaceRequest | ResolveRefusal:
    try:
        own = parse_worktree(definition.workspace) if definition.workspace else None
        asked = parse_worktree(call) if call is not None else None
    except ValueError as exc:
        return ResolveRefusal("WORKSPACE", f"worktree {exc}")
    if own is None:
        return asked or WorkspaceRequest("inherit")
    if asked is None or asked == own:
        return own
    if own == WorkspaceRequest("branch") and asked.kind == "branch":
        return asked  # the call names the branch of the definition's branch workspace
    return ResolveRefusal(
        "WORKSPACE",
        f"agent {definition.name!r} works in worktree {own} (its definition); "
        f"the call asked for {asked}",
    )


def resolve_agent(
    definition: AgentDefinition,
    parent: ParentContext,
    *,
    call_tools: Sequence[str] | None = None,
    call_deny: Sequence[str] = (),
    call_mode: Mode | None = None,
    call_worktree: str | None = None,
    tree_deny: Sequence[str] = (),
) -> ResolvedAgent | ResolveRefusal:
    """`definition` for a child of `parent`, asked for by a call (or, with no
    call arguments, as `metis agents list` shows it). The workspace choice
    asks git (is the workspace in a repository, is a branch name valid)."""
    bound, mode_note = definition_mode(parent.mode, definition)
    mode = bound
    if parent.mode is Mode.PLAN:
        pass  # a plan parent means a plan child, whatever the call asks
    elif call_mode is not None:
        if definition.mode is not None and not mode_at_most(call_mode, bound):
            return ResolveRefusal(
                "AUTHORITY",
                f"agent {definition.name!r} runs in {bound.value} at most; "
                f"the call asked for {call_mode.value}",
            )
        mode = call_mode
    allow = map_tools(definition.tools) if definition.tools is not None else None
    call = map_tools(call_tools) if call_tools is not None else None
    deny = deny_names(definition.disallowed_tools)
    call_denied = deny_names(call_deny)
    surface = child_surface(
        parent.tools,
        allow.tools if allow is not None else None,
        call.tools if call is not None else None,
        (deny.tools, call_denied.tools, tree_deny),
        mode=mode,
    )
    wanted = [*(allow.tools if allow is not None else ()), *(allow.unmapped if allow else ())]
    not_available = tuple(dict.fromkeys(t for t in wanted if t not in surface))
    notes = [
        f"tools: {rule!r}: metis grants tools by name; the specifier is not enforced"
        for rule in (allow.rules if allow is not None else ())
    ]
    try:
        provider, sources, provider_notes = child_provider(parent.provider, definition, mode)
    except (ConfigError, ValueError) as exc:
        return ResolveRefusal("PROVIDER", " ".join(str(exc).split()))
    request = _workspace_request(definition, call_worktree)
    workspace: WorkspacePlan | ResolveRefusal
    if isinstance(request, ResolveRefusal):
        workspace = request
    else:
        try:
            workspace = plan_workspace(request, parent.workspace)
        except WorkspaceError as exc:
            workspace = ResolveRefusal("WORKSPACE", " ".join(str(exc).split()))
    sources = {**sources, "max_turns": "frontmatter" if definition.max_turns else "parent"}
    return ResolvedAgent(
        definition=definition,
        tools=tuple(sorted(surface)),
        not_available=not_available,
        spawnable=allow.spawnable if allow is not None else None,
        deny_rules=(*deny.rules, *call_denied.rules),
        mode=mode,
        mode_note=mode_note,
        provider=provider,
        sources=sources,
        notes=(*notes, *provider_notes),
        workspace=workspace,
        max_turns=definition.max_turns or parent.max_turns,
        background=bool(definition.background),
    )
