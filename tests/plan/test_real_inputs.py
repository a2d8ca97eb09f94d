"""The plan path against inputs nobody here wrote.

- The Metnos page's own examples (`../shared/seeds/metnos-runtime.txt`, the
  specification's source): the framework of section 6 (copied, with its
  provenance, to `tests/data/plan/`), and the scheduling request of section
  11.1.
- Argument schemas as real tool stacks write them: pydantic-ai's tool
  definitions as recorded in the provider cassettes (`tests/data/streams/`,
  MIT, see the LICENSE there), and pydantic's JSON schema of a tool
  function's signature, which is how FastMCP, pydantic-ai and the OpenAI
  Agents SDK build theirs (optional arguments as `anyOf` with a `null`
  branch, defaults, titles, `$defs`).
- The arguments real models sent for those tools (the cassettes' recorded
  answers), and real provider answers that are not a framework, through the
  real wire adapters.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any
from typing import Literal

import httpx
import pydantic
import pytest
import yaml

from metis_model.plan import validate as model_validate
from metis_runtime.plan import PlanStore
from metis_runtime.plan import load_manifest
from metis_runtime.plan import match_route
from metis_runtime.plan import sign_manifest
from metis_runtime.plan._engine import PROPOSE_TOOL
from metis_runtime.plan._engine import ProposalError
from metis_runtime.plan._engine import Proposer
from metis_runtime.plan._rules import validate
from metis_runtime.providers import AnthropicProvider
from metis_runtime.providers import OpenAIChatNormalizer
from metis_runtime.providers import OpenAIResponsesNormalizer
from metis_runtime.providers import OpenAIResponsesProvider
from metis_runtime.providers import RetryPolicy
from metis_runtime.providers import ToolUseBlock
from metis_trace import ErrorClass
from metis_trace import ExecutorInfo
from metis_trace import parse_framework
from tests.input._cli import run_metis
from tests.runtime.test_providers_support import ANTHROPIC_TOOL
from tests.runtime.test_providers_support import CHAT
from tests.runtime.test_providers_support import RESPONSES
from tests.runtime.test_providers_support import RESPONSES_PHASE
from tests.runtime.test_providers_support import RESPONSES_USAGE
from tests.runtime.test_providers_support import body
from tests.runtime.test_providers_support import cassette
from tests.runtime.test_providers_support import check_stream
from tests.runtime.test_providers_support import normalize

from ._runtime import ALICE
from ._runtime import run
from ._runtime import runtime
from ._runtime import seed

DATA = Path(__file__).resolve().parents[1] / "data" / "plan"


def _manifest(
    folder: Path, name: str, effect: str, args: dict[str, Any], **extra: Any
) -> ExecutorInfo:
    """Write and sign a manifest for `name` (a trivial program), and load it back."""
    (folder / f"{name}.py").write_text("import json, sys\nprint(json.dumps([]))\n")
    data = {
        "name": name,
        "effect": effect,
        "family": f"real.{name}",
        "program": f"{name}.py",
        "args": args,
        **extra,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    _, signed = sign_manifest(path)
    path.write_text(yaml.safe_dump(signed))
    return load_manifest(path).info


def _both_verdicts(
    framework: dict[str, Any], catalog: dict[str, ExecutorInfo]
) -> list[tuple[str, int | None]]:
    """The runtime's failures as (class, step); the model must find the same."""
    fw = parse_framework(framework)
    found = [(f.cls.value, f.step) for f in validate(fw, catalog, 8)]
    assert sorted(found) == sorted((f.cls.value, f.step) for f in model_validate(fw, catalog, 8))
    return found


# --- the Metnos page's framework (section 6) --------------------------------------------------


def _metnos_catalog(folder: Path) -> None:
    executors = folder / ".metis" / "executors"
    executors.mkdir(parents=True)
    _manifest(
        executors,
        "find_urls",
        "read_only",
        {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
        produces="collection",
    )
    _manifest(
        executors,
        "read_urls_html",
        "read_only",
        {"type": "object", "properties": {"urls": {"type": "array"}}, "required": ["urls"]},
        produces="collection",
        consumes="urls",
    )
    _manifest(
        executors, "create_files_doc", "edit",
        {"type": "object", "properties": {"pages": {"type": "array"}, "path": {"type": "string"}}, "required": ["pages", "path"]},
        consumes="pages", paths=["path"], destination="path",
    )  # fmt: skip


def test_the_metnos_framework_validates_against_a_catalog_that_has_its_executors(
    tmp_path: Path,
) -> None:
    _metnos_catalog(tmp_path)
    source = DATA / "metnos-section6.json"
    valid = run_metis(["plan", "validate", str(source), "--workspace", str(tmp_path)])
    assert valid.code == 0 and "valid (4 steps)" in valid.stdout, valid
    # Without the catalog every step but the terminal names an unknown executor.
    unknown = run_metis(
        ["plan", "validate", str(source), "--workspace", str(tmp_path / "none"), "--json"]
    )
    assert unknown.code == 1
    assert [(f["cls"], f["step"]) for f in json.loads(unknown.stdout)["failures"]] == [
        ("wrong_tool", 1), ("wrong_tool", 2), ("wrong_tool", 3),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (lambda s: s[1]["args"].update(from_step=3), [("wrong_args", 2)]),  # a later step
        (lambda s: s[2]["args"].pop("path"), [("missing_input", 3)]),
        (lambda s: s[2]["args"].update(path="/etc/report"), [("out_of_scope", 3)]),
        (lambda s: s[0]["args"].update(query=["a", "b"]), [("wrong_args", 1)]),
        (lambda s: s[0]["args"].update(query="${step2.title}"), [("wrong_args", 1)]),
    ],
)
def test_the_metnos_framework_broken_one_way_at_a_time(
    tmp_path: Path, edit: Any, expected: list[Any]
) -> None:
    _metnos_catalog(tmp_path)
    framework = json.loads((DATA / "metnos-section6.json").read_text())
    edit(framework["steps"])
    catalog = {
        info.name: info
        for info in (
            load_manifest(p).info
            for p in sorted((tmp_path / ".metis" / "executors").glob("*.yaml"))
        )
    }
    assert _both_verdicts(framework, catalog) == expected


# --- the Metnos page's scheduling request (section 11.1) --------------------------------------


def test_the_metnos_scheduling_example_asks_for_the_detail_and_runs_nothing(tmp_path: Path) -> None:
    # "If the recurrence is recognized unambiguously, Metnos records the task.
    # Otherwise it asks for the missing detail instead of running the request
    # body immediately." A weekday recurrence is not in the grammar.
    seed(tmp_path)
    request = (
        "Every Monday at 8, find unread mail in my work account and send me a summary on Telegram."
    )
    out = run(runtime(tmp_path, None), request=request)
    assert (
        out.state == "refused"
        and "weekly and monthly recurrences are not in the grammar" in out.answer
    )
    with PlanStore(tmp_path) as store:
        assert store.tasks() == []


@pytest.mark.parametrize(
    ("request_text", "schedule", "command"),
    [
        ("Summarize my notes into Reports/notes-summary.md every 30 minutes", "every 30m", "Summarize my notes into Reports/notes-summary.md"),
        ("Summarize my notes, every 2h", "every 2h", "Summarize my notes"),
    ],
)  # fmt: skip
def test_a_recurrence_at_the_end_is_recognized_too(
    tmp_path: Path, request_text: str, schedule: str, command: str
) -> None:
    seed(tmp_path)
    out = run(runtime(tmp_path, None), request=request_text)  # no provider: nothing is planned
    assert out.state == "completed" and "Recorded task" in out.answer, out
    with PlanStore(tmp_path) as store:
        (task,) = store.tasks()
    assert (task.owner, task.schedule, task.command) == (ALICE.owner, schedule, command)
    assert not (tmp_path / "Reports").exists()


@pytest.mark.parametrize(
    ("request_text", "missing"),
    [
        ("Summarize my notes every day at 8:00", "daily@HH:MM (24-hour clock)"),
        ("Summarize my notes each morning", "missing the time of day"),
        ("Send the digest every 5", "missing the unit of the interval"),
    ],
)
def test_an_ambiguous_recurrence_anywhere_is_refused_naming_what_is_missing(
    tmp_path: Path, request_text: str, missing: str
) -> None:
    seed(tmp_path)
    out = run(runtime(tmp_path, None), request=request_text)
    assert out.state == "refused" and missing in out.answer, out


@pytest.mark.parametrize(
    "request_text", ["Update the daily report", "Fix every file in src", "Read every 3 files"]
)
def test_words_like_daily_or_every_alone_are_not_a_recurrence(request_text: str) -> None:
    assert match_route(request_text) is None


# --- argument schemas as other tool stacks write them -----------------------------------------


def _recorded(rel: str, normalizer: Any) -> tuple[dict[str, Any], ToolUseBlock]:
    """A cassette's first tool definition (its JSON schema) and the call the model made."""
    tool = cassette(rel)["interactions"][0]["request"]["parsed_body"]["tools"][0]
    schema = tool.get("parameters") or tool["function"]["parameters"]
    answer = check_stream(normalize(normalizer(), body(rel, 0)))
    (call,) = [b for b in answer.blocks if isinstance(b, ToolUseBlock)]
    return schema, call


RECORDED = [(CHAT, OpenAIChatNormalizer), (RESPONSES, OpenAIResponsesNormalizer), (RESPONSES_PHASE, OpenAIResponsesNormalizer), (RESPONSES_USAGE, OpenAIResponsesNormalizer)]  # fmt: skip


@pytest.mark.parametrize(
    ("rel", "normalizer"), RECORDED, ids=[r[0].split("/")[-1][5:-5] for r in RECORDED]
)
def test_recorded_tool_schemas_and_the_arguments_models_sent(
    tmp_path: Path, rel: str, normalizer: Any
) -> None:
    schema, call = _recorded(rel, normalizer)
    info = _manifest(tmp_path, call.name, "read_only", schema)
    catalog = {info.name: info}
    (name,) = schema["required"]

    def framework(args: dict[str, Any]) -> dict[str, Any]:
        return {"steps": [{"tool": call.name, "args": args}, {"tool": "final_answer"}]}

    assert _both_verdicts(framework(dict(call.input)), catalog) == []  # what the model sent fits
    # A runtime value is a string: it fits a string argument, not an integer one.
    as_text = [] if schema["properties"][name]["type"] == "string" else [("wrong_args", 1)]
    assert _both_verdicts(framework({name: "${RUNTIME:owner}"}), catalog) == as_text
    assert _both_verdicts(framework({}), catalog) == [("missing_input", 1)]
    assert _both_verdicts(framework({**call.input, "extra": 1}), catalog) == [
        ("wrong_args", 1)
    ]  # closed
    flipped = [1] if isinstance(call.input[name], str) else "text"
    assert _both_verdicts(framework({name: flipped}), catalog) == [("wrong_args", 1)]


def search_files(
    path: str,
    pattern: str,
    exclude_patterns: list[str] | None = None,
    max_results: int = 100,
    mode: Literal["glob", "regex"] = "glob",
    case_sensitive: bool | None = None,
) -> list[str]:
    """A tool function as an MCP server or an agent framework declares it."""
    raise NotImplementedError


class Recipient(pydantic.BaseModel):
    address: str
    name: str | None = None


class SendMail(pydantic.BaseModel):
    to: list[Recipient]
    subject: str = pydantic.Field(max_length=200)
    body: str
    priority: Literal["low", "normal", "high"] = "normal"
    send_at: float | None = None


def test_schemas_pydantic_writes_for_tool_functions(tmp_path: Path) -> None:
    search = _manifest(
        tmp_path,
        "search_files",
        "read_only",
        pydantic.TypeAdapter(search_files).json_schema(),
        produces="collection",
    )
    send = _manifest(tmp_path, "send_mail", "exec", SendMail.model_json_schema(), destination="to")
    catalog = {search.name: search, send.name: send}

    def one(tool: str, args: dict[str, Any]) -> list[tuple[str, int | None]]:
        return _both_verdicts(
            {"steps": [{"tool": tool, "args": args}, {"tool": "final_answer"}]}, catalog
        )

    good = {
        "path": "src",
        "pattern": "*.py",
        "exclude_patterns": None,
        "max_results": 5,
        "mode": "regex",
    }
    assert one("search_files", good) == []
    assert (
        one("search_files", {**good, "exclude_patterns": ["build"], "case_sensitive": True}) == []
    )
    # Optional arguments are typed by their anyOf branches: not any value fits.
    assert one("search_files", {**good, "exclude_patterns": "build"}) == [("wrong_args", 1)]
    assert one("search_files", {**good, "case_sensitive": "yes"}) == [("wrong_args", 1)]
    assert one("search_files", {**good, "mode": "fuzzy"}) == [("wrong_args", 1)]
    assert one("search_files", {**good, "max_results": True}) == [("wrong_args", 1)]
    assert one("search_files", {**good, "limit": 3}) == [("wrong_args", 1)]  # closed (extra=forbid)
    assert one("search_files", {"path": "src"}) == [("missing_input", 1)]
    mail = {
        "to": [{"address": "a@example.org"}],
        "subject": "Summary",
        "body": "${step1.0}",
        "send_at": 1.5,
    }
    assert one("send_mail", mail) == [("wrong_args", 1)]  # a step's reference to itself
    mail["body"] = "Notes: ${RUNTIME:date}"
    assert one("send_mail", mail) == []
    assert one("send_mail", {**mail, "send_at": "tomorrow"}) == [("wrong_args", 1)]
    assert one("send_mail", {**mail, "priority": "urgent"}) == [("wrong_args", 1)]
    # Not checked (said in specs/plan.md): `$ref` items, `maxLength`. The
    # executor's own validation runs again when it is called.
    assert one("send_mail", {**mail, "to": [{"nobody": 1}], "subject": "x" * 300}) == []


# --- real provider answers that are not a framework -------------------------------------------


class _Served:
    def __init__(self, text: str) -> None:
        self.text = text.encode()
        self.posted: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.posted.append(json.loads(request.content))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=self.text)


@pytest.mark.parametrize(
    ("provider_cls", "rel"),
    [(AnthropicProvider, ANTHROPIC_TOOL), (OpenAIResponsesProvider, RESPONSES_USAGE)],
)
def test_a_recorded_answer_calling_another_tool_is_no_framework(
    provider_cls: Any, rel: str
) -> None:
    # The recorded answers call `bash` and `final_result` (the latter under a
    # forced tool_choice, pydantic-ai's structured output): a proposer that
    # gets either has no framework, a structural failure, not an operational one.
    served = _Served(body(rel, 0))
    provider = provider_cls(
        "model-x", api_key="sk-test", http_client=httpx.AsyncClient(transport=httpx.MockTransport(served)),
        retry=RetryPolicy(max_retries=0),
    )  # fmt: skip
    with pytest.raises(ProposalError) as info:
        asyncio.run(Proposer(provider, [], {}, 8).propose("Summarize my notes"))
    assert info.value.cls is ErrorClass.WRONG_ARGS and "without a framework" in str(info.value)
    (posted,) = served.posted
    forced = posted["tool_choice"]
    assert forced.get("name") == PROPOSE_TOOL, forced
