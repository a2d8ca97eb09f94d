"""`metis settings check` over the real-settings corpus (tests/data/settings-corpus/,
provenance and licences in provenance.json; issue 25's "done when"): every
finding names its file and its rule, as the file holds it, and every bypass
witness is confirmed by the reference deriver's matcher of Claude Code's
documented semantics (`metis_check._settings_bypass.confirm`, over
`metis_model._derive`), not only by the search that found it."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from metis_check._settings_bypass import Witness
from metis_check._settings_bypass import bypass_witnesses
from metis_check._settings_bypass import confirm
from metis_cli._main import cli

CORPUS = Path(__file__).resolve().parents[1] / "data" / "settings-corpus"
FILES = [e["file"] for e in json.loads((CORPUS / "provenance.json").read_text())["files"]]
WHERE = re.compile(r"permissions\.(allow|ask|deny)\[(\d+)\]")


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, int, Any, str]]:
    """Each corpus file as its own project's `.claude/settings.json`, checked
    as a user would (no FILE: the hierarchy, under an empty home): the
    settings path, the exit code, the JSON and the text output."""
    home = tmp_path_factory.mktemp("home")
    mp = pytest.MonkeyPatch()
    mp.setenv("HOME", str(home))
    mp.setenv("METIS_MANAGED_SETTINGS_DIRS", str(home / "etc"))
    out = {}
    try:
        for name in FILES:
            root = tmp_path_factory.mktemp(name.removesuffix(".json")).resolve()
            settings = root / ".claude" / "settings.json"
            settings.parent.mkdir()
            shutil.copyfile(CORPUS / name, settings)
            args = ["settings", "check", "--project", str(root)]
            done = CliRunner().invoke(cli, [*args, "--json"])
            text = CliRunner().invoke(cli, args)
            out[name] = (settings, done.exit_code, json.loads(done.stdout), text.stdout)
    finally:
        mp.undo()
    return out


def test_every_finding_names_the_file_and_the_rule_it_holds(
    checked: dict[str, tuple[Path, int, Any, str]],
) -> None:
    kinds: set[str] = set()
    for name, (settings, code, payload, text) in checked.items():
        findings = payload["findings"]
        assert code == (1 if findings else 0), name
        perms = json.loads(settings.read_text())["permissions"]
        for f in findings:
            kinds.add(f["kind"])
            assert f["file"] == str(settings), (name, f)
            if f["where"] == "permissions.additionalDirectories":
                assert f["rule"] in perms["additionalDirectories"], (name, f)
            else:
                match = WHERE.fullmatch(f["where"])
                assert match, (name, f)
                assert perms[match[1]][int(match[2])] == f["rule"], (name, f)
        lines = text.splitlines()
        assert len(lines) == len(findings), name
        for line, f in zip(lines, findings, strict=True):
            assert line.startswith(f"{settings}: {f['where']}: {f['rule']}: {f['kind']}: "), line
    # Not vacuous: the corpus shows four kinds, bypass witnesses among them.
    assert {"never-matches", "bypass", "scope", "duplicate"} <= kinds


def _rules(settings: Path) -> list[tuple[str, str]]:
    perms = json.loads(settings.read_text()).get("permissions", {})
    return [
        (b, t) for b in ("allow", "ask", "deny") for t in perms.get(b, []) if isinstance(t, str)
    ]


def test_every_witness_is_confirmed_by_the_documented_semantics_matcher(
    checked: dict[str, tuple[Path, int, Any, str]],
) -> None:
    total = 0
    for name, (settings, _, payload, _) in checked.items():
        project = str(settings.parent.parent)
        rules = _rules(settings)
        witnesses = bypass_witnesses(rules, project, "/home/nobody")
        for w in witnesses:
            assert confirm(w, rules, project, "/home/nobody") is None, (name, w)
            # It runs the command the deny rule stops, through a form no rule names.
            assert w.command in w.line and not w.line.startswith(w.command), (name, w)
        reported = [f for f in payload["findings"] if f["kind"] == "bypass"]
        assert [f["rule"] for f in reported] == [w.deny for w in witnesses], name
        for f, w in zip(reported, witnesses, strict=True):
            assert (
                repr(w.line) in f["message"]
                and "confirmed by the reference deriver" in f["message"]
            )
            assert "metis's gate" in f["message"], f  # the second confirmation
        total += len(witnesses)
    assert total >= 5  # the corpus has holes to find (7 when this was written)


def test_confirmation_fails_on_what_is_not_a_witness() -> None:
    """The check can fail: each way a candidate can be wrong is refused, with why."""
    rules = [("allow", "Bash(env:*)"), ("deny", "Bash(rm:*)"), ("ask", "Bash(env rm:*)")]
    project, home = "/p", "/h"

    def why(line: str, allow: str = "Bash(env:*)", command: str = "rm build") -> str | None:
        return confirm(Witness("Bash(rm:*)", line, allow, "{}", command), rules, project, home)

    assert why("env rm build") == "Bash(env rm:*) matches the line"  # the ask rule
    ok = [("allow", "Bash(env:*)"), ("deny", "Bash(rm:*)")]
    good = Witness("Bash(rm:*)", "env rm build", "Bash(env:*)", "env {}", "rm build")
    assert confirm(good, ok, project, home) is None
    ok_too = [*ok, ("allow", "Bash(timeout:*)")]
    for line, allow, command, expected in (
        ("env ls && rm build", "Bash(env:*)", "rm build", "more than one command"),
        ("env $(rm build)", "Bash(env:*)", "rm build", "more than one command"),
        ("env ls", "Bash(env:*)", "rm build", "does not hold the denied command"),
        ("env mv build", "Bash(env:*)", "mv build", "does not stop 'mv build'"),
        ("sh -c 'rm build'", "Bash(env:*)", "rm build", "Bash(env:*) does not admit"),
        # A documented wrapper: the deriver strips it and finds the deny.
        ("timeout 5 rm build", "Bash(timeout:*)", "rm build", "Bash(rm:*) matches the line"),
    ):
        bad = Witness("Bash(rm:*)", line, allow, "", command)
        assert expected in (confirm(bad, ok_too, project, home) or ""), bad
