"""A child inherits its parent's provider settings: checked on the wire.

`metis run` talks to a real HTTP server on 127.0.0.1 (started here) that
answers with recorded stream bodies: the parent's and the relay's turns from
`tests/data/inheritance/` (hand-authored to the exact wire format), the
other children's from real recorded exchanges (`corpora/provider-streams`).
The children, and the relay's own child, are real processes; the server
records every request they send,
and the test checks the URL, headers, model and thinking fields of each
against the precedence of specs/children.md: the definition first, then the
parent's runtime context, then the defaults.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any

import attrs
import pytest

from metis_runtime.providers import ANTHROPIC_BUDGETS
from metis_runtime.providers import load_cassette

from ._support import read_tree
from ._support import tree_report

pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parents[1] / "data" / "inheritance"
STREAMS = Path(__file__).resolve().parents[2] / ".." / "shared" / "corpora" / "provider-streams"
KEY = "test-key-not-a-credential"
HEADERS = {"HTTP-Referer": "https://metis.example/tests", "X-Title": "metis inheritance test"}
ROUTING = {"order": ["anthropic"], "allow_fallbacks": False}

SCOUT = """---
name: scout
description: Looks things up and reports, read-only.
tools: Read, Grep, Glob
model: inherit
effort: low
---
You are the scout.
"""
RELAY = """---
name: relay
description: Hands a question on to the scout.
tools: Agent(scout), Read
---
You are the relay.
"""
PINNED = """---
name: pinned
description: Always on one model.
model: claude-opus-4-7
tools: [read]
---
You are pinned.
"""


@attrs.frozen
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class Endpoint:
    """A local HTTP endpoint: `answer(path, body)` gives each reply's SSE body."""

    def __init__(self, answer: Callable[[str, dict[str, Any]], str]) -> None:
        self.seen: list[Seen] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", "0")))
                body = json.loads(raw)
                headers = {k.lower(): v for k, v in self.headers.items()}
                endpoint.seen.append(Seen(self.path, headers, body))
                data = answer(self.path, body).encode("utf-8")
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _recorded(name: str, index: int = 0) -> str:
    path = STREAMS / name
    if not path.exists():
        pytest.skip(f"{path}: the shared corpora are not here")
    return load_cassette(path).interactions[index].body


def _workspace(tmp: Path) -> Path:
    ws = tmp / "ws"
    (ws / ".claude" / "agents").mkdir(parents=True)
    (ws / ".metis" / "agents").mkdir(parents=True)
    (ws / ".claude" / "agents" / "scout.md").write_text(SCOUT)
    (ws / ".claude" / "agents" / "relay.md").write_text(RELAY)
    (ws / ".metis" / "agents" / "pinned.md").write_text(PINNED)
    (ws / "README.md").write_text("# a project\n")
    return ws


def _run(tmp: Path, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith(("_API_KEY", "_BASE_URL")) and k != "METIS_FAILPOINT"
    }
    base.update(METIS_USER_AGENTS=str(tmp / "no-user"), CLAUDE_CONFIG_DIR=str(tmp / "no-claude"))
    return subprocess.run(
        [sys.executable, "-m", "metis_cli", "run", *args],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _by_system(seen: list[Seen], system: str) -> list[Seen]:
    def system_of(s: Seen) -> str:
        if "system" in s.body:
            return str(s.body["system"])
        first = s.body["messages"][0]
        return str(first["content"]) if first["role"] == "system" else ""

    return [s for s in seen if system_of(s).strip() == system]


@pytest.fixture
def anthropic_endpoint() -> Iterator[Endpoint]:
    parent = load_cassette(DATA / "anthropic_parent.yaml").interactions
    relay = load_cassette(DATA / "anthropic_relay.yaml").interactions
    child = _recorded("anthropic/test_anthropic_model_thinking_part_stream.yaml")

    def answer(path: str, body: dict[str, Any]) -> str:
        if body.get("system") in ("You are the scout.", "You are pinned."):
            return child
        turns = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return (relay if body.get("system") == "You are the relay." else parent)[turns].body

    endpoint = Endpoint(answer)
    yield endpoint
    endpoint.close()


def test_children_inherit_the_anthropic_settings_of_their_parent(
    tmp_path: Path, anthropic_endpoint: Endpoint
) -> None:
    ws = _workspace(tmp_path)
    trace = tmp_path / "run" / "trace.jsonl"
    done = _run(
        tmp_path,
        [
            "Ask the scout, the pinned agent and the relay.",
            "--workspace",
            str(ws),
            "--trace",
            str(trace),
            "--headless",
            "--provider",
            "anthropic",
            "--model",
            "claude-sonnet-4-0",
            "--base-url",
            anthropic_endpoint.url,
            "--thinking",
            "high",
            "--header",
            f"HTTP-Referer={HEADERS['HTTP-Referer']}",
            "--header",
            f"X-Title={HEADERS['X-Title']}",
            "--routing",
            json.dumps(ROUTING),
            "-q",
        ],
        {"ANTHROPIC_API_KEY": KEY},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "All three sub-agents answered."
    seen = anthropic_endpoint.seen
    scout, pinned = _by_system(seen, "You are the scout."), _by_system(seen, "You are pinned.")
    relay = _by_system(seen, "You are the relay.")
    parent = [s for s in seen if s not in scout + pinned + relay]
    # Two scouts: the root's child and the relay's (the root's grandchild).
    assert (len(parent), len(scout), len(pinned), len(relay)) == (2, 2, 1, 2)
    for request in seen:  # the same endpoint, credentials and attribution for all
        assert request.path == "/v1/messages"
        assert request.headers["x-api-key"] == KEY
        assert request.headers["anthropic-version"] == "2023-06-01"
        assert request.headers["http-referer"] == HEADERS["HTTP-Referer"]
        assert request.headers["x-title"] == HEADERS["X-Title"]
        assert request.body["provider"] == ROUTING and request.body["stream"] is True
    high, low = ANTHROPIC_BUDGETS["high"], ANTHROPIC_BUDGETS["low"]
    for request in parent + relay:  # the relay sets neither model nor thinking
        assert request.body["model"] == "claude-sonnet-4-0"
        assert request.body["thinking"] == {"type": "enabled", "budget_tokens": high}
        assert request.body["max_tokens"] == 4096 + high
    assert {t["name"] for t in relay[0].body["tools"]} == {
        "read",
        "spawn_agent",
        "list_agents",
        "wait_agent",
    }
    # scout, at depth 1 and 2: `model: inherit` (its parent's), `effort: low` (its own);
    # its tools are its own list cut down to its parent's (the relay has `read` alone).
    tasks = {"How do I cross the street?": 1, "Which way do I look before crossing?": 2}
    tools = {1: {"read", "grep", "glob"}, 2: {"read"}}
    for request in scout:
        body = request.body
        depth = tasks[body["messages"][0]["content"][0]["text"]]
        assert body["model"] == "claude-sonnet-4-0"
        assert body["thinking"] == {"type": "enabled", "budget_tokens": low}
        assert body["max_tokens"] == 4096 + low
        assert {t["name"] for t in body["tools"]} == tools.pop(depth)
    assert not tools
    # pinned: its own model (adaptive thinking), the parent's thinking level.
    body = pinned[0].body
    assert body["model"] == "claude-opus-4-7"
    assert body["thinking"] == {"type": "adaptive"} and body["output_config"] == {"effort": "high"}
    assert body["max_tokens"] == 4096
    # Each child's trace says where each setting came from.
    trees = read_tree(trace.parent).values()
    headers = {(h.meta["agent"], h.depth): h for h, _ in trees if h.depth}
    assert set(headers) == {("scout", 1), ("pinned", 1), ("relay", 1), ("scout", 2)}
    for depth in (1, 2):
        scout_meta = headers["scout", depth].meta["provider"]
        assert scout_meta["base_url"] == anthropic_endpoint.url
        assert scout_meta["sources"] == {
            "provider": "parent",
            "model": "parent",
            "thinking": "frontmatter",
            "base_url": "parent",
            "headers": "parent",
            "routing": "parent",
            "max_retries": "parent",
            "max_turns": "parent",
        }
        scout_file = str(ws / ".claude" / "agents" / "scout.md")
        assert headers["scout", depth].meta["definition"] == scout_file
    assert headers["relay", 1].meta["provider"]["sources"]["model"] == "parent"
    assert headers["relay", 1].meta["provider"]["sources"]["thinking"] == "parent"
    assert headers["pinned", 1].meta["provider"]["sources"]["model"] == "frontmatter"
    assert headers["pinned", 1].meta["provider"]["sources"]["thinking"] == "parent"
    assert tree_report(trace.parent).ok


def test_children_inherit_the_openai_base_url_from_the_environment(tmp_path: Path) -> None:
    parent = load_cassette(DATA / "openai_parent.yaml").interactions
    child = _recorded("openai-chat/test_run_stream_sync_streams_real_model.yaml", 1)

    def answer(path: str, body: dict[str, Any]) -> str:
        if body["messages"][0]["content"] == "You are the scout.":
            return child
        turns = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return parent[turns].body

    endpoint = Endpoint(answer)
    try:
        ws = _workspace(tmp_path)
        done = _run(
            tmp_path,
            [
                "Ask the scout.",
                "--workspace",
                str(ws),
                "--trace",
                str(tmp_path / "run" / "trace.jsonl"),
                "--headless",
                "--provider",
                "openai",
                "--thinking",
                "medium",
                "--header",
                "X-Title=from the parent",
                "-q",
            ],
            {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": endpoint.url + "/v1"},
        )
    finally:
        endpoint.close()
    assert done.returncode == 0, done.stderr
    scout = _by_system(endpoint.seen, "You are the scout.")
    assert len(endpoint.seen) == 3 and len(scout) == 1
    for request in endpoint.seen:
        assert request.path == "/v1/chat/completions"
        assert request.headers["authorization"] == f"Bearer {KEY}"
        assert request.headers["x-title"] == "from the parent"
        assert request.body["model"] == "gpt-4.1"  # the default model, inherited
        assert "provider" not in request.body
    assert scout[0].body["reasoning_effort"] == "low"  # effort: low
    assert {s.body["reasoning_effort"] for s in endpoint.seen if s not in scout} == {"medium"}
