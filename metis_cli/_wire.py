"""The live provider's settings as options.

`metis run` and `metis agents list` share them: `--base-url`, `--thinking`,
`--header NAME=VALUE` (attribution, e.g. OpenRouter's `HTTP-Referer` and
`X-Title`), `--routing JSON` (OpenRouter's provider-routing object). The
`ProviderConfig` they make is `metis_runtime.assemble.live_provider_config`'s:
the root agent's provider and every child's start from it, with the base URL
resolved once (the option, else `ANTHROPIC_BASE_URL` / `OPENAI_BASE_URL`), so
a child talks to the endpoint its parent does; a child's definition then
narrows it (`child_provider`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any
from typing import TypeVar

import click

from metis_runtime.providers import THINKING_LEVELS
from metis_runtime.providers import header_problem
from metis_trace import InputError
from metis_trace import decode_json

F = TypeVar("F", bound=Callable[..., Any])


def default_provider() -> str:
    """anthropic if ANTHROPIC_API_KEY is set, else openai if OPENAI_API_KEY is, else replay."""
    if os.environ.get("ANTHROPIC_API_KEY"):
        return "anthropic"
    if os.environ.get("OPENAI_API_KEY"):
        return "openai"
    return "replay"


class WireOptionError(ValueError):
    """A bad `--base-url`, `--header` or `--routing`: one line."""


def wire_options(command: F) -> F:
    """`--base-url`, `--thinking`, `--header`, `--routing`."""
    options = [
        click.option(
            "--base-url",
            metavar="URL",
            help="The live provider's endpoint (default: $ANTHROPIC_BASE_URL or "
            "$OPENAI_BASE_URL, else the vendor's); children use it too.",
        ),
        click.option(
            "--thinking",
            type=click.Choice(THINKING_LEVELS),
            help="Thinking level, mapped onto each provider's request fields (specs/children.md).",
        ),
        click.option(
            "--header",
            "headers",
            multiple=True,
            metavar="NAME=VALUE",
            help="An extra request header, e.g. HTTP-Referer=https://example.org or "
            "X-Title=MyApp (OpenRouter attribution); not credentials.",
        ),
        click.option(
            "--routing",
            metavar="JSON",
            help="Routing preferences sent as the request's `provider` object "
            '(OpenRouter), e.g. \'{"order": ["anthropic"], "allow_fallbacks": false}\'.',
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def wire_settings(options: dict[str, Any]) -> dict[str, Any]:
    """The values `wire_options` added (popped from `options`), checked:
    {base_url, thinking, headers, routing}. WireOptionError: one line."""
    base_url = options.pop("base_url")
    if base_url is not None and not str(base_url).startswith(("http://", "https://")):
        raise WireOptionError(f"--base-url {base_url!r}: expected an http:// or https:// URL")
    headers: dict[str, str] = {}
    for raw in options.pop("headers"):
        name, sep, value = str(raw).partition("=")
        name = name.strip()
        if not sep or not name:
            raise WireOptionError(f"--header {raw!r}: expected NAME=VALUE")
        problem = header_problem(name, value)
        if problem is not None:
            raise WireOptionError(f"--header {problem}")
        headers[name] = value
    routing_text = options.pop("routing")
    routing: dict[str, Any] | None = None
    if routing_text is not None:
        try:
            routing = decode_json(routing_text, source="--routing")
        except InputError as exc:
            raise WireOptionError(str(exc)) from None
        if not isinstance(routing, dict):
            raise WireOptionError("--routing: must be a JSON object")
    return {
        "base_url": base_url,
        "thinking": options.pop("thinking"),
        "headers": headers,
        "routing": routing,
    }
