"""`metis conform --output sarif`: SARIF 2.1.0, as GitHub code scanning reads it.

The document follows the OASIS schema (`sarif-schema-2.1.0.json`; the tests
validate against the checked-in copy, `uri-reference` formats included) and
GitHub's requirements
(https://docs.github.com/en/code-security/reference/code-scanning/sarif-files/sarif-support):
`$schema`, `version`, one run whose driver lists a rule per reported
invariant (and provider rule) with short and full descriptions and help
naming its spec section (`_sarif_rules.py`; `informationUri` and `helpUri`
only where `METIS_SOURCE_URL` configures a real home, never a made-up one);
results with a message, one physical location relative to `SRCROOT` with a
start line, and `partialFingerprints.primaryLocationLineHash` that stays the
same across working folders, path spellings and line shifts
(`_sarif_places.py`), so code scanning keeps one alert per finding. A file
that could not be read is a `toolExecutionNotification` of the invocation.

`automationDetails.id` is `--sarif-category` (with the `/` the upload action
appends, github/codeql-action src/upload-lib.ts `getAutomationID`), or left
out: the action sets it from its own `category` input only when the run has
none.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import attrs

from ._sarif_places import Places
from ._sarif_rules import information_uri
from ._sarif_rules import rule_descriptor
from ._transcripts import Run

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"


@attrs.frozen
class SarifOptions:
    """`--sarif-root` (the SRCROOT; default: the artifacts' git root) and `--sarif-category`."""

    root: Path | None = None
    category: str | None = None


def sarif_result(
    places: Places,
    rule_id: str,
    level: str,
    message: str,
    source: str,
    line: int | None,
    column: int | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One SARIF result at `source:line[:column]`, placed and fingerprinted by `places`."""
    region = {"startLine": line if line is not None and line >= 1 else 1}
    if column is not None:
        region["startColumn"] = column
    location = {"artifactLocation": places.artifact(source), "region": region}
    fingerprint = places.fingerprint(rule_id, source, line, message)
    return {
        "ruleId": rule_id,
        "level": level,
        "message": {"text": message},
        "locations": [{"physicalLocation": location}],
        "partialFingerprints": {"primaryLocationLineHash": fingerprint},
        "properties": extra,
    }


def sarif_driver(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    """`tool.driver`: metis's name for the run, its version, home and rules."""
    from importlib.metadata import version

    driver: dict[str, Any] = {"name": name, "version": version("metis")}
    if (home := information_uri()) is not None:
        driver["informationUri"] = home
    driver["rules"] = rules
    return driver


def sarif_report(run: Run, options: SarifOptions | None = None) -> str:
    options = options or SarifOptions()
    places = Places([r.source for r in run.results if r.report is not None], options.root)
    rules: dict[str, dict[str, Any]] = {}
    results: list[dict[str, Any]] = []
    notifications: list[dict[str, Any]] = []

    def rule(rule_id: str, invariant: str, provider_rule: str = "") -> str:
        if rule_id not in rules:
            rules[rule_id] = rule_descriptor(rule_id, invariant, provider_rule)
        return rule_id

    for result in run.results:
        report, source = result.report, result.source
        if report is None:
            notifications.append({"level": "error", "message": {"text": result.error}})
            continue
        for v in report.violations:
            rid = rule(f"{v.invariant}/{v.rule}" if v.rule else v.invariant, v.invariant, v.rule)
            results.append(
                sarif_result(places, rid, "error", v.message, source, v.line, invariant=v.invariant)
            )
        for u in report.undecided:
            rid = rule(u.status, u.status)
            level = "note" if u.status in run.allowed else "warning"
            results.append(
                sarif_result(places, rid, level, u.message, source, u.line, invariant=u.invariant)
            )
        for note in report.notes:
            rid = rule("reader-warning", "reader-warning")
            results.append(sarif_result(places, rid, "note", note.message, source, note.line))
    driver = sarif_driver("metis", list(rules.values()))
    sarif_run: dict[str, Any] = {"tool": {"driver": driver}}
    if places.base_ids():
        sarif_run["originalUriBaseIds"] = places.base_ids()
    if options.category:
        category = options.category
        sarif_run["automationDetails"] = {
            "id": category if category.endswith("/") else category + "/"
        }
    sarif_run["invocations"] = [
        {
            "executionSuccessful": not notifications,
            "toolExecutionNotifications": notifications,
            "workingDirectory": {"uri": Path(os.getcwd()).as_uri()},
        }
    ]
    sarif_run["results"] = results
    document = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [sarif_run]}
    return json.dumps(document, indent=2)
