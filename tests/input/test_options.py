"""Bad option values are one-line usage errors naming the right option (exit 2),
and an `--out` that cannot be written is one line too, with no file left
half-written."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._cli import run_metis


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["prove", "--timeout", "nan"], "--timeout"),
        (["prove", "--timeout", "inf"], "--timeout"),
        (["prove", "--timeout", "-1"], "--timeout"),
        (["prove", "--depth", "0"], "--depth"),
        (["prove", "--depth", "nan"], "--depth"),
        (
            ["counterexample", "--ablate", "no-preflight", "--out", "x", "--max-depth", "0"],
            "--max-depth",
        ),
        (["run", "t", "--workspace", "w", "--agent-timeout", "nan"], "--agent-timeout"),
        (["run", "t", "--workspace", "w", "--agent-timeout", "1e400"], "--agent-timeout"),
        (["run", "t", "--workspace", "w", "--agent-timeout", "0"], "--agent-timeout"),
        (["run", "t", "--workspace", "w", "--max-turns", "0"], "--max-turns"),
        (["run", "t", "--workspace", "w", "--max-turns", "-5"], "--max-turns"),
        (["run", "t", "--workspace", "w", "--max-retries", "-1"], "--max-retries"),
        (["run", "t", "--workspace", "w", "--max-agents", "-1"], "--max-agents"),
        (["run", "t", "--workspace", "w", "--context-window", "0"], "--context-window"),
        (["check", "--runs", "nan"], "--runs"),
        (["demo", "--runs", "0"], "--runs"),
        (
            ["permissions", "check", "--settings", "s", "--tool", "bash", "--input", '{"a": NaN}'],
            "--input",
        ),
        (
            ["permissions", "check", "--settings", "s", "--tool", "bash", "--input", "[1]"],
            "--input",
        ),
    ],
)
def test_a_bad_number_is_a_usage_error_naming_its_option(argv: list[str], option: str) -> None:
    outcome = run_metis(argv)
    assert outcome.code == 2, outcome
    assert len(outcome.error_lines) == 1, outcome.error_lines
    assert option in outcome.error_lines[0], outcome.error_lines
    assert "Traceback" not in outcome.stderr


@pytest.mark.parametrize("place", ["/proc/nope", "/dev/null/x"])
def test_an_unwritable_out_is_one_line_before_any_work(place: str) -> None:
    outcome = run_metis(["counterexample", "--ablate", "no-preflight", "--out", place])
    assert outcome.code == 2
    assert outcome.error_lines == [
        f"metis: error: --out {place}: cannot write there "
        f"({'No such file or directory' if place.startswith('/proc') else 'Not a directory'})"
    ]


def test_out_files_appear_whole_or_not_at_all(tmp_path: Path) -> None:
    out = tmp_path / "cex"
    outcome = run_metis(["counterexample", "--ablate", "no-preflight", "--out", str(out)])
    assert outcome.code == 1  # a counterexample was found and written
    names = sorted(p.name for p in out.iterdir())
    assert "cex_no_preflight.jsonl" in names and "test_cex_no_preflight.py" in names
    assert not [n for n in names if n.startswith(".metis-")]  # no stage or probe left behind
    assert all(f"wrote {out}/" in line for line in outcome.stdout.splitlines() if "wrote" in line)
