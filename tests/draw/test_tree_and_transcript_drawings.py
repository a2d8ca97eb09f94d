"""Drawings of a tree of agents (children as clusters) and of another
runtime's transcript, read back from the SVG."""

from __future__ import annotations

from metis_check import check_trace_tree
from metis_check import figure_graph
from metis_check import tree_figure
from metis_check.transcripts import check_claude_code_tree
from metis_check.transcripts._figure import transcript_figure
from tests.draw._cases import DATA
from tests.draw._cases import transcript_with_a_stray_result
from tests.draw._svg import read_svg
from tests.model.test_spawn_guard_tree import valid_tree


def test_a_tree_draws_each_agent_as_a_cluster_linked_by_its_spawn() -> None:
    tree = valid_tree()
    picture = read_svg(figure_graph(tree_figure(tree, ())).pipe(format="svg"))
    agents = picture.having("cluster", "group", "agent")
    assert len(agents) == 4 and not any("violation" in a.classes for a in agents)
    assert len(picture.having("edge", "link", "spawn")) == 3  # root->a1, root->a2, a2->a3
    assert len(picture.items) == sum(len(events) for _, events in tree.values())
    assert "spawn: parent's event to the child's trace" in picture.legend


def test_a_tree_violation_marks_the_childs_cluster() -> None:
    tree = valid_tree()
    header, events = tree["a3.jsonl"]
    tree["a3.jsonl"] = (header.model_copy(update={"depth": 5}), events)
    report = check_trace_tree(tree)
    assert {v.invariant for v in report.violations} >= {"CHILD-5"}
    picture = read_svg(figure_graph(tree_figure(tree, report.violations)).pipe(format="svg"))
    [marked] = [a for a in picture.having("cluster", "group", "agent") if "violation" in a.classes]
    assert "a3" in marked.label and "CHILD-" in marked.label


def test_a_transcript_draws_calls_results_and_the_unanswered_call() -> None:
    text, call_id = transcript_with_a_stray_result()
    report = check_claude_code_tree(text, {}, source="session.jsonl")
    first = report.first
    assert first is not None and first.invariant == "CLOSE-2"
    picture = read_svg(
        figure_graph(transcript_figure(text, "claude-code", first, limit=None)).pipe(format="svg")
    )
    [bad] = picture.violating
    assert bad.text[0] == f"call {call_id}" and "call" in bad.classes
    assert picture.having("cluster", "group", "message")
    assert picture.having("edge", "link", "answers")
    assert {"tool call", "result of a call", "the violating event"} <= set(picture.legend)


def test_a_conforming_transcript_is_drawn_whole_and_unmarked() -> None:
    text = (DATA / "subagent.jsonl").read_text()
    figure = transcript_figure(text, "claude-code", None, limit=None)
    picture = read_svg(figure_graph(figure).pipe(format="svg"))
    calls = [e for e in picture.items if "call" in e.classes]
    results = [e for e in picture.items if "result" in e.classes]
    assert calls and len(calls) == len(results) and not picture.violating
