"""The runtime's search tools hide what the gate would not let a Read open
(issue 26): Claude Code's Read deny rules "apply to ... the built-in tools
that read files" and a deny "hides matching files from discovery and
search" (https://code.claude.com/docs/en/permissions). metis's grep, glob
and ls leave out, and never read, every file whose Read decision is not
allow (`Gate.hides`): a Read deny or ask rule, a secret-looking file.
Real files in a temporary workspace, the real gate, the real tools."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from metis_runtime.permissions import Gate
from metis_runtime.permissions import Policy
from metis_runtime.providers import TextBlock
from metis_runtime.providers import ToolUseBlock
from metis_runtime.tools import GlobTool
from metis_runtime.tools import GrepTool
from metis_runtime.tools import JobManager
from metis_runtime.tools import LsTool
from metis_runtime.tools import ToolContext
from metis_runtime.tools._search import search
from metis_trace import Decision
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import Source
from metis_trace import ToolKind
from tests.runtime.test_loop_support import results_by_occ
from tests.runtime.test_loop_support import run_loop

SECRET = "TOKEN=sekret-4f2a9"


def _workspace(root: Path) -> Path:
    ws = root / "ws"
    for d in ("src", "config", "private", "docs"):
        (ws / d).mkdir(parents=True)
    (ws / ".env").write_text(SECRET + "\n")  # secret-looking: a Read asks
    (ws / "config" / ".env").write_text(SECRET + "\n")
    (ws / "private" / "notes.txt").write_text(SECRET + " (private)\n")  # a Read deny rule
    (ws / "docs" / "draft.md").write_text(SECRET + " (draft)\n")  # a Read ask rule
    (ws / "src" / "app.py").write_text(f"# {SECRET} is read from the environment\n")
    (ws / "README.md").write_text("TOKEN= goes in .env\n")
    return Path(os.path.realpath(ws))


def _gate(ws: Path, mode: Mode = Mode.DEFAULT) -> Gate:
    policy = Policy()
    policy.add(Source.PROJECT, RuleBehavior.DENY, "Read(./.env)", base=ws)
    policy.add(Source.PROJECT, RuleBehavior.DENY, "Read(./private/**)", base=ws)
    policy.add(Source.PROJECT, RuleBehavior.ASK, "Read(./docs/draft.md)", base=ws)
    return Gate(policy, mode, ws, Route.HEADLESS, search_hides_denied=True)


def _ctx(ws: Path, gate: Gate | None) -> ToolContext:
    return ToolContext(ws, {}, JobManager(), hidden=gate.hides if gate is not None else None)


def _run(tool: Any, input: dict[str, Any], ctx: ToolContext) -> str:
    return str(asyncio.run(tool.run(input, ctx)).content)


HIDDEN = (".env", "config/.env", "private/notes.txt", "docs/draft.md")
SHOWN = ("src/app.py", "README.md")


@pytest.mark.parametrize("no_ignore", [False, True])
def test_grep_never_shows_a_denied_file_or_its_contents(tmp_path: Path, no_ignore: bool) -> None:
    ws = _workspace(tmp_path)
    out = _run(GrepTool(), {"pattern": "TOKEN", "no_ignore": no_ignore}, _ctx(ws, _gate(ws)))
    assert "sekret" in out and "src/app.py:1:" in out and "README.md:1:" in out
    for rel in HIDDEN:
        assert f"{rel}:" not in out, out
    assert "(private)" not in out and "(draft)" not in out
    assert out.count("sekret") == 1  # only app.py's line


def test_the_same_search_without_the_gate_finds_them(tmp_path: Path) -> None:
    """The check can fail: with nothing hidden, grep reads every file."""
    ws = _workspace(tmp_path)
    out = _run(GrepTool(), {"pattern": "TOKEN"}, _ctx(ws, None))
    for rel in HIDDEN:
        assert f"{rel}:1:" in out, out


def test_glob_and_ls_list_what_a_read_may_open(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    gate = _gate(ws)
    ctx = _ctx(ws, gate)
    listed = set(_run(GlobTool(), {"pattern": "**/*"}, ctx).splitlines())
    files = {p.relative_to(ws).as_posix() for p in ws.rglob("*") if p.is_file()}
    for rel in files:  # the tool's answer is the gate's Read decision, file by file
        allowed = gate.decide("read", {"path": str(ws / rel)}, ToolKind.READ_ONLY, (ws / rel,))
        assert (rel in listed) is (allowed.decision is Decision.ALLOW), rel
    assert set(SHOWN) <= listed and not set(HIDDEN) & listed
    assert ".env" in _run(GlobTool(), {"pattern": "**/*"}, _ctx(ws, None))
    top = _run(LsTool(), {}, ctx).splitlines()
    assert "README.md" in top and "src/" in top and ".env" not in top
    assert _run(LsTool(), {"path": "config"}, ctx) == "[empty directory]"


def test_a_file_that_appears_after_the_list_is_not_read(tmp_path: Path) -> None:
    """The worker reads only the files the gate was asked about (`only`)."""
    ws = _workspace(tmp_path)
    request: Any = {
        "pattern": "TOKEN", "base": str(ws), "glob": None, "shown_base": ".",
        "max_matches": 100, "max_line": 500, "max_file_bytes": 1 << 20, "timeout_s": 10.0,
        "respect_ignore": True, "only": list(SHOWN),
    }  # fmt: skip
    (ws / "late.txt").write_text(SECRET + "\n")
    hits, _ = search(request, linear_only=True)
    assert sorted(h.split(":")[0] for h in hits) == sorted(SHOWN)


def test_a_search_above_a_denied_file_is_allowed_and_one_at_it_is_not(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    gate = _gate(ws)
    for tool in ("grep", "glob", "ls"):
        above = gate.decide(tool, {"path": str(ws)}, ToolKind.READ_ONLY, (ws,))
        assert above.decision is Decision.ALLOW, tool
        for denied in (ws / "private" / "notes.txt", ws / "private"):  # every entry denied
            at = gate.decide(tool, {"path": str(denied)}, ToolKind.READ_ONLY, (denied,))
            assert at.decision is Decision.DENY, (tool, denied)
        part = gate.decide(tool, {"path": str(ws / "docs")}, ToolKind.READ_ONLY, (ws / "docs",))
        assert part.decision is Decision.ALLOW  # one entry asks: that one is hidden
    strict = Gate(gate.policy, Mode.DEFAULT, ws, Route.HEADLESS)  # tools that do not hide
    assert strict.decide("grep", {}, ToolKind.READ_ONLY, (ws,)).decision is Decision.DENY


def test_the_loop_gives_its_tools_the_gate(tmp_path: Path) -> None:
    """Through the agent loop: the gate's `hides` reaches grep, glob and ls."""
    ws = _workspace(tmp_path)
    script = [
        [
            ToolUseBlock("g", "grep", {"pattern": "TOKEN"}),
            ToolUseBlock("b", "glob", {"pattern": "**/*.env"}),
            ToolUseBlock("l", "ls", {}),
        ],
        [TextBlock("done")],
    ]
    run = run_loop(script, tmp_path, gate=_gate(ws), mode=Mode.DEFAULT, route=Route.HEADLESS)
    results = results_by_occ(run.events)
    assert [status for status, _ in results.values()] == ["ok"] * 3
    grep, glob, ls = (content for _, content in results.values())
    shown = sorted(line.split(":")[0] for line in grep.splitlines())  # the trace redacts the text
    assert shown == ["README.md", "src/app.py"]
    assert glob == "[no matches]"
    assert ".env" not in ls.splitlines() and "README.md" in ls.splitlines()
