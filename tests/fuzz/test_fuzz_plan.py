"""Hypothesis over the plan path's readers, from mutations of real files.

The same promise as every other reader (`assert_clean`): exit 0, 1 or 2, no
traceback, an error is one line naming its place, within the time and heap
bounds. The seeds: the Metnos page's framework (`tests/data/plan/`) and one
in YAML with every reference form; the shipped scenario's signed manifests;
turn logs the model simulates; a dialog and a turn log the runtime wrote for
a real paused turn (the keyless notes scenario); the schedule grammar.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from functools import cache
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from metis_check._plan_generate import simulate_turn
from metis_runtime.providers import load_scenario
from metis_trace import dumps_turn_log

from ._harness import assert_clean
from ._harness import bounded_run
from ._harness import conform_clean
from ._mutate import mutated
from .test_fuzz_readers import _FAST
from .test_fuzz_readers import _SLOW
from .test_fuzz_readers import DATA
from .test_fuzz_readers import SCENARIOS

NOTES = SCENARIOS / "plan" / "notes.yaml"
FRAMEWORK_YAML = b"""\
steps:
- tool: find_notes
  args: {folder: notes}
- tool: read_notes
  args: {from_step: 1}
  when: {nonempty: 1}
- tool: create_summary
  args: {from_step: 2, path: "${RUNTIME:target.path}", title: "${FILLER:title} of ${step1.0}"}
- tool: final_answer
fillers:
  title: {prompt: "A title?", default: Notes, role: creative}
"""


@cache
def framework_seeds() -> tuple[bytes, ...]:
    return ((DATA / "plan" / "metnos-section6.json").read_bytes(), FRAMEWORK_YAML)


@cache
def manifest_seeds() -> dict[str, tuple[bytes, ...]]:
    """Each shipped manifest (name -> its YAML), with its program beside it."""
    files = load_scenario(NOTES).workspace_files
    return {
        name: (text.encode(),)
        for name, text in files.items()
        if name.startswith(".metis/executors/") and name.endswith(".yaml")
    }


@cache
def turn_log_seeds() -> tuple[bytes, ...]:
    return tuple(
        dumps_turn_log(t.header, t.records).encode() for t in map(simulate_turn, (1, 4, 9))
    )


@cache
def paused_workspace() -> tuple[Path, bytes, bytes]:
    """A workspace with a real paused turn: the folder, its dialog, its turn log."""
    from tests.plan._runtime import ALICE
    from tests.plan._runtime import replay
    from tests.plan._runtime import run
    from tests.plan._runtime import runtime
    from tests.plan._runtime import seed

    folder = Path(tempfile.mkdtemp(prefix="metis-fuzz-plan-"))
    seed(folder)
    out = run(runtime(folder, replay()), who=ALICE)
    assert out.dialog is not None, out
    return folder, _dialog(folder, out.dialog).read_bytes(), out.turn_log.read_bytes()


def _dialog(folder: Path, dialog_id: str) -> Path:
    return folder / ".metis" / "plan" / "dialogs" / f"{dialog_id}.json"


@_FAST
@given(mutated(framework_seeds()), st.sampled_from([".json", ".yaml"]))
def test_plan_validate(data: bytes, suffix: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"framework{suffix}"
        path.write_bytes(data)
        assert_clean(
            bounded_run(["plan", "validate", str(path), "--workspace", tmp]).outcome, str(path)
        )


@_FAST
@given(
    st.sampled_from(sorted(manifest_seeds())).flatmap(
        lambda n: st.tuples(st.just(n), mutated(manifest_seeds()[n]))
    )
)
def test_plan_digest_of_a_manifest(case: tuple[str, bytes]) -> None:
    name, data = case
    files = load_scenario(NOTES).workspace_files
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(name).name
        program = name.removesuffix(".yaml") + ".py"
        (Path(tmp) / Path(program).name).write_text(files[program])
        path.write_bytes(data)
        outcome = bounded_run(["plan", "digest", str(path)]).outcome
        assert_clean(outcome, str(path))
        if data == manifest_seeds()[name][0]:
            assert outcome.code == 0


@_FAST
@given(mutated(turn_log_seeds()))
def test_conform_a_turn_log(data: bytes) -> None:
    conform_clean(data, name="turn.jsonl")


@_SLOW
@given(mutated((paused_workspace()[2],)))
def test_conform_a_runtime_turn_log(data: bytes) -> None:
    folder, _, _ = paused_workspace()
    # Its segment's trace is found beside the original, not here: the turn log alone.
    conform_clean(data, name="turn.jsonl")
    assert folder.is_dir()


@_SLOW
@given(mutated((paused_workspace()[1],)), st.sampled_from(["--reject", "--approve"]))
def test_plan_resume_a_dialog(data: bytes, answer: str) -> None:
    folder, original, _ = paused_workspace()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        shutil.copytree(folder, ws)
        dialog = _dialog(ws, json.loads(original)["id"])  # the file's name is its id
        dialog.write_bytes(data)
        argv = ["plan", "resume", str(dialog), "--workspace", str(ws), answer, "--owner", "alice"]
        outcome = bounded_run(argv, seconds=60).outcome
        assert_clean(outcome, str(dialog), "--workspace", "plan resume")
        if data == original:  # approved: it completes; rejected: nothing more runs (exit 1)
            assert outcome.code == (0 if answer == "--approve" else 1), outcome


schedules = st.one_of(
    st.text(max_size=24),
    st.builds(
        lambda head, n, unit: f"{head}{n}{unit}",
        st.sampled_from(["every ", "each ", "daily@", "every", "daily@ "]),
        st.integers(-3, 100_000).map(str)
        | st.sampled_from(["08:00", "24:00", "7:5", "٣", "1e3", ""]),
        st.sampled_from(["m", "h", "d", "", " minutes", ":30"]),
    ),
)


@_SLOW
@given(schedules)
def test_tasks_add_with_any_schedule(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        argv = ["tasks", "add", "Summarize my notes", "--workspace", tmp, "--schedule", text]
        outcome = bounded_run(argv).outcome
        assert_clean(outcome, "--schedule")
        if outcome.code == 0:
            listed = json.loads(
                bounded_run(["tasks", "list", "--workspace", tmp, "--json"]).outcome.stdout
            )
            assert [t["command"] for t in listed] == ["Summarize my notes"]


def test_plan_resume_a_dialog_holding_a_lone_surrogate() -> None:
    """Found by `test_plan_resume_a_dialog`: the strict reader keeps a lone
    surrogate escape (as it keeps a file name that is not UTF-8), and saving the
    turn's state then raised `UnicodeEncodeError`, a traceback."""
    folder, original, _ = paused_workspace()
    dialog = json.loads(original)
    assert "args_digest" in json.dumps(dialog)
    data = json.dumps(_with_digest(dialog, "\ud800")).encode()
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        shutil.copytree(folder, ws)
        path = _dialog(ws, dialog["id"])
        path.write_bytes(data)
        argv = [
            "plan",
            "resume",
            str(path),
            "--workspace",
            str(ws),
            "--approve",
            "--owner",
            "alice",
        ]
        assert_clean(bounded_run(argv, seconds=60).outcome, str(path), "--workspace", "plan resume")


def _with_digest(value: object, digest: str) -> object:
    if isinstance(value, dict):
        return {
            k: digest if k == "args_digest" else _with_digest(v, digest) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_with_digest(v, digest) for v in value]
    return value
