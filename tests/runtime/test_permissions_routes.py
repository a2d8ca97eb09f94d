"""Routes: how an ask is answered (interactive, protocol, headless, child, background)."""

from __future__ import annotations

import asyncio
import io
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from metis_runtime.permissions import AskRequest
from metis_runtime.permissions import CallbackAsker
from metis_runtime.permissions import Gate
from metis_runtime.permissions import GateDecision
from metis_runtime.permissions import JsonRpcAsker
from metis_runtime.permissions import Policy
from metis_runtime.permissions import TerminalAsker
from metis_trace import Decision
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import Source
from metis_trace import Stage
from metis_trace import ToolKind


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return Path(os.path.realpath(tmp_path))


def ask_policy() -> Policy:
    p = Policy()
    p.add(Source.PROJECT, RuleBehavior.ASK, "Bash(git push:*)")
    return p


def push(g: Gate) -> GateDecision:
    d = g.decide("bash", {"command": "git push"}, ToolKind.EXEC)
    assert d.decision is Decision.ASK
    return d


# --- interactive ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("typed", "approved"),
    [("y\n", True), ("yes\n", True), (" Y \n", True), ("n\n", False), ("\n", False), ("", False)],
)
def test_interactive_prompts_a_person(typed: str, approved: bool, ws: Path) -> None:
    out = io.StringIO()
    g = Gate(
        ask_policy(), Mode.DEFAULT, ws, Route.INTERACTIVE, TerminalAsker(io.StringIO(typed), out)
    )
    answer = asyncio.run(g.resolve_ask("1.0", "bash", {"command": "git push"}, push(g)))
    assert (answer.approved, answer.resolver) == (approved, "user")
    prompt = out.getvalue()
    assert "bash: git push" in prompt
    assert "ask_rule: Bash(git push:*) (project)" in prompt
    assert prompt.rstrip().endswith("[y/N]")


def test_interactive_asks_one_at_a_time(ws: Path) -> None:
    out = io.StringIO()
    asker = TerminalAsker(io.StringIO("y\nn\n"), out)
    g = Gate(ask_policy(), Mode.DEFAULT, ws, Route.INTERACTIVE, asker)
    d = push(g)

    async def both() -> list[bool]:
        answers = await asyncio.gather(
            g.resolve_ask("1.0", "bash", {"command": "git push"}, d),
            g.resolve_ask("1.1", "bash", {"command": "git push"}, d),
        )
        return [a.approved for a in answers]

    assert asyncio.run(both()) == [True, False]
    assert out.getvalue().count("[y/N]") == 2


def test_non_ask_decisions_answer_themselves(ws: Path) -> None:
    g = Gate(
        Policy(), Mode.DEFAULT, ws, Route.INTERACTIVE, TerminalAsker(io.StringIO(""), io.StringIO())
    )
    d = g.decide("read", {}, ToolKind.READ_ONLY, ["a"])
    answer = asyncio.run(g.resolve_ask("1.0", "read", {}, d))
    assert (answer.approved, answer.resolver) == (True, "policy")


# --- protocol: callback -----------------------------------------------------------------


def test_protocol_callback_sync_and_async(ws: Path) -> None:
    seen: list[AskRequest] = []

    def sync(request: AskRequest) -> bool:
        seen.append(request)
        return True

    async def deny(request: AskRequest) -> bool:
        await asyncio.sleep(0)
        return False

    g = Gate(ask_policy(), Mode.DEFAULT, ws, Route.PROTOCOL, CallbackAsker(sync))
    answer = asyncio.run(g.resolve_ask("2.1", "bash", {"command": "git push"}, push(g)))
    assert (answer.approved, answer.resolver) == (True, "protocol")
    assert seen[0].occ == "2.1"
    assert seen[0].stage is Stage.ASK_RULE
    assert seen[0].rule is not None and seen[0].rule.pattern == "Bash(git push:*)"

    g = Gate(ask_policy(), Mode.DEFAULT, ws, Route.PROTOCOL, CallbackAsker(deny))
    assert not asyncio.run(g.resolve_ask("2.2", "bash", {}, push(g))).approved


def test_failing_asker_denies(ws: Path) -> None:
    def boom(request: AskRequest) -> bool:
        raise RuntimeError("client crashed")

    g = Gate(ask_policy(), Mode.DEFAULT, ws, Route.PROTOCOL, CallbackAsker(boom))
    answer = asyncio.run(g.resolve_ask("1.0", "bash", {}, push(g)))
    assert (answer.approved, answer.resolver) == (False, "protocol")


def test_truthy_non_bool_is_not_approval(ws: Path) -> None:
    g = Gate(ask_policy(), Mode.DEFAULT, ws, Route.PROTOCOL, CallbackAsker(lambda r: "yes"))  # type: ignore[arg-type,return-value]
    assert not asyncio.run(g.resolve_ask("1.0", "bash", {}, push(g))).approved


# --- protocol: JSON-RPC over a real stream pair ----------------------------------------------


async def _stream_pair() -> tuple[
    tuple[asyncio.StreamReader, asyncio.StreamWriter],
    tuple[asyncio.StreamReader, asyncio.StreamWriter],
]:
    a, b = socket.socketpair()
    return await asyncio.open_connection(sock=a), await asyncio.open_connection(sock=b)


async def _client(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, replies: list[Any]
) -> list[dict[str, Any]]:
    """A protocol client: reads requests, sends the scripted replies."""
    received: list[dict[str, Any]] = []
    for reply in replies:
        line = await reader.readline()
        if not line:
            break
        request = json.loads(line)
        received.append(request)
        for chunk in reply(request) if callable(reply) else [reply]:
            writer.write(chunk if isinstance(chunk, bytes) else json.dumps(chunk).encode() + b"\n")
        await writer.drain()
    return received


def _ok(approved: Any) -> Any:
    return lambda req: [{"jsonrpc": "2.0", "id": req["id"], "result": {"approved": approved}}]


def test_jsonrpc_round_trip(ws: Path) -> None:
    async def run() -> tuple[list[bool], list[dict[str, Any]]]:
        (gr, gw), (cr, cw) = await _stream_pair()
        g = Gate(ask_policy(), Mode.DEFAULT, ws, Route.PROTOCOL, JsonRpcAsker(gr, gw))
        d = push(g)
        noisy = lambda req: [  # noqa: E731
            b"not json\n",
            {"jsonrpc": "2.0", "method": "notice", "params": {}},
            {"jsonrpc": "2.0", "id": 999, "result": {"approved": True}},
            {"jsonrpc": "2.0", "id": req["id"], "result": {"approved": False}},
        ]
        error = lambda req: [  # noqa: E731
            {"jsonrpc": "2.0", "id": req["id"], "error": {"code": -1, "message": "no"}}
        ]
        client = asyncio.create_task(_client(cr, cw, [_ok(True), noisy, error, _ok("true")]))
        answers = []
        for i in range(4):
            answer = await g.resolve_ask(f"1.{i}", "bash", {"command": "git push"}, d)
            assert answer.resolver == "protocol"
            answers.append(answer.approved)
        received = await client
        gw.close()
        cw.close()
        return answers, received

    answers, received = asyncio.run(run())
    assert answers == [True, False, False, False]
    first = received[0]
    assert first["jsonrpc"] == "2.0"
    assert first["method"] == "permission/ask"
    assert first["params"]["occ"] == "1.0"
    assert first["params"]["tool"] == "bash"
    assert first["params"]["input"] == {"command": "git push"}
    assert first["params"]["stage"] == "ask_rule"
    assert first["params"]["rule"]["pattern"] == "Bash(git push:*)"
    assert len({r["id"] for r in received}) == 4


def test_jsonrpc_closed_stream_denies(ws: Path) -> None:
    async def run() -> bool:
        (gr, gw), (_cr, cw) = await _stream_pair()
        g = Gate(ask_policy(), Mode.DEFAULT, ws, Route.PROTOCOL, JsonRpcAsker(gr, gw))
        cw.close()
        answer = await g.resolve_ask("1.0", "bash", {}, push(g))
        gw.close()
        return answer.approved

    assert asyncio.run(run()) is False


def test_jsonrpc_timeout_denies(ws: Path) -> None:
    async def run() -> bool:
        (gr, gw), (_cr, cw) = await _stream_pair()
        asker = JsonRpcAsker(gr, gw, timeout=0.05)
        g = Gate(ask_policy(), Mode.DEFAULT, ws, Route.PROTOCOL, asker)
        answer = await g.resolve_ask("1.0", "bash", {}, push(g))
        gw.close()
        cw.close()
        return answer.approved

    assert asyncio.run(run()) is False


# --- headless and background ---------------------------------------------------------------


@pytest.mark.parametrize("route", [Route.HEADLESS, Route.BACKGROUND])
@pytest.mark.parametrize("default", [Decision.DENY, Decision.ALLOW])
def test_headless_never_waits(route: Route, default: Decision, ws: Path) -> None:
    g = Gate(ask_policy(), Mode.DEFAULT, ws, route, headless_default=default)

    async def run() -> tuple[bool, str, float]:
        start = time.monotonic()
        answer = await asyncio.wait_for(g.resolve_ask("1.0", "bash", {}, push(g)), timeout=1)
        return answer.approved, answer.resolver, time.monotonic() - start

    approved, resolver, took = asyncio.run(run())
    assert (approved, resolver) == (default is Decision.ALLOW, "headless-default")
    assert took < 0.5


def test_headless_default_is_deny(ws: Path) -> None:
    g = Gate(ask_policy(), Mode.DEFAULT, ws, Route.HEADLESS)
    assert not asyncio.run(g.resolve_ask("1.0", "bash", {}, push(g))).approved


def test_headless_never_calls_an_asker(ws: Path) -> None:
    from metis_runtime._errors import ConfigError

    with pytest.raises(ConfigError, match="never asks"):
        Gate(ask_policy(), Mode.DEFAULT, ws, Route.HEADLESS, CallbackAsker(lambda r: True))


# --- child ----------------------------------------------------------------------------------


def test_child_asks_go_to_parent(ws: Path) -> None:
    seen: list[str] = []

    def parent_client(request: AskRequest) -> bool:
        seen.append(request.occ)
        return True

    parent = Gate(ask_policy(), Mode.DEFAULT, ws, Route.PROTOCOL, CallbackAsker(parent_client))
    child = parent.clone_for_child()
    assert isinstance(child, Gate)
    d = push(child)
    assert d.route is Route.CHILD
    answer = asyncio.run(child.resolve_ask("c1.0", "bash", {}, d))
    assert (answer.approved, answer.resolver) == (True, "parent")
    assert seen == ["c1.0"]


def test_child_of_headless_parent_never_waits(ws: Path) -> None:
    parent = Gate(ask_policy(), Mode.DEFAULT, ws, Route.HEADLESS)
    child = parent.clone_for_child()
    assert isinstance(child, Gate)
    grandchild = child.clone_for_child()
    assert isinstance(grandchild, Gate)
    answer = asyncio.run(
        asyncio.wait_for(grandchild.resolve_ask("g.0", "bash", {}, push(grandchild)), 1)
    )
    assert (answer.approved, answer.resolver) == (False, "parent")


def test_answers_are_read_bounded_and_strict(ws: Path) -> None:
    """A terminal answer longer than a word is read to its end and is no (its
    rest does not answer the next ask); a JSON-RPC answer goes through the
    strict reader: NaN, repeated keys, bad UTF-8 and over-long lines are not
    answers (issue 13, "Every reader")."""
    long_yes = "y" * 10_000 + "\ny\n"
    g = Gate(ask_policy(), Mode.DEFAULT, ws, Route.INTERACTIVE,
             TerminalAsker(io.StringIO(long_yes), io.StringIO()))  # fmt: skip
    d = push(g)
    first = asyncio.run(g.resolve_ask("1.0", "bash", {"command": "git push"}, d))
    second = asyncio.run(g.resolve_ask("1.1", "bash", {"command": "git push"}, d))
    assert (first.approved, second.approved) == (False, True)

    async def run() -> bool:
        (gr, gw), (cr, cw) = await _stream_pair()
        g = Gate(ask_policy(), Mode.DEFAULT, ws, Route.PROTOCOL, JsonRpcAsker(gr, gw))

        def tricky(req: dict[str, Any]) -> list[bytes]:
            ident = req["id"]
            ok = f'"jsonrpc": "2.0", "id": {ident}, "result": {{"approved": true}}'
            return [
                ("{" + ok + ', "x": NaN}\n').encode(),
                ('{"jsonrpc": "2.0", "id": 0, ' + ok[len('"jsonrpc": "2.0", ') :] + "}\n").encode(),
                b'{"id": '
                + str(ident).encode()
                + b', "s": "\xff", "result": {"approved": true}}\n',
                b'{"pad": "' + b"x" * 70_000 + b'"}\n',  # over the stream's 64 KiB line limit
                (
                    '{"jsonrpc": "2.0", "id": ' + str(ident) + ', "result": {"approved": false}}\n'
                ).encode(),
            ]

        client = asyncio.create_task(_client(cr, cw, [tricky]))
        answer = await g.resolve_ask("2.0", "bash", {"command": "git push"}, push(g))
        await client
        gw.close()
        cw.close()
        return answer.approved

    assert asyncio.run(run()) is False  # only the last, well-formed line answered
