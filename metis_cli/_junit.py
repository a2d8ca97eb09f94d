"""`metis conform --output junit`: JUnit XML that CI tools read and track.

Valid against Jenkins xunit's `junit-10.xsd` (see `junit_report`), and
stable: a case's classname and name hold across runs, working folders,
path spellings and lines inserted above the finding.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from ._transcripts import Run

if TYPE_CHECKING:
    from xml.etree.ElementTree import Element

__all__ = ["junit_report", "where"]


def where(line: int | None, index: int) -> str:
    """A finding's place: its line, or its event where the input has no lines."""
    return f"line {line}" if line is not None else f"event {index}"


def _case(suite: Element, name: str, classname: str, **facts: object) -> Element:
    """A `testcase`; its facts (invariant, rule, file, line) as `key: value`
    lines in its `system-out`, the one place junit-10.xsd leaves for them."""
    from xml.etree import ElementTree as ET

    case = ET.SubElement(suite, "testcase", name=name, classname=classname, time="0")
    lines = [f"{key}: {value}" for key, value in facts.items() if value not in (None, "")]
    if lines:
        ET.SubElement(case, "system-out").text = "\n".join(lines)
    return case


def _properties(suite: Element, **values: object) -> None:
    from xml.etree import ElementTree as ET

    props = ET.SubElement(suite, "properties")
    for key, value in values.items():
        if value not in (None, ""):
            ET.SubElement(props, "property", name=key, value=str(value))


def junit_report(run: Run) -> str:
    """A `testsuites` document: one suite per file, one case per finding.

    Valid against Jenkins xunit's `junit-10.xsd` (jenkinsci/xunit-plugin,
    src/main/resources/org/jenkinsci/plugins/xunit/types/model/xsd/junit-10.xsd;
    pinned in tests/data/junit): `<testsuites>` carries only name, time,
    tests, failures and errors (no `skipped`), a `<testcase>` only name,
    classname, time (no `file` or `line`) and no `<properties>`. So the file's
    facts (file, format, events, verdict) are its suite's `<properties>`,
    and each case's (invariant, provider rule, file, line) are lines of its
    `<system-out>`. Each violation is its own failing case; a file with no
    finding is one passing case.

    CI tracks a case by classname and name (a test's history, "fixed" and
    "new failure"), so both stay the same across runs and unrelated edits:
    the classname is the file's path relative to its git root (else resolved),
    never as typed; the name is the finding's rule with the first 12 digits of
    its SARIF fingerprint (`_sarif_places`: rule, file, the record it is on,
    never the line). The line is in the failure's message and `system-out`.
    """
    from xml.etree import ElementTree as ET

    from ._sarif_places import Places

    places = Places([r.source for r in run.results if r.report is not None])
    root = ET.Element("testsuites", name="metis conform")
    totals: Counter[str] = Counter()
    for result in run.results:
        source = result.source
        stable = places.name(source) if result.report is not None else source
        suite = ET.SubElement(root, "testsuite", name=stable, file=source)
        counts: Counter[str] = Counter()
        report = result.report
        _properties(
            suite,
            file=source,
            verdict=result.status,
            format=report.format if report else None,
            events=report.events if report else None,
            detected=result.detected,
        )

        def name(
            rule_id: str, title: str, line: int | None, message: str, source: str = source
        ) -> str:
            return f"{title} {places.fingerprint(rule_id, source, line, message)[:12]}"

        if report is None:
            error = ET.Element("error", message=result.error, type="bad-input")
            error.text = result.error
            _case(suite, "read", stable, file=source).insert(0, error)
            counts["errors"] += 1
        else:
            for v in report.violations:
                place = where(v.line, v.index)
                failure = ET.Element("failure", message=f"{place}: {v.message}", type=v.invariant)
                failure.text = v.one_line()
                rule_id = f"{v.invariant}/{v.rule}" if v.rule else v.invariant
                _case(
                    suite,
                    name(rule_id, v.cited, v.line, v.message),
                    stable,
                    invariant=v.invariant,
                    rule=v.rule,
                    file=source,
                    line=v.line,
                ).insert(0, failure)
                counts["failures"] += 1
            for u in report.undecided:
                place = where(u.line, u.index)
                case = _case(
                    suite,
                    name(u.status, f"{u.status} ({u.invariant})", u.line, u.message),
                    stable,
                    invariant=u.invariant,
                    status=u.status,
                    file=source,
                    line=u.line,
                )
                if u.status in run.allowed:
                    outcome = ET.Element("skipped", message=f"allowed: {place}: {u.message}")
                    counts["skipped"] += 1
                else:
                    outcome = ET.Element("failure", message=f"{place}: {u.message}", type=u.status)
                    outcome.text = u.one_line()
                    counts["failures"] += 1
                case.insert(0, outcome)
            if not report.violations and not report.undecided:
                _case(suite, "conforms", stable)
        tests = len(suite.findall("testcase"))
        suite.set("tests", str(tests))
        for key in ("failures", "errors", "skipped"):
            suite.set(key, str(counts[key]))
            totals[key] += counts[key]
        totals["tests"] += tests
    for key in ("tests", "failures", "errors"):  # junit-10.xsd has no `skipped` here
        root.set(key, str(totals[key]))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")
