"""ReplayProvider over recorded cassettes, cassette errors, and the shipped scenarios."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from metis_runtime._errors import ConfigError
from metis_runtime._errors import ProviderError
from metis_runtime.providers import AnthropicNormalizer
from metis_runtime.providers import AssistantMessage
from metis_runtime.providers import ContextOverflowError
from metis_runtime.providers import Message
from metis_runtime.providers import ModelRequest
from metis_runtime.providers import ReplayProvider
from metis_runtime.providers import ToolResultBlock
from metis_runtime.providers import ToolUseBlock
from metis_runtime.providers import builtin_scenarios
from metis_runtime.providers import complete
from metis_runtime.providers import detect_wire
from metis_runtime.providers import load_cassette
from metis_runtime.providers import load_scenario
from tests.runtime.test_providers_support import ANTHROPIC_TOOL
from tests.runtime.test_providers_support import CHAT
from tests.runtime.test_providers_support import DATA
from tests.runtime.test_providers_support import RESPONSES
from tests.runtime.test_providers_support import body
from tests.runtime.test_providers_support import check_stream
from tests.runtime.test_providers_support import drain
from tests.runtime.test_providers_support import normalize
from tests.runtime.test_providers_support import run

REQUEST = ModelRequest("sys", (Message.user("go"),))


def play_all(provider: ReplayProvider, request: ModelRequest = REQUEST) -> list[AssistantMessage]:
    async def go() -> list[AssistantMessage]:
        out = []
        while provider.remaining:
            out.append(check_stream(await drain(provider.stream(request))))
        return out

    return run(go())


# --- replay over recorded cassettes ------------------------------------------------------


def test_replay_serves_interactions_in_order_through_the_real_adapter() -> None:
    provider = ReplayProvider(DATA / ANTHROPIC_TOOL, chunk_size=5)
    first = run(drain(provider.stream(REQUEST)))
    assert first == normalize(AnthropicNormalizer(), body(ANTHROPIC_TOOL))
    second = run(complete(provider, REQUEST))
    assert second.text == "The result of **2 + 2 = 4**! 🎉"
    assert provider.remaining == 0
    # What we posted is kept, in the Anthropic wire format the recording used.
    assert [s["messages"] for s in provider.sent] == [[{"role": "user", "content": [
        {"type": "text", "text": "go"}]}]] * 2  # fmt: skip
    assert provider.sent[0]["model"] == "claude-sonnet-4-6"


@pytest.mark.parametrize(
    ("rel", "first_call"),
    [(CHAT, "call_ZR5UUuTt3pf61kjwAJIYdVMj"), (RESPONSES, "call_kL0PCQV7M2WMoVX8V8OtYSAL")],
)
def test_replay_detects_openai_formats(rel: str, first_call: str) -> None:
    messages = play_all(ReplayProvider(DATA / rel))
    assert messages[0].tool_uses[0].id == first_call
    assert messages[1].tool_uses == () and messages[1].stop_reason == "end_turn"


def test_replay_running_out_names_the_file() -> None:
    provider = ReplayProvider(DATA / CHAT)
    play_all(provider)
    with pytest.raises(ProviderError) as info:
        run(complete(provider, REQUEST))
    assert str(info.value) == (
        f"{DATA / CHAT}: replay exhausted: request 3 asked, but the cassette records "
        "2 interaction(s)"
    )


def write_cassette(tmp_path: Path, data: Any, name: str = "c.yaml") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data), encoding="utf-8")
    return path


def interaction(uri: str, sse: str, status: int = 200) -> dict[str, Any]:
    return {
        "request": {"uri": uri, "method": "POST"},
        "response": {"status": {"code": status}, "body": {"string": sse}},
    }


def test_replayed_error_status_goes_through_the_real_error_mapping(tmp_path: Path) -> None:
    error = json.dumps({"type": "error", "error": {"type": "invalid_request_error",
                                                   "message": "prompt is too long: 3 > 2"}})  # fmt: skip
    path = write_cassette(
        tmp_path,
        {"interactions": [interaction("https://api.anthropic.com/v1/messages", error, 400)]},
    )
    with pytest.raises(ContextOverflowError, match="HTTP 400"):
        run(complete(ReplayProvider(path), REQUEST))


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        (
            "https://api.anthropic.com/v1/messages?beta=true",
            ("anthropic", "https://api.anthropic.com"),
        ),
        (
            "https://api.openai.com/v1/chat/completions",
            ("openai-chat", "https://api.openai.com/v1"),
        ),
        ("http://localhost:8080/v1/responses", ("openai-responses", "http://localhost:8080/v1")),
        ("https://example.com/v1/embeddings", None),
    ],
)
def test_detect_wire(uri: str, expected: Any) -> None:
    assert detect_wire(uri) == expected


# --- cassette errors ---------------------------------------------------------------------

GOOD = interaction("https://api.anthropic.com/v1/messages", "data: {}\n\n")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("interactions: [\n  - {", r"line \d+: not valid YAML: "),
        ("- just a list\n", "top level: must be a mapping with 'interactions'"),
        ({"version": 1}, "interactions: missing"),
        ({"interactions": []}, "interactions: must hold at least one interaction"),
        ({"interactions": [GOOD, "x"]}, r"interactions\[1\]: must be a mapping"),
        ({"interactions": [GOOD, {"request": {"uri": "https://x/v1/messages"}}]},
         r"interactions\[1\].response: missing"),
        ({"interactions": [{"request": {}, "response": {}}]}, r"interactions\[0\].request.uri: missing"),
        ({"interactions": [{**GOOD, "response": {"body": {}}}]},
         r"interactions\[0\].response.body.string: missing"),
        ({"interactions": [{**GOOD, "response": {"body": {"string": 5}}}]},
         r"interactions\[0\].response.body.string: must be a string"),
        ({"interactions": [{**GOOD, "response": {"status": {"code": "ok"}, "body": {"string": ""}}}]},
         r"interactions\[0\].response.status.code: must be a integer"),
        ({"interactions": [interaction("https://x/v1/embeddings", "")]},
         r"interactions\[0\].request.uri: 'https://x/v1/embeddings' names no known wire format"),
    ],
)  # fmt: skip
def test_cassette_errors_name_file_and_field(tmp_path: Path, content: Any, message: str) -> None:
    path = write_cassette(tmp_path, content)
    with pytest.raises(ConfigError, match=rf"^{path}: {message}") as info:
        load_cassette(path)
    assert "\n" not in str(info.value)


def test_missing_cassette_file(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=rf"^{tmp_path / 'nope.yaml'}: cannot read \(No such file"
    ):
        ReplayProvider(tmp_path / "nope.yaml")


# --- scenarios ---------------------------------------------------------------------------

SCHEMAS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "read": {"path": str},
    "write": {"path": str, "content": str},
    "edit": {"path": str, "old": str, "new": str},
    "ls": {},
    "glob": {"pattern": str},
    "grep": {"pattern": str, "path": str},
    "bash": {"command": str},
}
OPTIONAL: dict[str, dict[str, type | tuple[type, ...]]] = {
    "ls": {"path": str},
    "bash": {"timeout": (int, float), "background": bool},
}


def assert_fits_builtin_tools(call: ToolUseBlock) -> None:
    required, optional = SCHEMAS[call.name], OPTIONAL.get(call.name, {})
    assert set(required) <= set(call.input) <= set(required) | set(optional), call
    for key, value in call.input.items():
        assert isinstance(value, {**required, **optional}[key]), (call.name, key)


def play_scenario(name: str) -> tuple[Any, list[AssistantMessage]]:
    scenario = load_scenario(builtin_scenarios()[name])
    provider = ReplayProvider(scenario.cassette)
    history = [Message.user(scenario.prompt)]
    messages = []

    async def go() -> None:
        while provider.remaining:
            answer = check_stream(await drain(provider.stream(ModelRequest("s", tuple(history)))))
            messages.append(answer)
            history.append(answer.to_message())
            if answer.tool_uses:
                results = tuple(ToolResultBlock(c.id, "ok") for c in answer.tool_uses)
                history.append(Message("user", results))

    run(go())
    return scenario, messages


def test_builtin_scenarios_are_listed() -> None:
    assert {"edit_files", "duplicate_ids", "repeated_ids"} <= set(builtin_scenarios())


def test_edit_files_scenario() -> None:
    scenario, messages = play_scenario("edit_files")
    assert scenario.name == "edit_files"
    assert scenario.prompt.startswith("Fix the greeting in src/greeter.py")
    assert set(scenario.workspace_files) == {"README.md", "src/greeter.py", "src/cli.py"}
    calls = [[(c.name, c.input) for c in m.tool_uses] for m in messages]
    assert [[name for name, _ in turn] for turn in calls] == [
        ["ls"],
        ["read"],
        ["read", "read", "grep", "edit"],  # one parallel batch
        ["write"],
        ["bash"],
        [],
    ]
    assert calls[4] == [("bash", {"command": "wc -l notes.txt"})]
    edit = calls[2][3][1]
    assert scenario.workspace_files[edit["path"]].count(edit["old"]) == 1  # the edit applies
    for _, path in ((n, i["path"]) for n, i in calls[2] if n == "read"):
        assert path in scenario.workspace_files
    written = calls[3][0][1]
    assert written["path"] == "notes.txt" and written["content"].count("\n") == 4
    assert "4 lines" in messages[-1].text and messages[-1].stop_reason == "end_turn"
    assert messages[0].blocks[0].kind == "thinking"
    for message in messages:
        assert message.repairs == ()
        for call in message.tool_uses:
            assert_fits_builtin_tools(call)
    all_ids = [c.id for m in messages for c in m.tool_uses]
    assert len(all_ids) == len(set(all_ids)) == 8


def test_duplicate_ids_scenario_keeps_both_calls_with_a_note() -> None:
    scenario, messages = play_scenario("duplicate_ids")
    first = messages[0]
    assert [(c.id, c.input["path"]) for c in first.tool_uses] == [
        ("toolu_01DupDupDupDupDupDupDup1", "a.txt"),
        ("toolu_01DupDupDupDupDupDupDup1", "b.txt"),
    ]
    (note,) = first.repairs
    assert "repeated within message" in note.problem
    assert set(scenario.workspace_files) == {"a.txt", "b.txt"}


def test_repeated_ids_scenario_reuses_an_id_across_turns() -> None:
    _, messages = play_scenario("repeated_ids")
    ids = [[c.id for c in m.tool_uses] for m in messages]
    assert ids == [["toolu_01RepRepRepRepRepRepRep1"], ["toolu_01RepRepRepRepRepRepRep1"], []]
    assert all(m.repairs == () for m in messages)


def test_scenario_prompt_defaults_to_the_first_recorded_user_text(tmp_path: Path) -> None:
    data = yaml.safe_load((DATA / CHAT).read_text(encoding="utf-8"))
    scenario = load_scenario(write_cassette(tmp_path, data, "chat.yaml"))
    assert scenario.prompt == "What is the capital of the UK? Use the tool, then answer."
    assert scenario.workspace_files == {} and scenario.name == "chat"


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"../escape.txt": "x"}, r"workspace.files\['../escape.txt'\]: must be a relative path"),
        ({"/etc/passwd": "x"}, r"workspace.files\['/etc/passwd'\]: must be a relative path"),
        ({"a.txt": 3}, r"workspace.files\['a.txt'\]: content must be a string"),
    ],
)
def test_scenario_workspace_errors(tmp_path: Path, files: Any, message: str) -> None:
    path = write_cassette(tmp_path, {"workspace": {"files": files}, "interactions": [GOOD]})
    with pytest.raises(ConfigError, match=rf"^{path}: {message}"):
        load_scenario(path)
