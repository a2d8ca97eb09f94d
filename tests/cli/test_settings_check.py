"""`metis settings check` (issue 25): shadowed,
duplicate and never-matching rules and scope notes, each naming the file and
the rule; exit 0 clean, 1 findings, 2 unreadable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from metis_cli._main import cli


def _check(*args: str) -> tuple[int, Any]:
    done = CliRunner().invoke(cli, ["settings", "check", "--json", *args])
    return done.exit_code, json.loads(done.stdout) if done.stdout.strip() else done.output


def _write(path: Path, permissions: dict[str, Any]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": permissions}))
    return str(path)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("METIS_MANAGED_SETTINGS_DIRS", str(tmp_path / "etc"))
    (tmp_path / "proj").mkdir()
    return tmp_path / "proj"


def test_findings_name_the_file_and_the_rule(project: Path) -> None:
    shared = _write(
        project / ".claude" / "settings.json",
        {
            "allow": [
                "Bash(git push:*)",
                "Read(./secrets/k.txt)",
                "Write(src/**)",
                "Edit(.git/**)",
            ],
            "ask": ["Bash(git:*)"],
            "deny": ["Read(./secrets/**)", "Bash(rm:*)"],
            "additionalDirectories": ["../elsewhere"],
        },
    )
    local = _write(
        project / ".claude" / "settings.local.json",
        {"allow": ["Bash(npm run test)"], "deny": ["Bash(rm:*)", "Nope("]},
    )
    code, out = _check("--project", str(project))
    assert code == 1
    got = {(f["kind"], f["file"], f["where"], f["rule"]) for f in out["findings"]}
    assert got == {
        ("shadowed", shared, "permissions.allow[0]", "Bash(git push:*)"),
        ("shadowed", shared, "permissions.allow[1]", "Read(./secrets/k.txt)"),
        ("never-matches", shared, "permissions.allow[2]", "Write(src/**)"),
        ("scope", shared, "permissions.allow[3]", "Edit(.git/**)"),
        ("scope", shared, "permissions.additionalDirectories", "../elsewhere"),
        ("duplicate", local, "permissions.deny[0]", "Bash(rm:*)"),
        ("never-matches", local, "permissions.deny[1]", "Nope("),
    }
    (dup,) = [f for f in out["findings"] if f["kind"] == "duplicate"]
    assert f"{shared}: permissions.deny[1]" in dup["message"]


def test_what_is_not_proved_is_not_claimed(project: Path) -> None:
    """A wider allow under a narrower deny is not shadowed; nor is an allow
    whose head holds a wildcard."""
    f = _write(
        project / "ci.json",
        {
            "allow": ["Bash(git:*)", "Bash(npm * test)", "Read(src/**)"],
            "deny": ["Bash(git push:*)", "Read(src/a.py)"],
        },
    )
    assert _check(f, "--project", str(project)) == (0, {"files": [f], "findings": []})


def test_an_unreadable_file_is_one_line_and_exit_2(project: Path) -> None:
    done = CliRunner().invoke(cli, ["settings", "check", str(project / "missing.json")])
    assert done.exit_code == 2 and "missing.json" in done.output
    bad = project / "bad.json"
    bad.write_text("{")
    done = CliRunner().invoke(cli, ["settings", "check", str(bad)])
    assert done.exit_code == 2 and "bad.json" in done.output and "Traceback" not in done.output


def test_sarif_points_at_the_rules_line_and_column(project: Path) -> None:
    import jsonschema

    schema_path = Path(__file__).parents[1] / "data" / "sarif" / "sarif-schema-2.1.0.json"
    f = project / ".claude" / "settings.json"
    f.parent.mkdir(parents=True)
    f.write_text(
        '{\n  "permissions": {\n    "deny": ["Bash(rm:*)"],\n'
        '    "allow": [\n      "Bash(ls:*)",\n      "Bash(rm -rf:*)"\n    ]\n  }\n}\n'
    )
    done = CliRunner().invoke(cli, ["settings", "check", "--output", "sarif", str(f)])
    assert done.exit_code == 1, done.output
    sarif = json.loads(done.stdout)
    jsonschema.validate(sarif, json.loads(schema_path.read_text()))
    (result,) = sarif["runs"][0]["results"]
    assert result["ruleId"] == "settings/shadowed"
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (6, 7)


def test_sarif_is_the_conform_writers_relative_uris_and_stable_fingerprints(
    project: Path,
) -> None:
    """The same SARIF writer as `metis conform` (`_sarif_places`): a URI
    relative to SRCROOT passes the schema's uri-reference format, and a line
    inserted above the rule keeps its fingerprint."""
    import jsonschema

    schema_path = Path(__file__).parents[1] / "data" / "sarif" / "sarif-schema-2.1.0.json"
    f = project / ".claude" / "settings.json"
    f.parent.mkdir(parents=True)
    body = (
        '  "permissions": {\n    "deny": ["Bash(rm:*)"],\n    "allow": ["Bash(rm -rf:*)"]\n  }\n}\n'
    )

    def run() -> dict[str, Any]:
        done = CliRunner().invoke(
            cli, ["settings", "check", "--output", "sarif", "--project", str(project), str(f)]
        )
        assert done.exit_code == 1, done.output
        sarif: dict[str, Any] = json.loads(done.stdout)
        validator = jsonschema.Draft4Validator(
            json.loads(schema_path.read_text()), format_checker=jsonschema.FormatChecker()
        )
        validator.validate(sarif)
        return sarif

    f.write_text("{\n" + body)
    first = run()["runs"][0]["results"][0]
    f.write_text('{\n  "$comment": "a line above",\n' + body)
    again = run()["runs"][0]["results"][0]
    assert first["partialFingerprints"] == again["partialFingerprints"]
    assert (
        first["locations"][0]["physicalLocation"]["region"]["startLine"] + 1
        == again["locations"][0]["physicalLocation"]["region"]["startLine"]
    )


def test_bypass_witnesses_are_confirmed_by_both_matchers(project: Path) -> None:
    """A deny rule on Bash, an allow on a runner Claude Code does not strip:
    the witness runs the denied command through it; metis's gate denies it."""
    f = _write(
        project / ".claude" / "settings.json",
        {
            "allow": ["Bash(python3:*)", "Bash(git status)"],
            "deny": ["Bash(rm:*)", "Bash(git push)"],
        },
    )
    code, out = _check("--project", str(project))
    assert code == 1
    found = [x for x in out["findings"] if x["kind"] == "bypass"]
    assert [x["rule"] for x in found] == ["Bash(rm:*)", "Bash(git push)"]
    w = found[0]
    assert (w["file"], w["where"]) == (f, "permissions.deny[0]")
    assert "python3 -c" in w["message"] and "rm build" in w["message"]
    assert "Bash(python3:*) allows it" in w["message"] and "says deny" in w["message"]


def test_no_witness_without_an_allow_that_admits_one(project: Path) -> None:
    f = _write(project / "ci.json", {"allow": ["Bash(git status)"], "deny": ["Bash(rm:*)"]})
    assert _check(f, "--project", str(project)) == (0, {"files": [f], "findings": []})
