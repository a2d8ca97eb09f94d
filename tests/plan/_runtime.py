"""Helpers for the plan runtime tests: a seeded workspace, providers, conformance."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from metis_check import Report
from metis_cli._plan_conform import check_turn_dir
from metis_runtime.permissions import Gate
from metis_runtime.permissions import Policy
from metis_runtime.plan import Coordinates
from metis_runtime.plan import PlanRuntime
from metis_runtime.plan import TurnOptions
from metis_runtime.plan import TurnOutcome
from metis_runtime.plan import load_dialog
from metis_runtime.plan._state import dialog_path
from metis_runtime.providers import Cassette
from metis_runtime.providers import ReplayProvider
from metis_runtime.providers import ScriptedProvider
from metis_runtime.providers import ToolUseBlock
from metis_runtime.providers import load_scenario
from metis_runtime.tools import ToolRegistry
from metis_trace import Decision
from metis_trace import Mode
from metis_trace import ResumeAnswer
from metis_trace import Route

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "metis_runtime" / "scenarios" / "plan" / "notes.yaml"
REQUEST = "Summarize my notes into Reports/notes-summary.md"
ALICE = Coordinates("alice", "alice", "cli", "default")


def seed(workspace: Path, skip: tuple[str, ...] = ()) -> None:
    for name, content in load_scenario(SCENARIO).workspace_files.items():
        if name.startswith(skip):
            continue
        target = workspace / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)


def replay(start: int = 0) -> ReplayProvider:
    cassette = load_scenario(SCENARIO).cassette
    return ReplayProvider(Cassette(cassette.path, cassette.interactions[start:]))


def proposing(*frameworks: dict[str, Any]) -> ScriptedProvider:
    """A provider that proposes these frameworks, one per request (then fails)."""
    turns = [
        [ToolUseBlock(id=f"toolu_{i}", name="propose_framework", input=fw)]
        for i, fw in enumerate(frameworks)
    ]
    return ScriptedProvider(turns)


def runtime(workspace: Path, provider: Any, policy: Policy | None = None) -> PlanRuntime:
    chosen = policy or Policy()

    def gate_for(mode: Mode, route: Route) -> Gate:
        return Gate(chosen, mode, workspace, route, headless_default=Decision.DENY)

    return PlanRuntime(
        workspace,
        ToolRegistry.builtin(),
        gate_for,
        provider=provider,
        env={"PATH": "/usr/bin:/bin"},
    )


def run(
    rt: PlanRuntime, request: str = REQUEST, who: Coordinates = ALICE, **options: Any
) -> TurnOutcome:
    return asyncio.run(rt.run(request, who, TurnOptions(**options)))


def resume(
    rt: PlanRuntime,
    outcome: TurnOutcome,
    answer: ResumeAnswer = ResumeAnswer.APPROVE,
    inputs: dict[str, str] | None = None,
    who: Coordinates = ALICE,
) -> TurnOutcome:
    assert outcome.dialog is not None, outcome
    dialog = load_dialog(dialog_path(rt.workspace, outcome.dialog))
    return asyncio.run(rt.resume(dialog, answer, inputs or {}, who))


def conform(workspace: Path) -> Report:
    report = check_turn_dir(workspace / ".metis" / "plan" / "turns")
    assert report is not None
    return report


def records(outcome: TurnOutcome) -> list[Any]:
    from metis_trace import read_turn_log

    _, recs, _ = read_turn_log(outcome.turn_log.read_text().splitlines())
    return recs


def kinds(outcome: TurnOutcome, kind: str) -> list[Any]:
    return [r for r in records(outcome) if r.kind == kind]
