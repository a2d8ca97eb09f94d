"""`metis conform --output sarif`: SARIF 2.1.0, as GitHub code scanning reads it.

The document follows the OASIS schema (`sarif-schema-2.1.0.json`; the tests
validate against the checked-in copy) and GitHub's requirements
(https://docs.github.com/en/code-security/reference/code-scanning/sarif-files/sarif-support):
`$schema`, `version`, one run whose driver lists a rule per reported
invariant (and provider rule) with short and full descriptions and help,
results with a message, one physical location with a start line, and a
stable `partialFingerprints.primaryLocationLineHash`. A file that could not
be read is a `toolExecutionNotification` of the invocation.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from metis_model import BY_ID

from ._reports import Run

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"

_UNDECIDED_HELP = {
    "open-at-end": "The input ends on a call whose result is not written and nothing was sent "
    "after it: the session may be live, or cut. Allow it with --allow open-at-end.",
    "outside-slice": "The input starts in the middle of a session and a result there answers a "
    "call in an earlier file. Allow it with --allow outside-slice.",
}


def _uri(source: str) -> str:
    path = Path(source)
    if source == "-":
        return "stdin"
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.resolve().as_uri()


def _rule(rule_id: str, invariant: str, provider_rule: str) -> dict[str, Any]:
    from metis_check.transcripts import BY_RULE

    statement = BY_ID[invariant].statement if invariant in BY_ID else invariant
    full, help_text, uri = statement, statement, ""
    if provider_rule in BY_RULE:
        rule = BY_RULE[provider_rule]
        full = f"{statement} Provider rule {rule.id} ({rule.basis}): {rule.statement}"
        help_text = f"{full} Sources: {', '.join(rule.sources)}"
        uri = rule.sources[0]
    elif invariant in _UNDECIDED_HELP:
        full = help_text = _UNDECIDED_HELP[invariant]
    spec_page = BY_ID[invariant].spec if invariant in BY_ID else "closure.md"
    descriptor: dict[str, Any] = {
        "id": rule_id,
        "name": rule_id.replace("/", "_").replace("-", "_"),
        "shortDescription": {"text": statement[:1000]},
        "fullDescription": {"text": full},
        "help": {"text": help_text, "markdown": f"{help_text}\n\nSee `specs/{spec_page}`."},
        "properties": {"tags": ["metis", invariant], "precision": "very-high"},
    }
    if uri.startswith("https://"):
        descriptor["helpUri"] = uri
    return descriptor


def _fingerprint(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:32]


def _result(
    rule_id: str, level: str, message: str, source: str, line: int | None, **extra: Any
) -> dict[str, Any]:
    region = {"startLine": line if line is not None and line >= 1 else 1}
    return {
        "ruleId": rule_id,
        "level": level,
        "message": {"text": message},
        "locations": [
            {"physicalLocation": {"artifactLocation": {"uri": _uri(source)}, "region": region}}
        ],
        "partialFingerprints": {"primaryLocationLineHash": _fingerprint(rule_id, source, message)},
        "properties": extra,
    }


def sarif_report(run: Run) -> str:
    from importlib.metadata import version

    rules: dict[str, dict[str, Any]] = {}
    results: list[dict[str, Any]] = []
    notifications: list[dict[str, Any]] = []

    def rule(rule_id: str, invariant: str, provider_rule: str = "") -> str:
        if rule_id not in rules:
            rules[rule_id] = _rule(rule_id, invariant, provider_rule)
        return rule_id

    for result in run.results:
        report = result.report
        if report is None:
            notifications.append({"level": "error", "message": {"text": result.error}})
            continue
        for v in report.violations:
            rid = rule(f"{v.invariant}/{v.rule}" if v.rule else v.invariant, v.invariant, v.rule)
            results.append(
                _result(rid, "error", v.message, result.source, v.line, invariant=v.invariant)
            )
        for u in report.undecided:
            rid = rule(u.status, u.status)
            level = "note" if u.status in run.allowed else "warning"
            results.append(
                _result(rid, level, u.message, result.source, u.line, invariant=u.invariant)
            )
        for note in report.notes:
            rid = rule("reader-warning", "reader-warning")
            rules[rid]["shortDescription"] = {"text": "The reader repaired or skipped part of it."}
            results.append(_result(rid, "note", note.message, result.source, note.line))
    document = {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "metis",
                        "version": version("metis"),
                        "rules": list(rules.values()),
                    }
                },
                "automationDetails": {"id": "metis-conform/"},
                "invocations": [
                    {
                        "executionSuccessful": not notifications,
                        "toolExecutionNotifications": notifications,
                        "workingDirectory": {"uri": Path(os.getcwd()).as_uri()},
                    }
                ],
                "results": results,
            }
        ],
    }
    return json.dumps(document, indent=2)
