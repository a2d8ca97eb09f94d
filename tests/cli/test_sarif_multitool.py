"""Microsoft's SARIF Multitool (`Sarif.Multitool validate`, the SARIF and
GitHub rule kinds) on both SARIF outputs: `metis conform` and `metis settings
check`, with no home configured and with one.

Marked `multitool` (deselected by default): `make multitool` installs npm's
`@microsoft/sarif-multitool` (5.7.0, MIT; its Linux package ships the
self-contained .NET binary) under `.venv/sarif-multitool` and runs these.
`METIS_SARIF_MULTITOOL` names another binary. The old output had SARIF1002
(URIs not RFC 3986); what may remain is style notes, and, with no
`METIS_SOURCE_URL`, SARIF2005's warning that the driver has no
`informationUri`: metis has no public home, and a made-up one is worse.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from metis_cli._main import cli
from metis_cli._sarif_rules import SOURCE_URL

from .test_conform_ci import BROKEN

pytestmark = pytest.mark.multitool

ROOT = Path(__file__).resolve().parents[2]
INSTALLED = (
    ROOT / ".venv/sarif-multitool/node_modules/@microsoft/sarif-multitool-linux/Sarif.Multitool"
)


def _binary() -> str:
    named = os.environ.get("METIS_SARIF_MULTITOOL") or str(INSTALLED)
    if not os.access(named, os.X_OK):
        pytest.skip(f"no SARIF Multitool at {named} (make multitool installs it from npm)")
    return named


def _validate(document: str, tmp_path: Path) -> list[tuple[str, str, str, list[str]]]:
    """The Multitool's findings on `document`: (rule, level, message id, arguments)."""
    out, log = tmp_path / "metis.sarif", tmp_path / "validation.sarif"
    out.write_text(document)
    done = subprocess.run(
        [
            *(_binary(), "validate", str(out), "--output", str(log), "--log", "ForceOverwrite"),
            *("--rule-kind", "Gh;Sarif", "--level", "Error;Warning;Note"),
        ],
        capture_output=True,
        timeout=180,
        check=False,
        env={**os.environ, "DOTNET_CLI_TELEMETRY_OPTOUT": "1"},
    )
    assert log.is_file(), done.stdout.decode() + done.stderr.decode()
    results = json.loads(log.read_text())["runs"][0].get("results", [])
    return [
        (r["ruleId"], r.get("level", "warning"), r["message"]["id"], r["message"]["arguments"])
        for r in results
    ]


def _outputs(tmp_path: Path) -> dict[str, str]:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sessions").mkdir()
    (repo / "sessions" / "my run 100%.json").write_text(BROKEN)
    settings = repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(
        json.dumps(
            {"permissions": {"deny": ["Bash(rm:*)"], "allow": ["Bash(env:*)", "Write(src/**)"]}},
            indent=2,
        )
    )
    runs: dict[str, list[str]] = {
        "conform": [
            "conform",
            "--format",
            "anthropic",
            str(repo / "sessions" / "my run 100%.json"),
        ],
        "settings check": ["settings", "check", "--project", str(repo), str(settings)],
    }
    out = {}
    for name, args in runs.items():
        done = CliRunner().invoke(cli, [*args, "--output", "sarif"])
        assert done.exit_code == 1, done.output
        out[name] = done.stdout
    return out


@pytest.mark.parametrize("home", [None, "https://git.example.org/metis"])
def test_the_multitool_finds_no_error_and_no_warning_but_the_missing_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, home: str | None
) -> None:
    if home is None:
        monkeypatch.delenv(SOURCE_URL, raising=False)
    else:
        monkeypatch.setenv(SOURCE_URL, home)
    for name, document in _outputs(tmp_path).items():
        found = _validate(document, tmp_path)
        serious = [(rule, args) for rule, level, _, args in found if level != "note"]
        driver = json.loads(document)["runs"][0]["tool"]["driver"]["name"]
        expected = [] if home else [("SARIF2005", ["runs[0].tool.driver", driver])]
        assert serious == expected, name
        # SARIF2012 (rule metadata): no friendly-name note (names are Pascal case); the
        # note that a rule has no helpUri only when no home is configured.
        notes = {why for rule, _, why, _ in found if rule == "SARIF2012"}
        assert notes == (set() if home else {"Note_ProvideHelpUri"}), name


def test_the_multitool_can_fail(tmp_path: Path) -> None:
    """A URI that is not percent-encoded, as metis once wrote it: SARIF1002."""
    document = json.loads(_outputs(tmp_path)["conform"])
    location = document["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    location["artifactLocation"]["uri"] = "sessions/my run 100%.json"
    found = _validate(json.dumps(document), tmp_path)
    assert "SARIF1002" in {rule for rule, level, _, _ in found if level == "error"}
