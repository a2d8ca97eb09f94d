"""SARIF that GitHub code scanning deduplicates: URIs, fingerprints, category, links.

Validated against the pinned OASIS SARIF 2.1.0 schema (tests/data/sarif, its
README says where from) with format checking on: `uri-reference` is checked
by `rfc3986-validator` (jsonschema's checker for it), so a URI that is not
percent-encoded fails here, as it fails code scanning's upload.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_cli._main import cli
from metis_cli._sarif_rules import SOURCE_URL
from metis_cli._sarif_rules import information_uri
from metis_cli._sarif_rules import spec_section
from metis_model import BY_ID

from .test_conform_ci import BROKEN
from .test_conform_ci import SCHEMA

REPO = Path(__file__).resolve().parents[2]
FORMATS = jsonschema.FormatChecker()


def validate(document: dict[str, Any]) -> None:
    jsonschema.Draft4Validator(SCHEMA, format_checker=FORMATS).validate(document)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository holding the broken body under a name with a space and `%`."""
    root = tmp_path / "repo"
    (root / "sessions").mkdir(parents=True)
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    else:
        (root / ".git").mkdir()
    (root / "sessions" / "my run 100%.json").write_text(BROKEN)
    return root


def sarif(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(
        cli, ["conform", "--format", "anthropic", *args, "--output", "sarif"]
    )
    assert result.exit_code == 1, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    validate(document)
    return document


def prints(document: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [
        (
            r["ruleId"],
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            r["partialFingerprints"]["primaryLocationLineHash"],
        )
        for r in document["runs"][0]["results"]
    ]


def test_the_format_check_is_on_and_can_fail() -> None:
    run: dict[str, Any] = {"tool": {"driver": {"name": "m"}}, "results": []}
    run["originalUriBaseIds"] = {"SRCROOT": {"uri": "my run 100%.json"}}
    bad = {"version": "2.1.0", "runs": [run]}
    with pytest.raises(jsonschema.ValidationError, match="uri-reference"):
        validate(bad)


def test_a_name_with_a_space_and_percent_is_percent_encoded_under_srcroot(repo: Path) -> None:
    document = sarif(str(repo / "sessions" / "my run 100%.json"))
    run = document["runs"][0]
    assert run["originalUriBaseIds"] == {"SRCROOT": {"uri": repo.resolve().as_uri() + "/"}}
    location = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": "sessions/my%20run%20100%25.json", "uriBaseId": "SRCROOT"}


def test_fingerprints_hold_across_folders_spellings_and_a_line_inserted_above(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = "my run 100%.json"
    monkeypatch.chdir(repo)
    first = prints(sarif(f"sessions/{name}"))
    assert len(first) == 2 and len({p for _, _, p in first}) == 2
    assert prints(sarif(f"./sessions/{name}")) == first
    monkeypatch.chdir(repo / "sessions")
    assert prints(sarif(name)) == first
    monkeypatch.chdir(repo.parent)
    assert prints(sarif(str(repo / "sessions" / name))) == first
    # A line above the findings: every line number (and the messages, which cite
    # the earlier call's line) moves; the fingerprints do not.
    path = repo / "sessions" / name
    path.write_text("\n" + BROKEN)
    shifted = sarif(str(path))
    assert prints(shifted) == first
    lines = [
        r["locations"][0]["physicalLocation"]["region"]["startLine"]
        for r in shifted["runs"][0]["results"]
    ]
    assert lines == [34, 40]
    # So does an exchange inserted before them, which moves them by whole records.
    body = json.loads(BROKEN)
    body["messages"][1:1] = [
        {"role": "assistant", "content": "looking"},
        {"role": "user", "content": "go on"},
    ]
    path.write_text(json.dumps(body, indent=1))
    assert prints(sarif(str(path))) == first


def test_the_same_content_twice_is_two_findings(tmp_path: Path) -> None:
    body = json.loads(BROKEN)
    body["messages"].extend(
        [
            {"role": "assistant", "content": [body["messages"][1]["content"][0]]},
            {"role": "user", "content": [body["messages"][2]["content"][0]]},
        ]
    )
    path = tmp_path / "twice.json"
    path.write_text(json.dumps(body, indent=1))
    found = prints(sarif(str(path)))
    reused = [p for rule, _, p in found if rule == "CLOSE-9/ANT-5"]
    assert len(reused) == 2 and len(set(reused)) == 2


def test_sarif_root_and_files_outside_it(repo: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "x y.json"
    outside.parent.mkdir()
    outside.write_text(BROKEN)
    document = sarif(
        str(repo / "sessions" / "my run 100%.json"),
        str(outside),
        "--sarif-root",
        str(repo / "sessions"),
    )
    run = document["runs"][0]
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"].endswith("/repo/sessions/")
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"]
    }
    assert uris == {"my%20run%20100%25.json", outside.resolve().as_uri()}
    assert "%20" in outside.resolve().as_uri()
    missing = CliRunner().invoke(
        cli, ["conform", str(outside), "--sarif-root", str(tmp_path / "nope")]
    )
    assert missing.exit_code == 2 and "Traceback" not in missing.output


def test_category_is_the_automation_id_or_left_out(repo: Path) -> None:
    path = str(repo / "sessions" / "my run 100%.json")
    assert "automationDetails" not in sarif(path)["runs"][0]
    assert sarif(path, "--sarif-category", "transcripts")["runs"][0]["automationDetails"] == {
        "id": "transcripts/"
    }
    assert sarif(path, "--sarif-category", "a/b/")["runs"][0]["automationDetails"] == {"id": "a/b/"}
    empty = CliRunner().invoke(cli, ["conform", path, "--sarif-category", ""])
    assert empty.exit_code == 2 and "--sarif-category" in empty.output


def _slug(heading: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_invariant_links_to_the_section_that_defines_it() -> None:
    for invariant in BY_ID.values():
        page, _, anchor = spec_section(invariant.id).partition("#")
        lines = (REPO / "specs" / page).read_text().splitlines()
        defined = next(i for i, line in enumerate(lines) if f"**{invariant.id}**" in line)
        heading = next(lines[i] for i in range(defined, -1, -1) if lines[i].startswith("#"))
        assert _slug(heading.lstrip("#")) == anchor, invariant.id
    for other in ("open-at-end", "reader-warning", "closure.md#provider-rules"):
        page, _, anchor = (other if "#" in other else spec_section(other)).partition("#")
        headings = [
            _slug(h.lstrip("#"))
            for h in (REPO / "specs" / page).read_text().splitlines()
            if h.startswith("#")
        ]
        assert anchor in headings, other


def _uris(value: Any, key: str = "") -> list[tuple[str, str]]:
    """Every (key, string) of the document that is a URI: under a key ending
    in `uri`/`Uri`, or any string that starts with a scheme."""
    if isinstance(value, dict):
        return [u for k, v in value.items() for u in _uris(v, k)]
    if isinstance(value, list):
        return [u for v in value for u in _uris(v, key)]
    if isinstance(value, str) and (key.lower().endswith("uri") or re.match(r"[a-z]+://", value)):
        return [(key, value)]
    return []


def _settings_sarif(tmp_path: Path) -> dict[str, Any]:
    f = tmp_path / "settings.json"
    f.write_text(json.dumps({"permissions": {"deny": ["Bash(rm:*)"], "allow": ["Bash(env:*)"]}}))
    done = CliRunner().invoke(cli, ["settings", "check", "--output", "sarif", str(f)])
    assert done.exit_code == 1, done.output
    document: dict[str, Any] = json.loads(done.stdout)
    validate(document)
    return document


def test_no_uri_points_at_an_unconfigured_home(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """metis has no public repository: with no METIS_SOURCE_URL, neither
    output names a web address but the schema's, and the help names the spec
    section as a path instead."""
    from metis_cli._sarif import SCHEMA_URI

    monkeypatch.delenv(SOURCE_URL, raising=False)
    for document in (sarif(str(repo / "sessions" / "my run 100%.json")), _settings_sarif(tmp_path)):
        for key, uri in _uris(document):
            assert uri == SCHEMA_URI or uri.startswith("file:///") or "://" not in uri, (key, uri)
        driver = document["runs"][0]["tool"]["driver"]
        assert "informationUri" not in driver
        for rule in driver["rules"]:
            assert "helpUri" not in rule, rule["id"]
            assert rule["help"]["text"] and rule["fullDescription"]["text"]
            assert "`specs/" in rule["help"]["markdown"], rule["id"]
    # Nor does the published metadata: pyproject.toml lists no project URL.
    assert "urls" not in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def test_the_driver_and_every_rule_link_home_when_one_is_configured(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = "https://git.example.org/metis"
    monkeypatch.setenv(SOURCE_URL, home + "/")
    assert information_uri() == home
    driver = sarif(str(repo / "sessions" / "my run 100%.json"))["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == home
    for rule in driver["rules"]:
        assert rule["helpUri"] == f"{home}/blob/main/specs/closure.md#invariants", rule["id"]
        assert f"]({home}/blob/main/specs/" in rule["help"]["markdown"]
    settings_driver = _settings_sarif(tmp_path)["runs"][0]["tool"]["driver"]
    assert settings_driver["informationUri"] == home
    assert {r["helpUri"] for r in settings_driver["rules"]} == {
        f"{home}/blob/main/specs/permissions.md#metis-settings-check"
    }
    # The check can fail: an address that is not https is refused, with a warning.
    for bad in ("http://git.example.org/metis", "git.example.org/metis", "https://"):
        monkeypatch.setenv(SOURCE_URL, bad)
        assert information_uri() is None, bad
        assert "informationUri" not in _settings_sarif(tmp_path)["runs"][0]["tool"]["driver"]


def test_a_session_log_keeps_its_fingerprints_when_a_record_is_added_above(
    tmp_path: Path,
) -> None:
    """JSON Lines: the finding's record is its line; a summary record Claude Code
    writes at the top moves every line, not the fingerprints."""
    from .test_conform_ci import SESSIONS

    lines = (SESSIONS / "tool_heavy.jsonl").read_text().splitlines()
    cut = next(i for i, line in enumerate(lines) if '"tool_use"' in line)
    live = tmp_path / "live session.jsonl"
    live.write_text("\n".join(lines[: cut + 1]) + "\n")

    def undecided() -> tuple[list[tuple[str, str, str]], int]:
        result = CliRunner().invoke(
            cli, ["conform", "--format", "claude-code", str(live), "--output", "sarif"]
        )
        document: dict[str, Any] = json.loads(result.stdout)
        validate(document)
        first = document["runs"][0]["results"][0]
        return prints(document), first["locations"][0]["physicalLocation"]["region"]["startLine"]

    before, line = undecided()
    assert [rule for rule, _, _ in before] == ["open-at-end"]
    summary = {
        "type": "summary",
        "summary": "a title",
        "leafUuid": "00000000-0000-0000-0000-000000000000",
    }
    live.write_text(json.dumps(summary) + "\n" + live.read_text())
    assert undecided() == (before, line + 1)


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.text(
        st.characters(exclude_categories=["Cs"], exclude_characters="/\x00"), min_size=1
    ).filter(lambda n: n not in (".", "..")),
    folder=st.sampled_from(["", "sub dir/", "100%/", "a:b/"]),
)
def test_any_file_name_is_a_valid_uri_reference_that_decodes_back(
    tmp_path: Path, name: str, folder: str
) -> None:
    from urllib.parse import unquote

    from metis_cli._sarif_places import Places

    path = str(tmp_path / folder / name)
    location = Places([path], tmp_path).artifact(path)
    checker = jsonschema.FormatChecker()
    assert checker.conforms(location["uri"], "uri-reference"), location
    assert location["uriBaseId"] == "SRCROOT"
    assert unquote(location["uri"]) == folder + name


def test_a_name_that_is_not_utf8_is_encoded_byte_by_byte(tmp_path: Path) -> None:
    from metis_cli._sarif_places import Places

    path = str(tmp_path / os.fsdecode(b"caf\xe9 %.json"))  # Latin-1 bytes, as on disk
    uri = Places([path], tmp_path).artifact(path)["uri"]
    assert uri == "caf%E9%20%25.json"
    assert jsonschema.FormatChecker().conforms(uri, "uri-reference")
