"""`metis conform` for CI: formats auto and refused, every output, corpora, stdin, engines.

SARIF is validated against the OASIS 2.1.0 schema checked in under
tests/data/sarif (see the README there); nothing here uses the network.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import jsonschema
import pytest
from click.testing import CliRunner

from metis_cli._main import cli

REPO = Path(__file__).resolve().parents[2]
SESSIONS = REPO / "tests" / "data" / "transcripts" / "claude-code"
SCHEMA = json.loads((REPO / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json").read_text())


def tool_use(i: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": i, "name": "t", "input": {}}


def tool_result(i: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": i, "content": "ok"}


def body(*messages: dict[str, Any]) -> str:
    return json.dumps({"model": "m", "max_tokens": 1, "messages": list(messages)}, indent=1)


BROKEN = body(  # two violations: a reused id (CLOSE-9) and an unanswered call (CLOSE-2)
    {"role": "user", "content": "go"},
    {"role": "assistant", "content": [tool_use("a")]},
    {"role": "user", "content": [tool_result("a")]},
    {"role": "assistant", "content": [tool_use("a"), tool_use("b")]},
    {"role": "user", "content": [tool_result("a")]},
)


def invoke(*args: str, stdin: str | None = None) -> Any:
    return CliRunner().invoke(cli, ["conform", *args], input=stdin)


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    path = tmp_path / "broken.json"
    path.write_text(BROKEN)
    return path


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """Real sessions (one with its sub-agents), one cut live, one broken body."""
    folder = tmp_path / "corpus"
    shutil.copytree(SESSIONS, folder, ignore=shutil.ignore_patterns("LICENSE"))
    # Claude Code's own layout: <session>/subagents/agent-*.jsonl beside <session>.jsonl.
    (folder / "subagent").mkdir()
    (folder / "subagents").rename(folder / "subagent" / "subagents")
    (folder / "broken.json").write_text(BROKEN)
    lines = (SESSIONS / "tool_heavy.jsonl").read_text().splitlines()
    cut = next(i for i, line in enumerate(lines) if '"tool_use"' in line)
    (folder / "live.jsonl").write_text("\n".join(lines[: cut + 1]) + "\n")
    return folder


# -- text prints every violation; auto says what it found ---------------------------


def test_text_prints_every_violation_with_its_rule(broken: Path) -> None:
    result = invoke("--format", "anthropic", str(broken))
    assert result.exit_code == 1
    assert "CLOSE-9 (ANT-5) violated" in result.output
    assert "CLOSE-2 (ANT-1) violated" in result.output
    assert result.output.count("violated") == 2


def test_auto_detects_and_says_which_format(broken: Path) -> None:
    result = invoke("--format", "auto", str(broken), str(SESSIONS / "short.jsonl"))
    assert "format anthropic, detected from" in result.output
    assert "format claude-code, detected from" in result.output


def test_a_codex_rollout_is_refused_under_other_formats_and_found_by_auto(tmp_path: Path) -> None:
    rollout = tmp_path / "rollout.jsonl"
    rollout.write_text(
        '{"timestamp":"t","type":"session_meta","payload":{"id":"x"}}\n'
        '{"timestamp":"t","type":"response_item","payload":{"type":"function_call",'
        '"call_id":"c","name":"f","arguments":"{}"}}\n'
    )
    for fmt in ("claude-code", "openai-responses"):
        result = invoke("--format", fmt, str(rollout))
        assert result.exit_code == 2 and "conforms" not in result.output, fmt
        assert len(result.output.strip().splitlines()) == 1  # one line, on stderr
    # Read as what it is, the call it ends on is undecided, not a pass.
    auto = invoke("--format", "auto", str(rollout))
    assert auto.exit_code == 1 and "format codex, detected from" in auto.output
    assert "open-at-end" in auto.output


# -- verdicts and --allow -----------------------------------------------------------


def test_a_live_session_is_undetermined_and_can_be_allowed(corpus: Path) -> None:
    live = corpus / "live.jsonl"
    result = invoke("--format", "claude-code", str(live))
    assert (
        result.exit_code == 1 and "undetermined" in result.output and "open-at-end" in result.output
    )
    allowed = invoke("--format", "claude-code", "--allow", "open-at-end", str(live))
    assert allowed.exit_code == 0 and "allowed" in allowed.output


# -- corpora: directories, globs, jobs, one aggregate ---------------------------------


def test_a_directory_is_a_corpus_with_one_aggregate(corpus: Path) -> None:
    result = invoke("--format", "auto", str(corpus), "--jobs", "2")
    assert result.exit_code == 1
    out = result.output
    # The session with sub-agents is one unit: its agent files are not listed on their own.
    assert "agent-" not in out
    assert "5 files: 3 conforms, 1 violates, 1 undetermined" in out
    assert "CLOSE-9 (ANT-5): 1 in 1 file(s); first:" in out
    assert "open-at-end (CLOSE-2): 1 in 1 file(s); first:" in out


def test_jobs_and_serial_runs_report_the_same(corpus: Path) -> None:
    serial = json.loads(invoke("--format", "auto", str(corpus), "--json").output)
    pooled = json.loads(invoke("--format", "auto", str(corpus), "--json", "--jobs", "3").output)
    assert serial == pooled and len(serial) == 5


def test_a_glob_expands_and_a_glob_matching_nothing_is_bad_input(corpus: Path) -> None:
    result = invoke("--format", "claude-code", str(corpus / "*.jsonl"))
    assert "4 files" in result.output  # three real sessions and the live one
    nothing = invoke("--format", "claude-code", str(corpus / "*.nope"))
    assert nothing.exit_code == 2 and "matches no file" in nothing.output


def test_an_unreadable_file_in_a_corpus_is_exit_2_and_the_rest_is_reported(corpus: Path) -> None:
    (corpus / "junk.json").write_text("{not json")
    result = invoke("--format", "auto", str(corpus))
    assert result.exit_code == 2
    assert "junk.json: line 1" in result.output and "6 files:" in result.output


# -- standard input -----------------------------------------------------------------


def test_dash_reads_standard_input() -> None:
    text = (SESSIONS / "short.jsonl").read_text()
    result = invoke("--format", "claude-code", "-", stdin=text)
    assert result.exit_code == 0 and result.output.startswith("-: conforms")
    auto = invoke("--format", "auto", "-", stdin=BROKEN)
    assert auto.exit_code == 1 and "CLOSE-9" in auto.output


# -- JSON, SARIF, JUnit, GitHub ------------------------------------------------------


def test_json_has_the_verdict_rule_and_detected_format(broken: Path) -> None:
    payload = json.loads(invoke("--format", "auto", str(broken), "--output", "json").output)
    assert payload["verdict"] == "violates" and payload["passes"] is False
    assert {v["rule"] for v in payload["violations"]} == {"ANT-5", "ANT-1"}
    assert payload["format"] == "anthropic" and payload["detected"].startswith("anthropic")


def test_sarif_validates_against_the_oasis_schema(corpus: Path, tmp_path: Path) -> None:
    (corpus / "junk.json").write_text("[1,")
    out = tmp_path / "metis.sarif"
    result = invoke("--format", "auto", str(corpus), "--output", f"sarif={out}")
    assert result.exit_code == 2
    document = json.loads(out.read_text())
    jsonschema.Draft4Validator(SCHEMA).validate(document)
    run = document["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert "CLOSE-9/ANT-5" in rules
    assert "`specs/closure.md#invariants`" in rules["CLOSE-9/ANT-5"]["help"]["markdown"]
    for rule in rules.values():  # GitHub wants these texts non-empty
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
        assert rule["help"]["text"]
    levels = {(r["ruleId"], r["level"]) for r in run["results"]}
    assert ("CLOSE-9/ANT-5", "error") in levels and ("open-at-end", "warning") in levels
    for r in run["results"]:
        location = r["locations"][0]["physicalLocation"]
        assert location["region"]["startLine"] >= 1
        assert r["partialFingerprints"]["primaryLocationLineHash"]
    assert run["invocations"][0]["executionSuccessful"] is False
    assert "junk.json" in run["invocations"][0]["toolExecutionNotifications"][0]["message"]["text"]
    # The text report still went to the terminal.
    assert "files:" in result.output


def test_sarif_fingerprints_are_stable_across_runs(broken: Path) -> None:
    runs = [
        json.loads(invoke("--format", "anthropic", str(broken), "--output", "sarif").output)
        for _ in range(2)
    ]
    prints = [[r["partialFingerprints"] for r in d["runs"][0]["results"]] for d in runs]
    assert prints[0] == prints[1]


def test_junit_has_one_failure_per_violation_with_its_facts(broken: Path) -> None:
    xml = invoke("--format", "anthropic", str(broken), "--output", "junit").output
    root = ET.fromstring(xml)
    cases = root.findall(".//testcase")
    assert root.get("failures") == "2" and len(cases) == 2
    for case in cases:  # junit-10.xsd: the facts are system-out lines (tests/cli/test_junit_xsd.py)
        facts = dict(
            line.split(": ", 1) for line in (case.findtext("system-out") or "").splitlines()
        )
        assert facts["invariant"] in ("CLOSE-9", "CLOSE-2") and facts["rule"] in ("ANT-5", "ANT-1")
        assert facts["file"] == str(broken) and int(facts["line"]) >= 1
        assert case.find("failure") is not None and case.get("classname") == str(broken)


def test_junit_marks_allowed_undecided_checks_skipped(corpus: Path) -> None:
    live = str(corpus / "live.jsonl")
    root = ET.fromstring(
        invoke(
            "--format", "claude-code", live, "--output", "junit", "--allow", "open-at-end"
        ).output
    )
    suite = root.find("testsuite")
    assert suite is not None and suite.get("skipped") == "1"  # none on <testsuites> (junit-10.xsd)
    assert root.get("failures") == "0"
    assert root.find(".//testcase/skipped") is not None


def test_github_annotations_escape_and_name_the_place(tmp_path: Path) -> None:
    odd = tmp_path / "a,b:c.json"
    odd.write_text(BROKEN)
    lines = invoke("--format", "anthropic", str(odd), "--output", "github").output.splitlines()
    errors = [line for line in lines if line.startswith("::error ")]
    assert len(errors) == 2
    assert all(
        "file=" + str(odd).replace(":", "%3A").replace(",", "%2C") + ",line=" in e for e in errors
    )
    assert any("title=CLOSE-9 (ANT-5) violated::" in e for e in errors)


def test_bad_output_options_are_one_line_errors(broken: Path, tmp_path: Path) -> None:
    for args in (
        ["--output", "xml"],
        ["--output", "json", "--output", "sarif"],
        ["--output", f"sarif={tmp_path}/no/such/dir/x.sarif"],
        ["--scheduler", "tcp://127.0.0.1:1"],
        ["--engine", "dask", "--scheduler", "tcp://127.0.0.1:1", "--jobs", "2"],
    ):
        result = invoke("--format", "anthropic", str(broken), *args)
        assert result.exit_code == 2, args
        assert "Traceback" not in result.output


# -- the distributed engine on a local cluster ----------------------------------------


def test_dask_engine_on_a_local_cluster_matches_the_local_run(corpus: Path) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        remote = invoke(
            "--format",
            "auto",
            str(corpus),
            "--json",
            "--engine",
            "dask",
            "--scheduler",
            cluster.scheduler_address,
        )
    local = invoke("--format", "auto", str(corpus), "--json")
    assert remote.exit_code == local.exit_code == 1
    assert json.loads(remote.output) == json.loads(local.output)


def _children() -> set[int]:
    """This process's child processes (from /proc: no extra dependency)."""
    me, found = str(os.getpid()), set()
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            found.add(int(stat_file.parent.name))
    return found


def test_dask_engine_without_a_scheduler_starts_and_stops_a_local_cluster(corpus: Path) -> None:
    """No --scheduler: a LocalCluster of --jobs worker processes, gone after."""
    pytest.importorskip("distributed")
    before = _children()
    remote = invoke("--format", "auto", str(corpus), "--json", "--engine", "dask", "--jobs", "2")
    local = invoke("--format", "auto", str(corpus), "--json")
    assert remote.exit_code == local.exit_code == 1, remote.output
    assert json.loads(remote.output) == json.loads(local.output)
    deadline = time.monotonic() + 30
    while _children() - before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _children() - before, "the local cluster's workers outlived the check"


def test_jobs_with_a_scheduler_is_refused_in_one_line(broken: Path) -> None:
    result = invoke(
        *("--format", "anthropic", str(broken), "--engine", "dask"),
        *("--scheduler", "tcp://127.0.0.1:9", "--jobs", "3"),
    )
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "metis: error: --jobs is for the local engine or a local Dask cluster, not with --scheduler"
    ]


def test_dask_engine_with_no_scheduler_there_is_bad_input(
    broken: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("distributed")
    monkeypatch.setenv("METIS_DASK_TIMEOUT", "1")
    result = invoke(
        "--format", "anthropic", str(broken), "--engine", "dask", "--scheduler", "tcp://127.0.0.1:9"
    )
    assert result.exit_code == 2 and "cannot connect" in result.output


def test_coverage_counts_what_the_inputs_exercised_and_names_the_rest(tmp_path: Path) -> None:
    from metis_check import simulate
    from metis_trace import dumps_trace

    trace = tmp_path / "t.jsonl"
    trace.write_text(dumps_trace(*simulate(3)))
    text = invoke(str(trace), "--coverage")
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    assert "coverage over 1 reports" in lines
    counts = dict(line.split()[:2] for line in lines if line.startswith(("TRACE-1 ", "CHILD-4 ")))
    assert int(counts["TRACE-1"]) > 0 and counts["CHILD-4"] == "0"  # one trace is no tree
    never = next(line for line in lines if line.startswith("never checked:"))
    assert "CHILD-4" in never and "TRACE-1" not in never
    assert any(line.startswith("never taken:") for line in lines)
    # With JSON on standard output, the table goes to standard error.
    as_json = invoke(str(trace), "--coverage", "--json")
    assert json.loads(as_json.stdout)["verdict"] == "conforms"
    assert "coverage over 1 reports" in as_json.stderr
