"""`metis conform --output junit` is valid against Jenkins xunit's `junit-10.xsd`.

The schema is pinned under tests/data/junit (provenance and licence in the
README there) and checked with `xmlschema`, no network. Every kind of case is
covered: violations, a file that cannot be read, an undecided check failing
and allowed (skipped), and a file that conforms.
"""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
import xmlschema
from click.testing import CliRunner

from metis_cli._main import cli

from .test_conform_ci import BROKEN, SESSIONS, corpus

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
