"""The plan path (`metis_runtime/plan/`; specs/plan.md, PLAN-*): `plan:turns`
is a probe running turns as `metis plan run` / `metis plan resume` do (the
same `metis_runtime.plan` calls, in this process), in a workspace of its own
(the keyless scenario seeds notes and three executors):

1. a request planned by the engine pauses for consent to its mutating step;
   a resume by another owner is refused (PLAN-9: the approval is bound to
   its owner); the owner approves: completed;
2. the same request again: served from L0, and consent is asked again
   (PLAN-9: a past approval creates no permission); left paused;
3. an executor's manifest changes (version, re-signed): the cached plan's
   executor signature no longer matches, L0 is not used (PLAN-7); the
   engine plans again; approved, and stored again;
4. the routing epoch is bumped (`metis plan cache --bump-epoch`): the cache
   is not used either (PLAN-7); the owner rejects: nothing committed (PLAN-11).

Then, in a workspace of their own, proposals the scenario does not make
(`_mech_plan_proposals.py`): a step reading its own output (PLAN-2) and
one action twice under one approval (PLAN-9).

Every turn log under each workspace's `.metis/plan/turns/` is checked as `metis conform` does:
`check_turn_log` with its segments' traces (each also replayed with
`check_trace`), then `check_turn_logs` across turns.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

from metis_check import check_trace
from metis_check import check_turn_log
from metis_check import check_turn_logs
from metis_trace import Decision
from metis_trace import InputError
from metis_trace import ResumeRecord
from metis_trace import StepStatus
from metis_trace import read_trace_numbered
from metis_trace import read_turn_log

from ._mech_case import Case
from ._mech_case import Problem
from ._mech_plan_proposals import PROPOSALS
from ._mech_plan_proposals import scenario
from ._mech_read import Traces
from ._mech_read import script
from ._workload import Workload

REQUEST = "Summarize my notes into Reports/notes-summary.md"
OWNER = "explore"


def turns() -> Workload:
    return Workload(name="mech-plan:turns", aims=("plan:turns",), turns=script(), probe="plan")


WORKSPACES = ("ws", "ws-proposals")


def _turns_dir(root: Path, ws: str = "ws") -> Path:
    return root / ws / ".metis" / "plan" / "turns"


def run(workload: Workload, root: Path, timeout: float) -> tuple[list[str], str | None]:
    """The turns in this process, through `metis_runtime.plan` as `metis plan`
    calls it (`metis_cli/_plan.py` is a thin layer over the same functions):
    the keyless replay provider, the runtime over the workspace's registry,
    consent answered through `PlanRuntime.resume`."""
    from metis_runtime import MetisRuntimeError
    from metis_runtime.plan import Coordinates
    from metis_runtime.plan import TurnOptions
    from metis_runtime.plan import TurnProvider
    from metis_runtime.plan import cache_listing
    from metis_runtime.plan import dialog_path
    from metis_runtime.plan import load_dialog
    from metis_runtime.plan import plan_runtime
    from metis_runtime.plan import sign_manifest
    from metis_trace import ResumeAnswer

    ws = root / "ws"
    owner = Coordinates(OWNER, OWNER, "cli", "default")
    steps: list[str] = []
    log = (root / "run" / "plan-steps.jsonl").open("w", encoding="utf-8")

    async def answer(dialog: str | None, yes: bool, who: Coordinates) -> str:
        provider = TurnProvider("replay", None, "notes", ws)
        found = load_dialog(dialog_path(ws, str(dialog)))
        reply = ResumeAnswer.APPROVE if yes else ResumeAnswer.REJECT
        try:
            done = await plan_runtime(ws, provider.provider, (), serial=False).resume(
                found, reply, {}, who
            )
        except MetisRuntimeError as exc:
            log.write(json.dumps({"resume": who.owner, "refused": str(exc)}) + "\n")
            return "refused"
        provider.done(ws)
        return str(done.state)

    async def turn() -> str | None:
        provider = TurnProvider("replay", None, "notes", ws)
        done = await plan_runtime(ws, provider.provider, (), serial=False).run(
            REQUEST, owner, TurnOptions()
        )
        provider.done(ws)
        steps.append(f"plan run -> {done.state} ({done.path})")
        return done.dialog

    async def proposals() -> None:
        where = root / "ws-proposals"
        for name, (_, approve) in PROPOSALS.items():
            path = str(scenario(root / "run", name))
            provider = TurnProvider("replay", None, path, where)
            done = await plan_runtime(where, provider.provider, (), serial=False).run(
                REQUEST, owner, TurnOptions()
            )
            provider.done(where)
            steps.append(f"plan run ({name}) -> {done.state} ({done.path})")
            if approve and done.dialog is not None:
                provider = TurnProvider("replay", None, path, where)
                found = load_dialog(dialog_path(where, done.dialog))
                again = await plan_runtime(where, provider.provider, (), serial=False).resume(
                    found, ResumeAnswer.APPROVE, {}, owner
                )
                provider.done(where)
                steps.append(f"resume ({name}) -> {again.state}")

    async def story() -> None:
        dialog = await turn()
        steps.append(f"resume by intruder -> {await answer(dialog, True, _intruder())}")
        steps.append(f"resume -> {await answer(dialog, True, owner)}")
        await turn()  # L0: consent asked again; left paused
        manifest = ws / ".metis" / "executors" / "read_notes.yaml"
        manifest.write_text(manifest.read_text().replace("version: 1", "version: 2"))
        _, signed = sign_manifest(manifest)  # as `metis plan digest --write` writes it
        manifest.write_text(yaml.safe_dump(signed, sort_keys=False))
        steps.append(f"resume -> {await answer(await turn(), True, owner)}")
        cache_listing(ws, bump_epoch=True)
        steps.append(f"resume -> {await answer(await turn(), False, owner)}")
        await proposals()

    with log:
        try:
            asyncio.run(asyncio.wait_for(story(), timeout))
        except (MetisRuntimeError, TimeoutError, ValueError) as exc:
            return steps, f"crash: {type(exc).__name__}: {exc}"
    return steps, None


def _intruder() -> Any:
    from metis_runtime.plan import Coordinates

    return Coordinates("intruder", "intruder", "cli", "default")


def _logs(root: Path, ws: str = "ws") -> dict[str, tuple[Any, list[Any], list[int]]]:
    out = {}
    for path in sorted(_turns_dir(root, ws).glob("*.jsonl")):
        out[path.name] = read_turn_log(path.read_text().split("\n"))
    return out


def check(workload: Workload, root: Path, traces: Traces) -> list[Problem]:
    out: list[Problem] = []
    for ws in WORKSPACES:
        try:
            logs = _logs(root, ws)
        except InputError as exc:
            return [("PLAN-1", f"a turn log cannot be read: {exc.describe('turn log')}", "")]
        out += _check_logs(_turns_dir(root, ws), logs)
    return out


def _check_logs(turns: Path, logs: dict[str, tuple[Any, list[Any], list[int]]]) -> list[Problem]:
    out: list[Problem] = []
    for name, (header, records, lines) in logs.items():
        named = {
            1: header.trace,
            **{r.segment: r.trace for r in records if isinstance(r, ResumeRecord)},
        }
        segments = {}
        for segment, rel in named.items():
            trace = turns / rel if rel else None
            if trace is not None and trace.is_file():
                th, events, line_of = read_trace_numbered(trace.read_text().split("\n"))
                segments[segment] = (th, events)
                report = check_trace(events, th, source=rel, line_of=line_of)
                out += [(v.invariant, v.message, str(rel)) for v in report.violations]
        full = len(segments) == len([r for r in named.values() if r])
        report = check_turn_log(
            header, records, source=name, line_of=lines, traces=segments if full else None
        )
        out += [(v.invariant, v.message, name) for v in report.violations]
    across = check_turn_logs({n: (h, r) for n, (h, r, _) in logs.items()}, source="turns")
    out += [(v.invariant, v.message, "turns") for v in across.violations]
    return out


def reached(workload: Workload, root: Path, traces: Traces) -> Counter[str]:
    seen: Counter[str] = Counter()
    try:
        logs = [log for ws in WORKSPACES for log in _logs(root, ws).values()]
    except InputError:
        return seen
    for _, records, _ in logs:
        approved = False  # an approval was used in this turn
        for r in records:
            kind, path, outcome = r.kind, getattr(r, "path", None), getattr(r, "outcome", None)
            if kind == "path" and path == "engine" and outcome == "used":
                seen["plan:engine"] += 1
            elif kind == "path" and path == "L0" and outcome == "hit":
                seen["plan:l0-hit"] += 1
            elif kind == "path" and path == "L0" and outcome == "miss":
                seen[f"plan:l0-miss:{r.reason}"] += 1
            elif kind == "framework" and not r.valid:
                if any("not an earlier step" in f.message for f in r.failures):
                    seen["plan:self-reference-refused"] += 1
            elif kind == "step" and r.decision is Decision.ASK:
                if r.status is StepStatus.OK and r.approval_dialog is not None:
                    approved = True
                elif approved and r.status is StepStatus.DENIED and r.approval_dialog is None:
                    seen["plan:approval-used-once"] += 1  # the same action, asked again
            elif kind == "pause":
                seen["plan:paused"] += 1
            elif kind == "resume":
                seen[f"plan:resume-{r.answer}"] += 1
    steps = root / "run" / "plan-steps.jsonl"
    for line in steps.read_text().splitlines() if steps.exists() else []:
        if json.loads(line).get("resume") == "intruder":
            seen["plan:foreign-resume-refused"] += 1
    return seen


CASES = (
    Case(
        "plan:turns",
        "plan",
        (
            "plan:engine",
            "plan:l0-hit",
            "plan:l0-miss:executor_changed",
            "plan:l0-miss:epoch_changed",
            "plan:paused",
            "plan:resume-approve",
            "plan:resume-reject",
            "plan:foreign-resume-refused",
            "plan:self-reference-refused",
            "plan:approval-used-once",
        ),
        turns,
        reached,
        check,
        run,
        "in-process",
    ),
)
