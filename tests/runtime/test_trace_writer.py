"""TraceWriter (whole lines, seq and t across reopening), redaction, graph export."""

from __future__ import annotations

import io
import json
from pathlib import Path

import networkx as nx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from metis_check import trace_dot
from metis_runtime import REDACTED
from metis_runtime import Redactor
from metis_runtime import TraceWriteError
from metis_runtime import TraceWriter
from metis_runtime import make_header
from metis_runtime import trace_graph
from metis_runtime.providers import TextBlock
from metis_runtime.providers import ToolUseBlock
from metis_trace import Mode
from metis_trace import read_trace
from tests.runtime.test_loop_support import of_kind
from tests.runtime.test_loop_support import run_loop


class _Clock:
    def __init__(self, *values: float) -> None:
        self.values = list(values)

    def __call__(self) -> float:
        return self.values.pop(0) if len(self.values) > 1 else self.values[0]


def test_lines_are_whole_json_with_consecutive_seq(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with TraceWriter(path, make_header(mode=Mode.DEFAULT, tools=("ls",))) as w:
        assert w.emit("turn_start", (), turn=1) == 0
        assert w.emit("request", (0,), turn=1) == 1
    text = path.read_text()
    assert text.endswith("\n")
    lines = text.splitlines()
    assert json.loads(lines[0])["kind"] == "header"
    _, events = read_trace(io.StringIO(text))
    assert [e.seq for e in events] == [0, 1] and events[1].causes == (0,)


def test_reopening_continues_seq_and_time_and_drops_a_torn_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    w = TraceWriter(path, make_header(mode=Mode.DEFAULT, tools=()), clock=_Clock(100.0, 105.0))
    w.emit("turn_start", (), turn=1)
    w.close()
    with path.open("a") as fh:
        fh.write('{"seq":1,"t":5.0,"causes":[0],"kind":"req')  # a kill during the write
    # a new process: its monotonic clock is far behind the old one
    w2 = TraceWriter(path, clock=_Clock(3.0, 3.5, 4.0))
    assert w2.next_seq == 1 and len(w2.events) == 1
    first_t = w2.events[0].t
    w2.emit("request", (0,), turn=1)
    w2.emit("interrupt", (1,), reason="x")
    w2.close()
    _, events = read_trace(path.read_text().splitlines())
    assert [e.seq for e in events] == [0, 1, 2]
    assert events[1].t >= first_t and events[2].t >= events[1].t
    assert events[2].t == pytest.approx(first_t + 1.0)


def test_timestamps_never_decrease_even_if_the_clock_does(tmp_path: Path) -> None:
    buf = io.StringIO()
    w = TraceWriter(buf, make_header(mode=Mode.DEFAULT, tools=()), clock=_Clock(10.0, 12.0, 11.0))
    w.emit("turn_start", (), turn=1)
    w.emit("request", (0,), turn=1)
    _, events = read_trace(buf.getvalue().splitlines())
    assert events[1].t >= events[0].t


def test_creating_over_an_existing_trace_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    TraceWriter(path, make_header(mode=Mode.DEFAULT, tools=())).close()
    with pytest.raises(TraceWriteError, match="already exists"):
        TraceWriter(path, make_header(mode=Mode.DEFAULT, tools=()))
    (tmp_path / "bad.jsonl").write_text('{"kind": "header", "format": "other"}\n')
    with pytest.raises(TraceWriteError, match="line 1"):
        TraceWriter(tmp_path / "bad.jsonl")


def test_redactor_patterns_and_environment_values() -> None:
    r = Redactor({"MY_SERVICE_TOKEN": "tok-1234567890", "PATH": "/usr/bin", "SHORT_KEY": "ab"})
    cases = {
        "key sk-ant-api03-abcdefghijklmnop here": "key [REDACTED] here",
        "ghp_abcdefghijklmnopqrstuvwxyz0123": REDACTED,
        "Authorization: Bearer eyJhbGciOi.payload": "Authorization: [REDACTED]",
        "a Bearer eyJhbGciOi.payload": "a Bearer [REDACTED]",
        "export OPENAI_API_KEY=abc123 && run": "export OPENAI_API_KEY=[REDACTED] && run",
        'DB_SECRET="two words"': 'DB_SECRET="[REDACTED]"',
        "the token is tok-1234567890.": "the token is [REDACTED].",
        "PATH=/usr/bin ab": "PATH=/usr/bin ab",
    }
    for raw, want in cases.items():
        assert r.text(raw) == want
    assert r.value({"k": ["Bearer abc", 3, None]}) == {"k": ["Bearer [REDACTED]", 3, None]}


def test_credentials_never_reach_the_trace_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "s3cr3t-value-from-env"
    monkeypatch.setenv("ACME_API_KEY", secret)
    script = [
        [
            ToolUseBlock(
                "a",
                "bash",
                {
                    "command": f"echo $ACME_API_KEY; echo sk-live-0123456789abcdef; echo X_TOKEN={secret}"
                },
            ),
        ],
        [TextBlock(f"the key was {secret} and ghp_0123456789abcdefghij")],
    ]
    run = run_loop(script, tmp_path, task=f"use Bearer {secret}")
    text = run.trace_path.read_text()
    assert secret not in text and "sk-live-0123456789abcdef" not in text
    assert REDACTED in of_kind(run.events, "result")[0].content
    assert run.result.status.value == "completed"


def test_graph_export_networkx_and_dot(tmp_path: Path) -> None:
    script = [[ToolUseBlock("a", "ls", {}), ToolUseBlock("b", "ls", {})], [TextBlock("ok")]]
    run = run_loop(script, tmp_path)
    graph = trace_graph(run.events)
    assert isinstance(graph, nx.DiGraph)
    assert set(graph.nodes) == {e.seq for e in run.events}
    assert {(c, e.seq) for e in run.events for c in e.causes} == set(graph.edges)
    assert nx.is_directed_acyclic_graph(graph)
    assert graph.nodes[0]["kind"] == "turn_start"
    sent = of_kind(run.events, "results_sent")[0].seq
    assert {graph.nodes[p]["kind"] for p in graph.predecessors(sent)} == {"result"}
    dot = trace_dot(run.events)
    # The one drawing module's DOT: the title, the first events, a causal edge, the legend.
    assert dot.startswith("digraph metis {") and dot.rstrip().endswith("}")
    assert 'label="trace: no divergence"' in dot
    assert 'label="0 turn_start turn 1"' in dot and "e0 -> e1 [" in dot
    assert "cluster_legend" in dot


@given(
    secret=st.text(min_size=6, max_size=20).filter(lambda s: s.strip() == s and s.strip()),
    before=st.text(max_size=10),
    after=st.text(max_size=10),
)
def test_an_environment_secret_never_survives_serialization(
    secret: str, before: str, after: str
) -> None:
    redactor = Redactor({"SERVICE_TOKEN": secret})
    buf = io.StringIO()
    w = TraceWriter(buf, make_header(mode=Mode.DEFAULT, tools=()), redactor=redactor)
    w.emit("interrupt", (), reason=before + secret + after)
    _, events = read_trace(buf.getvalue().splitlines())
    assert secret not in events[0].reason  # type: ignore[union-attr]


def test_the_header_maps_t_to_the_system_monotonic_clock_across_a_reopen(tmp_path: Path) -> None:
    import time

    path = tmp_path / "t.jsonl"
    before = time.monotonic()
    w = TraceWriter(path, make_header(mode=Mode.DEFAULT, tools=()))
    w.emit("turn_start", (), turn=1)
    w.emit("interrupt", (0,), reason="killed")
    w.close()
    after = time.monotonic()
    clock = w.header.meta["clock"]
    assert clock["source"] == "CLOCK_MONOTONIC" and clock["boot_id"]
    assert before <= clock["origin"] <= after
    reopened = TraceWriter(path)  # a resumed process, same boot: the same mapping
    reopened.emit("resume", (1,))
    reopened.close()
    now = time.monotonic()
    header, events = read_trace(path.read_text().splitlines())
    assert header.meta["clock"] == clock
    for e in events:
        assert before <= clock["origin"] + e.t <= now + 1e-6
    assert events[2].t >= now - clock["origin"] - 0.5  # not restarted from the last t


def test_another_boot_keeps_t_monotonic_but_drops_the_mapping(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    w = TraceWriter(path, make_header(mode=Mode.DEFAULT, tools=()))
    w.emit("turn_start", (), turn=1)
    w.emit("interrupt", (0,), reason="killed")
    w.close()
    text = path.read_text().replace(w.header.meta["clock"]["boot_id"], "another-boot")
    path.write_text(text)
    w2 = TraceWriter(path)
    w2.emit("resume", (1,))
    w2.close()
    _, events = read_trace(path.read_text().splitlines())
    assert events[2].t - events[1].t < 1.0  # continued from the last t, not the old origin
