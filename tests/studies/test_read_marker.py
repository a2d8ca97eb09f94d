"""The Read-marker protocol (`metis_studies.read_marker`): every replay
condition passes, a wrong answer fails a trial, and a live condition runs
when its key is set (here against a local fake of the Messages API: the
recorded-wire way, no network) and is skipped, saying why, when it is not."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import httpx

from metis_runtime.providers import ReplayProvider
from metis_studies.read_marker import CONDITIONS
from metis_studies.read_marker import Condition
from metis_studies.read_marker import read_marker_study
from metis_studies.read_marker import read_marker_study_async
from metis_studies.read_marker import run_trial


def test_every_replay_condition_passes_its_trials() -> None:
    results = read_marker_study(2, live=False)
    assert [r.condition for r in results] == [c.name for c in CONDITIONS]
    assert len({c.wire for c in CONDITIONS}) == 3  # Anthropic, OpenAI Chat and Responses
    for r in results:
        assert r.passed == 2, [t.to_json() for t in r.trials]
        assert len({t.marker for t in r.trials}) == 2  # a fresh marker per trial


def test_an_answer_without_the_file_s_marker_fails(tmp_path: Path) -> None:
    # The recorded answer quotes another marker than the one in the file.
    cassette = Condition("anthropic", "anthropic").cassette("toolu_1", "MARKER-other")
    trial = asyncio.run(
        run_trial(tmp_path, "anthropic", 0, "MARKER-infile", ReplayProvider(cassette))
    )
    assert trial.marker_in_result and trial.unique_ids and trial.one_to_one
    assert not trial.marker_in_final_text and not trial.ok


def test_live_conditions_are_skipped_without_keys_saying_why() -> None:
    results = read_marker_study(1, conditions=(), env={})
    assert [r.condition for r in results] == ["anthropic-live", "openai-live"]
    assert results[0].skipped == (
        "ANTHROPIC_API_KEY is not set: the live anthropic-live condition was skipped"
    )
    assert all(not r.trials and r.live for r in results)


def _fake_messages_api(seen: list[dict[str, object]]) -> httpx.MockTransport:
    """Answers like the Messages API: a `read` call, then the marker it was sent."""
    wire = Condition("anthropic", "anthropic")

    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append({"url": str(request.url), "key": request.headers.get("x-api-key"), **body})
        found = re.findall(r"MARKER-[0-9a-f]{12}", json.dumps(body["messages"]))
        recorded = wire.cassette("toolu_live_1", found[-1] if found else "none").interactions
        text = recorded[1 if found else 0].body
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, text=text)

    return httpx.MockTransport(answer)


def test_a_live_condition_runs_when_its_key_is_set() -> None:
    seen: list[dict[str, object]] = []

    async def main() -> list[object]:
        async with httpx.AsyncClient(transport=_fake_messages_api(seen)) as client:
            env = {"ANTHROPIC_API_KEY": "sk-test", "METIS_LIVE_ANTHROPIC_MODEL": "claude-test"}
            return list(
                await read_marker_study_async(2, conditions=(), env=env, http_client=client)
            )

    anthropic, openai = asyncio.run(main())
    assert anthropic.condition == "anthropic-live:claude-test" and anthropic.passed == 2  # type: ignore[attr-defined]
    assert "OPENAI_API_KEY is not set" in openai.skipped  # type: ignore[attr-defined]
    assert len(seen) == 4 and {s["model"] for s in seen} == {"claude-test"}
    assert all(s["url"] == "https://api.anthropic.com/v1/messages" for s in seen)
    assert {s["key"] for s in seen} == {"sk-test"}
    assert "read" in {t["name"] for t in seen[0]["tools"]}  # type: ignore[index, union-attr]
