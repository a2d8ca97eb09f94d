"""A trace with one very large tool result conforms in seconds (issue 24: a
50 MB result took over 30 s, most of it in the credential scan's
assignment regex tried at every position, a per-character position list and
~60 `needle in text` scans).

The fast paths are checked against their definitions: `_assignment_matches`
finds what `_ASSIGNMENT.finditer` finds, `_unescape`'s piecewise map is the
per-character one, and a large JSON line is still walked for what the
strict reader refuses.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_cli._run import run
from metis_trace import InputError
from metis_trace import decode_json
from metis_trace import find_credentials
from metis_trace._credentials import _escapes
from metis_trace._credentials import _names
from tests.input._cli import run_metis

_TOKENS = [
    *("password", "passwd", "pass", "_key", "key", "api_key", "apikey", "API_KEY", "secret"),
    *("token", "db_url", "DATABASE_URL", "elasticsearch_url", "connection_string", "path"),
    *("_pat", "my.pass", "secretoken", "-dsn", "mongodburi", "auth", "access", "x", "abc123"),
    *("=", ":", " ", "\t", '"', "'", "`", "=>", ":=", "\n", "null", "$X", "İ", "K", "_", "-"),
    *(".", "\\", "\\n", '\\"', "\\u0041", "\\x41", "\\\\"),
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_TOKENS), max_size=30).map("".join))
def test_assignment_starts_find_what_finditer_finds(text: str) -> None:
    expected = [m.span() for m in _names._ASSIGNMENT.finditer(text)]
    assert [m.span() for m in _names._assignment_matches(text)] == expected


def _unescape_by_character(text: str) -> tuple[str, list[int]] | None:
    """The definition: one original position per decoded character (plus the end)."""
    out: list[str] = []
    where: list[int] = []
    i = 0
    while i < len(text):
        m = _escapes._ESCAPE.match(text, i)
        if m is None:
            out.append(text[i])
            where.append(i)
            i += 1
            continue
        e = m.group()
        out.append(_escapes._SIMPLE_ESCAPES[e[1]] if len(e) == 2 else chr(int(e[2:], 16)))
        where.append(i)
        i = m.end()
    if len(out) == len(text):
        return None
    return "".join(out), [*where, len(text)]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["\\", "n", "u", "0", "4", "1", "x", '"', "a", "q"])).map("".join))
def test_the_piecewise_map_is_the_per_character_one(text: str) -> None:
    fast, slow = _escapes._unescape(text), _unescape_by_character(text)
    if fast is None or slow is None:
        assert fast is None and slow is None
        return
    assert fast[0] == slow[0]
    assert [fast[1][i] for i in range(len(fast[0]) + 1)] == slow[1]


def test_a_large_line_is_still_walked_for_a_huge_integer() -> None:
    text = json.dumps({"content": "x" * 200_000, "n": 10**30})
    with pytest.raises(InputError):
        decode_json(text)


def test_a_credential_far_into_a_large_result_is_found() -> None:
    text = json.dumps({"content": "a line of output\n" * 200_000 + "api_key=hunter2hunter2\n"})
    (found,) = find_credentials(text)
    assert found.family == "secret-assignment"
    assert text[found.start : found.end].startswith("hunter2hunter2")


def test_a_trace_with_a_20_mb_result_conforms_in_seconds(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    result = CliRunner().invoke(
        run,
        [
            *("--workspace", str(tmp_path / "ws"), "--mode", "acceptEdits", "--headless", "-q"),
            *("--trace", str(trace)),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.stderr
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    (read,) = [e for e in events if e["kind"] == "result" and e["occ"] == "2.0"]
    read["content"] = "     1\tdef greet(name):\n" * 800_000  # a read-only result: no digest
    big = tmp_path / "big.jsonl"
    big.write_text("".join(json.dumps(e) + "\n" for e in events))
    assert big.stat().st_size > 20_000_000
    started = time.process_time()
    outcome = run_metis(["conform", str(big)])
    spent = time.process_time() - started
    assert outcome.code == 0, outcome
    assert "conforms" in outcome.stdout
    assert spent < 20, f"{spent:.1f} s of CPU (it was over 30 s for 50 MB)"
