"""Redact before normalising (issue 24, TRACE-2): a URL password in a
command's argument reached the trace once the argument became a footprint
path (`https:/user:pass@host`, the `//` folded). The runtime now redacts
each derived path after derivation, in addition to the raw argument
(`tools/_derived.py`), and the detector knows the folded form, so
`metis conform` finds such a leak in a trace that holds one."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from metis_cli._run import run
from metis_runtime.tools import Classification
from metis_runtime.tools._derived import _redacted
from metis_runtime.tools._derived import redact_footprint
from metis_trace import CallClass
from metis_trace import ToolKind
from metis_trace import find_credentials
from tests.input._cli import run_metis
from tests.runtime.test_loop_support import write_scenario

PASSWORD = "s3cr3tPassw0rd"
COMMAND = f"cat https://alice:{PASSWORD}@example.com/x.txt"


def _run(tmp_path: Path) -> Path:
    scenario = write_scenario(
        tmp_path / "scenario.yaml",
        [[{"tool": "bash", "id": "toolu_01", "input": {"command": COMMAND}}], [{"text": "done"}]],
    )
    trace = tmp_path / "run" / "trace.jsonl"
    result = CliRunner().invoke(
        run,
        [
            *("--scenario", str(scenario), "--workspace", str(tmp_path / "ws")),
            *("--mode", "acceptEdits", "--headless", "-q", "--trace", str(trace)),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.stderr
    return trace


def test_a_url_password_never_reaches_the_trace_through_a_footprint(tmp_path: Path) -> None:
    trace = _run(tmp_path)
    for written in trace.parent.iterdir():
        assert PASSWORD not in written.read_text(errors="replace"), written.name
    (decision,) = [
        e for e in map(json.loads, trace.read_text().splitlines()) if e["kind"] == "decision"
    ]
    assert decision["reads"] == [str(tmp_path / "ws" / "https:/alice:[REDACTED]@example.com/x.txt")]
    outcome = run_metis(["conform", str(trace)])
    assert outcome.code == 0 and "conforms" in outcome.stdout, outcome  # TRACE-2 scanned it


def test_conform_finds_the_folded_url_password(tmp_path: Path) -> None:
    """The check fires: the trace as the runtime wrote it before the fix."""
    trace = _run(tmp_path)
    leaked = trace.read_text().replace("https:/alice:[REDACTED]@", f"https:/alice:{PASSWORD}@")
    assert PASSWORD in leaked
    copy = tmp_path / "leaked.jsonl"  # not a file of the run (the plugin scans those)
    copy.write_text(leaked)
    outcome = run_metis(["conform", str(copy)])
    assert outcome.code == 1, outcome
    assert "TRACE-2" in outcome.stdout and "basic-auth-url credential" in outcome.stdout


def test_a_redacted_password_is_not_a_credential() -> None:
    assert find_credentials("https://alice:[REDACTED]@example.com/") == []
    assert find_credentials("/ws/https:/alice:[REDACTED]@example.com/") == []
    (found,) = find_credentials(f"/ws/https:/alice:{PASSWORD}@example.com/")
    assert found.family == "basic-auth-url"


def test_every_derived_path_is_redacted_by_the_raw_arguments_credentials() -> None:
    ws = Path("/ws")
    derived = ws / f"https:/alice:{PASSWORD}@example.com/x.txt"
    shown = Classification(CallClass.SAFE, None, ToolKind.READ_ONLY, paths=(derived,))
    redacted = redact_footprint(shown, {"command": COMMAND})
    assert redacted.paths == (derived,)  # the gate decides on the real path
    assert redacted.footprint()[0] == (ws / "https:/alice:[REDACTED]@example.com/x.txt",)
    # By value, wherever the raw argument's credential survives the derivation.
    assert _redacted((Path(f"/ws/{PASSWORD}/y"),), [PASSWORD]) == (Path("/ws/[REDACTED]/y"),)
    plain = Classification(CallClass.SAFE, None, ToolKind.READ_ONLY, paths=(ws / "a.txt",))
    assert redact_footprint(plain, {"command": "cat a.txt"}) is plain
