"""`metis conform --output junit` is valid against Jenkins xunit's `junit-10.xsd`.

The schema is pinned under tests/data/junit (provenance and licence in the
README there) and checked with `xmlschema`, no network. Every kind of case is
covered: violations, a file that cannot be read, an undecided check failing
and allowed (skipped), and a file that conforms.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
import xmlschema
from click.testing import CliRunner

from metis_cli._main import cli

from .test_conform_ci import BROKEN
from .test_conform_ci import SESSIONS
from .test_conform_ci import corpus

__all__ = ["corpus"]  # the fixture, used by name below

XSD = Path(__file__).resolve().parents[2] / "tests" / "data" / "junit" / "junit-10.xsd"


@pytest.fixture(scope="module")
def schema() -> xmlschema.XMLSchema:
    return xmlschema.XMLSchema(str(XSD))


def junit(*args: str) -> str:
    result = CliRunner().invoke(cli, ["conform", *args, "--output", "junit"])
    assert result.exit_code in (0, 1, 2) and "Traceback" not in result.output
    return result.stdout


def test_every_kind_of_case_validates(
    schema: xmlschema.XMLSchema, corpus: Path, tmp_path: Path
) -> None:
    (corpus / "junk.json").write_text("[1,")
    for args in (
        ["--format", "auto", str(corpus)],  # violations, undecided, conforming, unreadable
        ["--format", "claude-code", str(corpus / "live.jsonl"), "--allow", "open-at-end"],
        ["--format", "claude-code", str(SESSIONS / "short.jsonl")],
    ):
        document = junit(*args)
        errors = [str(e.reason) for e in schema.iter_errors(document)]
        assert errors == [], (args, errors)
    root = ET.fromstring(junit("--format", "auto", str(corpus)))
    outcomes = {child.tag for case in root.iter("testcase") for child in case}
    assert {"failure", "error", "system-out"} <= outcomes


def test_the_facts_are_suite_properties_and_case_output(
    schema: xmlschema.XMLSchema, tmp_path: Path
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text(BROKEN)
    root = ET.fromstring(junit("--format", "anthropic", str(broken)))
    suite = root.find("testsuite")
    assert suite is not None
    props = {p.get("name"): p.get("value") for p in suite.iterfind("properties/property")}
    assert props == {
        "file": str(broken),
        "verdict": "violates",
        "format": "anthropic",
        "events": "5",
    }
    for case in suite.iter("testcase"):
        assert set(case.attrib) == {"name", "classname", "time"}
        assert "invariant: CLOSE-" in (case.findtext("system-out") or "")


def test_the_schema_refuses_what_metis_used_to_write(schema: xmlschema.XMLSchema) -> None:
    """The check can fail: each of the three shapes junit-10.xsd rejects."""
    for bad in (
        '<testsuites skipped="0"/>',
        '<testsuites><testsuite name="s" tests="1" failures="0" errors="0">'
        '<testcase name="c" file="f" line="3"/></testsuite></testsuites>',
        '<testsuites><testsuite name="s" tests="1" failures="0" errors="0">'
        '<testcase name="c"><properties/></testcase></testsuite></testsuites>',
    ):
        assert not schema.is_valid(bad), bad


def _cases(*args: str) -> list[tuple[str, str, str]]:
    """(classname, name, failure message) of every case, in order."""
    root = ET.fromstring(junit(*args))
    return [
        (c.get("classname", ""), c.get("name", ""), c.find("failure").get("message", ""))  # type: ignore[union-attr]
        for c in root.iter("testcase")
    ]


def test_case_names_hold_across_folders_and_a_line_inserted_above(
    schema: xmlschema.XMLSchema, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CI tracks a case by classname and name: the same finding keeps both
    when metis runs from another folder, with another spelling of the path,
    or after a line is inserted above it; the line is in the message."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sessions").mkdir()
    path = repo / "sessions" / "run 1.json"
    path.write_text(BROKEN)
    monkeypatch.chdir(repo)
    first = _cases("--format", "anthropic", "sessions/run 1.json")
    assert len(first) == 2 and len({name for _, name, _ in first}) == 2
    for classname, name, message in first:
        assert classname == "sessions/run 1.json"
        assert not re.search(r"\bline\b|\d+:", name) and str(repo) not in name
        assert re.match(r"line \d+: ", message), message
    keys = [(c, n) for c, n, _ in first]
    monkeypatch.chdir(repo / "sessions")
    assert [(c, n) for c, n, _ in _cases("--format", "anthropic", "./run 1.json")] == keys
    monkeypatch.chdir(tmp_path)
    assert [(c, n) for c, n, _ in _cases("--format", "anthropic", str(path))] == keys
    path.write_text("\n" + BROKEN)  # every line moves
    shifted = _cases("--format", "anthropic", "repo/sessions/run 1.json")
    assert [(c, n) for c, n, _ in shifted] == keys
    assert [m for _, _, m in shifted] != [m for _, _, m in first]  # the lines did move
    assert schema.is_valid(junit("--format", "anthropic", str(path)))


def test_the_name_is_the_findings_identity_not_its_rule_alone(tmp_path: Path) -> None:
    """Two findings of one rule on different calls are two names (the check can
    fail: a name made of the rule alone would merge them)."""
    body = json.loads(BROKEN)
    body["messages"].extend(
        [
            {"role": "assistant", "content": [{**body["messages"][1]["content"][0], "id": "c"}]},
            {"role": "user", "content": "and?"},
        ]
    )
    path = tmp_path / "two.json"
    path.write_text(json.dumps(body, indent=1))
    names = [n for _, n, _ in _cases("--format", "anthropic", str(path))]
    unanswered = [n for n in names if n.startswith("CLOSE-2")]
    assert len(unanswered) == 2 and len(set(unanswered)) == 2, names
