"""The Read-marker protocol (the paper's RQ3 model study).

A trial seeds a workspace with `marker.txt` holding a fresh marker, asks the
model to read it and answer with the marker, and runs the real loop (the
real `read` tool, the production gate in default mode, a trace file). It
passes when all four hold:

1. closure of unique ids: every call id is used once, and every call has
   exactly one terminal result (observed from the trace);
2. the marker is in the `read` call's tool result;
3. the marker is in the run's final text;
4. the trace conforms to the model (`check_trace`).

Replay conditions (`CONDITIONS`) always run. Live conditions run when their
API key is set (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`; the model from
`METIS_LIVE_ANTHROPIC_MODEL` / `METIS_LIVE_OPENAI_MODEL`); otherwise they are
reported skipped, with the reason.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import tempfile
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import httpx

from metis_check import check_trace
from metis_runtime import AgentLoop
from metis_runtime import TraceWriter
from metis_runtime import make_header
from metis_runtime.permissions import Gate
from metis_runtime.permissions import Policy
from metis_runtime.providers import AnthropicProvider
from metis_runtime.providers import OpenAIResponsesProvider
from metis_runtime.providers import Provider
from metis_runtime.providers import ReplayProvider
from metis_runtime.tools import JobManager
from metis_runtime.tools import ToolContext
from metis_runtime.tools import ToolRegistry
from metis_runtime.tools import builtin_tools
from metis_trace import Assistant
from metis_trace import Decision
from metis_trace import Mode
from metis_trace import Result
from metis_trace import Route
from metis_trace import read_trace_numbered

from .._sync import run_sync
from ..faults import closure_of
from ._wire import CONDITIONS
from ._wire import MARKER_FILE
from ._wire import Condition

TASK = (
    f"Read the file {MARKER_FILE} with the read tool, then answer with one sentence "
    "that quotes the marker it holds exactly."
)


@attrs.frozen
class Trial:
    condition: str
    trial: int
    marker: str
    status: str
    unique_ids: bool
    one_to_one: bool
    marker_in_result: bool
    marker_in_final_text: bool
    trace_conforms: bool
    note: str = ""

    @property
    def ok(self) -> bool:
        return (
            self.unique_ids
            and self.one_to_one
            and self.marker_in_result
            and self.marker_in_final_text
            and self.trace_conforms
        )

    def to_json(self) -> dict[str, Any]:
        return {**attrs.asdict(self), "ok": self.ok}


@attrs.frozen
class ConditionResult:
    condition: str
    live: bool
    trials: tuple[Trial, ...] = ()
    skipped: str = ""  # why a live condition did not run

    @property
    def passed(self) -> int:
        return sum(t.ok for t in self.trials)

    def to_json(self) -> dict[str, Any]:
        return {
            "condition": self.condition,
            "live": self.live,
            "passed": self.passed,
            "trials": [t.to_json() for t in self.trials],
            "skipped": self.skipped,
        }


async def run_trial(
    directory: Path, condition: str, index: int, marker: str, provider: Provider
) -> Trial:
    """One trial of the protocol in `directory` (created)."""
    ws = directory / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    (ws / MARKER_FILE).write_text(f"marker: {marker}\n", encoding="utf-8")
    registry = ToolRegistry(builtin_tools())
    header = make_header(mode=Mode.DEFAULT, tools=registry.names(), route=Route.HEADLESS)
    trace_path = directory / "trace.jsonl"
    gate = Gate(Policy(), Mode.DEFAULT, ws, Route.HEADLESS, headless_default=Decision.DENY)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(ws)}
    loop = AgentLoop(
        provider,
        registry,
        gate,
        ToolContext(ws, env, JobManager()),
        TraceWriter(trace_path, header),
    )
    try:
        result = await loop.run(TASK)
    finally:
        loop.trace.close()
    with trace_path.open(encoding="utf-8") as fh:
        header, events, line_of = read_trace_numbered(fh)
    report = check_trace(events, header, source=str(trace_path), line_of=line_of)
    ids = [c.call_id for e in events if isinstance(e, Assistant) for c in e.calls]
    tools = {c.occ: c.tool for e in events if isinstance(e, Assistant) for c in e.calls}
    read_results = [
        str(e.content) for e in events if isinstance(e, Result) and tools.get(e.occ) == "read"
    ]
    _, one_to_one = closure_of(events)
    return Trial(
        condition=condition,
        trial=index,
        marker=marker,
        status=result.status.value,
        unique_ids=bool(ids) and len(set(ids)) == len(ids),
        one_to_one=one_to_one,
        marker_in_result=any(marker in r for r in read_results),
        marker_in_final_text=marker in result.text,
        trace_conforms=report.ok,
        note=result.error or (report.first.one_line() if report.first is not None else ""),
    )


def replay_marker(condition: str, index: int) -> str:
    digest = hashlib.sha256(f"{condition}/{index}".encode()).hexdigest()[:12]
    return f"MARKER-{digest}"


async def _replay(base: Path, condition: Condition, trials: int) -> ConditionResult:
    out = []
    for k in range(trials):
        marker = replay_marker(condition.name, k)
        call_id = f"toolu_marker_{k}" if condition.wire == "anthropic" else f"call_marker_{k}"
        provider = ReplayProvider(
            condition.cassette(call_id, marker), chunk_size=condition.chunk_size
        )
        out.append(
            await run_trial(base / condition.name / str(k), condition.name, k, marker, provider)
        )
    return ConditionResult(condition.name, live=False, trials=tuple(out))


@attrs.frozen
class LiveCondition:
    name: str
    key: str  # the environment variable holding the API key
    model_env: str
    default_model: str
    build: Callable[[str, str, httpx.AsyncClient | None], Provider]


def _anthropic(model: str, key: str, client: httpx.AsyncClient | None) -> Provider:
    return AnthropicProvider(model, api_key=key, http_client=client)


def _openai(model: str, key: str, client: httpx.AsyncClient | None) -> Provider:
    return OpenAIResponsesProvider(model, api_key=key, http_client=client)


LIVE: tuple[LiveCondition, ...] = (
    LiveCondition(
        "anthropic-live",
        "ANTHROPIC_API_KEY",
        "METIS_LIVE_ANTHROPIC_MODEL",
        "claude-sonnet-4-5",
        _anthropic,
    ),
    LiveCondition(
        "openai-live", "OPENAI_API_KEY", "METIS_LIVE_OPENAI_MODEL", "gpt-4o-mini", _openai
    ),
)


async def _live(
    base: Path,
    condition: LiveCondition,
    trials: int,
    env: dict[str, str],
    client: httpx.AsyncClient | None,
) -> ConditionResult:
    key = env.get(condition.key, "")
    if not key:
        why = f"{condition.key} is not set: the live {condition.name} condition was skipped"
        return ConditionResult(condition.name, live=True, skipped=why)
    model = env.get(condition.model_env) or condition.default_model
    out = []
    for k in range(trials):
        marker = f"MARKER-{secrets.token_hex(6)}"
        provider = condition.build(model, key, client)
        name = f"{condition.name}:{model}"
        out.append(await run_trial(base / condition.name / str(k), name, k, marker, provider))
    return ConditionResult(f"{condition.name}:{model}", live=True, trials=tuple(out))


async def read_marker_study_async(
    trials: int = 3,
    *,
    conditions: Sequence[Condition] = CONDITIONS,
    live: bool = True,
    env: dict[str, str] | None = None,
    http_client: httpx.AsyncClient | None = None,
    workdir: Path | None = None,
) -> tuple[ConditionResult, ...]:
    """Every replay condition, then each live one (skipped without its key).
    `env` (default: the process environment) holds the keys; `http_client`
    carries the live requests (tests give it a recorded-wire transport)."""
    environment = dict(os.environ if env is None else env)
    with tempfile.TemporaryDirectory(prefix="metis-read-marker-", dir=workdir) as tmp:
        base = Path(tmp)
        out = [await _replay(base, c, trials) for c in conditions]
        if live:
            out += [await _live(base, c, trials, environment, http_client) for c in LIVE]
        return tuple(out)


def read_marker_study(trials: int = 3, **options: Any) -> tuple[ConditionResult, ...]:
    return run_sync(read_marker_study_async(trials, **options))
