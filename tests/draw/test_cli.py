"""`metis draw`, `metis conform --draw DIR` and `--report FILE.html`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from metis_cli._main import cli
from metis_trace import dumps_trace
from tests.draw._cases import DATA
from tests.draw._cases import cex_path
from tests.draw._cases import transcript_with_a_stray_result
from tests.draw._svg import read_svg
from tests.model.test_spawn_guard_tree import valid_tree


def _run(*args: str) -> tuple[int, bytes, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout_bytes, result.stderr


def test_draw_a_violating_trace_to_stdout_as_svg() -> None:
    code, out, _ = _run("draw", str(cex_path("retry-after-commit")))
    assert code == 1  # drawn, with a divergence
    picture = read_svg(out)
    assert len(picture.violating) == 1 and picture.slice and picture.legend


@pytest.mark.parametrize(
    ("suffix", "magic"), [(".png", b"\x89PNG"), (".html", b"<!DOCTYPE html>"), (".dot", b"digraph")]
)
def test_draw_writes_the_kind_its_out_suffix_names(
    tmp_path: Path, suffix: str, magic: bytes
) -> None:
    out = tmp_path / f"picture{suffix}"
    code, _, err = _run("draw", str(cex_path("exclusive-as-safe")), "--out", str(out))
    assert code == 1 and f"drew {out}" in err
    assert out.read_bytes().startswith(magic)


def test_draw_a_conforming_transcript_exits_0() -> None:
    code, out, _ = _run("draw", str(DATA / "subagent.jsonl"))
    assert code == 0 and read_svg(out).items and not read_svg(out).violating


def test_draw_a_violating_transcript_marks_the_call(tmp_path: Path) -> None:
    text, call_id = transcript_with_a_stray_result()
    session = tmp_path / "session.jsonl"
    session.write_text(text)
    code, out, _ = _run("draw", str(session), "--format", "claude-code")
    assert code == 1
    [bad] = read_svg(out).violating
    assert bad.text[0] == f"call {call_id}"


def _tree_dir(root: Path, depth: int = 1) -> Path:
    tree = valid_tree()
    header, events = tree["a3.jsonl"]
    tree["a3.jsonl"] = (header.model_copy(update={"depth": depth + 1}), events)
    for name, (h, ev) in tree.items():
        path = root / name.removesuffix(".jsonl") / "trace.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text(dumps_trace(h, ev))
    return root


def test_draw_a_run_directory_as_a_tree_of_agents(tmp_path: Path) -> None:
    code, out, _ = _run("draw", str(_tree_dir(tmp_path / "run")))
    assert code == 0
    assert len(read_svg(out).having("cluster", "group", "agent")) == 4


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["draw", "/nonexistent/trace.jsonl"], "/nonexistent/trace.jsonl"),
        (["draw", "TRACE", "--out", "picture.txt"], "--out picture.txt"),
        (["draw", "TRACE", "--limit", "3"], "--limit"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], says: str) -> None:
    args = [str(cex_path("retry-after-commit")) if a == "TRACE" else a for a in args]
    code, out, err = _run(*args)
    assert code == 2 and says in err and not out
    assert "Traceback" not in err


def test_a_broken_trace_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "t.jsonl"
    bad.write_text(cex_path("retry-after-commit").read_text().replace('"seq":3', '"seq":"x"', 1))
    code, _, err = _run("draw", str(bad))
    assert code == 2 and str(bad) in err and len(err.strip().splitlines()) == 1


def test_conform_draws_every_violation_and_writes_the_report(tmp_path: Path) -> None:
    text, _ = transcript_with_a_stray_result()
    (tmp_path / "in").mkdir()
    session = tmp_path / "in" / "session.jsonl"
    session.write_text(text)
    run = _tree_dir(tmp_path / "run", depth=4)
    traces = [str(cex_path(a)) for a in ("retry-after-commit", "exclusive-as-safe")]
    drawings, report = tmp_path / "drawings", tmp_path / "report.html"
    code, out, _ = _run(
        "conform", *traces, str(run), "--draw", str(drawings), "--report", str(report), "--json"
    )
    assert code == 1
    found = json.loads(out)
    expected = sum(len(r["violations"]) for r in found)
    files = sorted(p.name for p in drawings.iterdir())
    assert len(files) == expected and any(f.endswith("-1-RETRY-1.svg") for f in files)
    for name in files:  # each drawing has its violation marked (an event, or an agent)
        picture = read_svg((drawings / name).read_text())
        assert picture.violating or [g for g in picture.having("group") if "violation" in g.classes]
    page = report.read_text()
    assert page.count("class='violation'") == expected
    assert page.count("<svg") == expected
    for invariant in ("RETRY-1", "SCHED-1", "CHILD-5"):
        assert invariant in page
    assert "id='coverage'" in page and "id='summary'" in page and "id='transitions'" in page
    # Self-contained: nothing is fetched (no script, stylesheet, image or frame source).
    assert not re.search(r"<(script|link|img|iframe)\b|\bsrc=|@import|url\(", page)
    # A transcript's report draws it too.
    code, _, _ = _run("conform", str(session), "--format", "claude-code", "--report", str(report))
    assert code == 1 and report.read_text().count("<svg") == 2


def test_conform_draw_into_an_unwritable_place_is_exit_2(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = _run("conform", str(cex_path("retry-after-commit")), "--draw", str(blocker))
    assert code == 2 and "--draw" in err
