"""Claude Code session files: the real corpus passes, single mutations are caught.

Small real sessions are copied under tests/data/transcripts/claude-code (MIT,
see LICENSE there); the big ones are read from ../shared/corpora beside the repo
and skipped when that directory is absent.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from metis_check.transcripts import TranscriptFormatError
from metis_check.transcripts import check_claude_code_tree
from metis_check.transcripts import check_transcript

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "transcripts" / "claude-code"
SHARED = REPO.parent / "shared" / "corpora" / "claude-code"
SMALL = ["short.jsonl", "tool_heavy.jsonl", "subagent.jsonl"]
SMALL_AGENTS = sorted(p.name for p in (DATA / "subagents").glob("agent-*.jsonl"))

Record = dict[str, Any]


# -- helpers: edit a session as records, keeping the uuid/parentUuid threading ----


def load(path: Path) -> list[Record]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def dump(records: list[Record]) -> list[str]:
    return [json.dumps(r) for r in records]


def check(records: list[Record]) -> set[tuple[str, int | None]]:
    """Violations as (invariant, line), and undecided checks as (status, line)."""
    report = check_transcript(dump(records), "claude-code", "mutated")
    return {(v.invariant, v.line) for v in report.violations} | {
        (u.status, u.line) for u in report.undecided
    }


def request_after(records: list[Record], index: int, call_id: str) -> bool:
    """Is an assistant message other than the call's own written after line `index`?"""
    own = next(
        r["message"].get("id")
        for r in records
        if r.get("type") == "assistant" and any(b.get("id") == call_id for b in blocks(r))
    )
    return any(
        r.get("type") == "assistant" and r["message"].get("id") != own for r in records[index:]
    )


def blocks(record: Record) -> list[Record]:
    content = record.get("message", {}).get("content")
    return content if isinstance(content, list) else []


def tool_uses(records: list[Record]) -> dict[str, int]:
    """Call id -> 0-based index of its tool_use line."""
    return {
        b["id"]: i
        for i, r in enumerate(records)
        if r.get("type") == "assistant"
        for b in blocks(r)
        if b.get("type") == "tool_use"
    }


def result_lines(records: list[Record]) -> list[tuple[int, str]]:
    """(0-based index, call id) of every line holding exactly one tool_result."""
    found = []
    for i, r in enumerate(records):
        results = [b for b in blocks(r) if b.get("type") == "tool_result"]
        if r.get("type") == "user" and len(results) == 1:
            found.append((i, results[0]["tool_use_id"]))
    return found


def remove(records: list[Record], index: int) -> list[Record]:
    """Drop a line; its children hang from its parent instead."""
    out = copy.deepcopy(records)
    gone = out.pop(index)
    for r in out:
        if r.get("parentUuid") == gone.get("uuid"):
            r["parentUuid"] = gone.get("parentUuid")
    return out


def insert_after(records: list[Record], index: int, new: Record) -> list[Record]:
    """Put `new` right after line `index`, spliced into the thread between it and its children."""
    out = copy.deepcopy(records)
    new = copy.deepcopy(new)
    anchor = out[index]["uuid"]
    for r in out:
        if r.get("parentUuid") == anchor:
            r["parentUuid"] = new["uuid"]
    new["parentUuid"] = anchor
    out.insert(index + 1, new)
    return out


def fresh(record: Record, suffix: str) -> Record:
    twin = copy.deepcopy(record)
    twin["uuid"] = f"{record['uuid']}-{suffix}"
    return twin


# -- the real corpus ---------------------------------------------------------------


@pytest.mark.parametrize("name", SMALL + [f"subagents/{a}" for a in SMALL_AGENTS])
def test_copied_corpus_files_pass(name: str) -> None:
    path = DATA / name
    report = check_transcript(path.read_text().splitlines(), "claude-code", str(path))
    assert report.ok, [v.one_line() for v in report.violations]
    assert report.source == str(path)
    calls = len(tool_uses(load(path)))
    # Every call was put to CLOSE-7 and to closure (CLOSE-2, or CLOSE-6 at a compaction).
    assert report.checks["CLOSE-7"] == calls
    assert report.checks["CLOSE-2"] + report.checks.get("CLOSE-6", 0) >= calls
    assert report.checks["CLOSE-4"] == len(result_lines(load(path)))


def _shared_files() -> list[str]:
    if not SHARED.is_dir():
        return []
    return sorted(str(p.relative_to(SHARED)) for p in SHARED.rglob("*.jsonl"))


@pytest.mark.parametrize("name", _shared_files() or ["<absent>"])
def test_every_shared_corpus_file_passes(name: str) -> None:
    if not SHARED.is_dir():
        pytest.skip("../shared/corpora/claude-code is not present")
    with (SHARED / name).open() as handle:
        report = check_transcript(handle, "claude-code", name)
    assert report.ok, [v.one_line() for v in report.violations[:5]]
    assert report.events > 0


def test_every_shared_session_passes_with_its_subagents() -> None:
    if not SHARED.is_dir():
        pytest.skip("../shared/corpora/claude-code is not present")
    sessions = sorted(SHARED.glob("*.jsonl"))
    with_agents = [s for s in sessions if (SHARED / s.stem / "subagents").is_dir()]
    assert with_agents, "the corpus has sessions with subagents"
    for session in with_agents:
        agents = {
            f"subagents/{p.name}": p.read_text().splitlines()
            for p in sorted((SHARED / session.stem / "subagents").glob("agent-*.jsonl"))
        }
        report = check_claude_code_tree(session.read_text().splitlines(), agents, session.name)
        assert report.ok, [v.one_line() for v in report.violations[:5]]
        assert report.checks["CLOSE-2"] > 0


def test_the_compacted_sessions_really_compact() -> None:
    if not SHARED.is_dir():
        pytest.skip("../shared/corpora/claude-code is not present")
    session = SHARED / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    report = check_transcript(session.read_text().splitlines(), "claude-code")
    assert report.ok
    assert report.transitions["system:compact_boundary"] == 1
    assert report.checks["CLOSE-6"] > 0


def test_parallel_results_on_sibling_branches_are_one_turn_not_a_rewind() -> None:
    # short.jsonl: the first result hangs from its own tool_use line, off the
    # path to the last line. Read naively as a rewind, that call would be open.
    records = load(DATA / "short.jsonl")
    first_result = next(i for i, _ in result_lines(records))
    leaves = {r.get("uuid") for r in records} - {r.get("parentUuid") for r in records}
    assert records[first_result]["uuid"] in leaves
    report = check_transcript(dump(records), "claude-code")
    assert report.ok
    assert report.checks["CLOSE-2"] == 2


def test_streamed_blocks_written_after_early_results_stay_one_message() -> None:
    # agent-aac57f5: tool_use lines of one message hang from results of its
    # earlier calls (streaming tool execution). Still one message, one result turn.
    records = load(DATA / "subagents" / "agent-aac57f5.jsonl")
    by_uuid = {r["uuid"]: r for r in records}
    interleaved = [
        r
        for r in records
        if r["type"] == "assistant" and by_uuid.get(r["parentUuid"], {}).get("type") == "user"
    ]
    assert any(
        by_uuid[r["parentUuid"]].get("sourceToolAssistantUUID") is not None for r in interleaved
    )
    assert check(records) == set()


# -- single mutations of real sessions ---------------------------------------------

MUTATED = ["tool_heavy.jsonl", "subagent.jsonl", "short.jsonl", "subagents/agent-aac57f5.jsonl"]


def _cases(name: str) -> list[tuple[int, str]]:
    return result_lines(load(DATA / name))


@pytest.mark.parametrize("name", MUTATED)
def test_removed_result_is_close_2_at_the_call(name: str) -> None:
    records = load(DATA / name)
    calls = tool_uses(records)
    for index, call_id in _cases(name):
        removed = remove(records, index)
        # Broken where a later request went out without the result; where nothing
        # followed, the session may still be running: undecided.
        status = "CLOSE-2" if request_after(removed, index, call_id) else "open-at-end"
        assert check(removed) == {(status, calls[call_id] + 1)}, call_id


@pytest.mark.parametrize("name", MUTATED)
def test_duplicated_result_is_close_1_at_the_copy(name: str) -> None:
    records = load(DATA / name)
    for index, call_id in _cases(name):
        mutated = insert_after(records, index, fresh(records[index], "dup"))
        assert check(mutated) == {("CLOSE-1", index + 2)}, call_id


@pytest.mark.parametrize("name", MUTATED)
def test_duplicated_call_id_is_close_7_at_the_copy(name: str) -> None:
    records = load(DATA / name)
    for call_id, index in tool_uses(records).items():
        mutated = insert_after(records, index, fresh(records[index], "dup"))
        assert check(mutated) == {("CLOSE-7", index + 2)}, call_id


@pytest.mark.parametrize("name", MUTATED)
def test_stray_result_is_close_4_at_the_stray(name: str) -> None:
    records = load(DATA / name)
    for index, _ in _cases(name):
        stray = fresh(records[index], "stray")
        stray["message"] = {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_stray", "content": "x"}],
        }
        assert check(insert_after(records, index, stray)) == {("CLOSE-4", index + 2)}


@pytest.mark.parametrize("name", MUTATED)
def test_result_moved_to_a_later_message_is_close_4_and_close_2(name: str) -> None:
    records = load(DATA / name)
    calls = tool_uses(records)
    message_of = {cid: records[i]["message"]["id"] for cid, i in calls.items()}
    moved_any = False
    for index, call_id in _cases(name):
        later = [
            (i, cid)
            for i, cid in _cases(name)
            if i > index and message_of[cid] != message_of[call_id] and cid != call_id
        ]
        if not later:
            continue
        target, _ = later[0]
        mutated = remove(records, index)
        mutated = insert_after(mutated, target - 1, records[index])  # target shifted up by one
        assert check(mutated) == {("CLOSE-2", calls[call_id] + 1), ("CLOSE-4", target + 1)}
        moved_any = True
    assert moved_any or len({*message_of.values()}) < 2


@pytest.mark.parametrize("name", MUTATED)
def test_session_cut_after_a_tool_use_is_open_at_end(name: str) -> None:
    records = load(DATA / name)
    results_at = {cid: i for i, cid in _cases(name)}
    for call_id, index in tool_uses(records).items():
        cut = records[: index + 1]
        # Every call written so far whose result comes after the cut is open, and
        # nothing was sent after it: a live (or cut) session, undecided.
        open_calls = {
            ("open-at-end", i + 1)
            for cid, i in tool_uses(cut).items()
            if results_at.get(cid, len(records)) > index
        }
        assert ("open-at-end", index + 1) in open_calls
        assert check(cut) == open_calls, call_id
        report = check_transcript(dump(cut), "claude-code")
        assert report.verdict == "undetermined" and not report.ok
        assert report.passes(frozenset({"open-at-end"}))


def test_violation_fields_name_line_index_and_slice() -> None:
    records = load(DATA / "tool_heavy.jsonl")
    index, call_id = _cases("tool_heavy.jsonl")[0]
    call_line = tool_uses(records)[call_id] + 1
    report = check_transcript(dump(remove(records, index)), "claude-code", "t.jsonl")
    (violation,) = report.violations
    assert violation.invariant == "CLOSE-2"
    assert violation.line == call_line
    assert violation.index == call_line - 1  # the 0-based record (line) index
    assert violation.slice == (call_line - 1,)
    assert call_id in violation.message
    assert violation.state.startswith("assistant message at line")


# -- hand-built sessions: rewinds, compaction, sidechains ---------------------------


class Session:
    """A tiny session writer: each line threads onto the previous one unless told."""

    def __init__(self) -> None:
        self.records: list[Record] = []

    def _add(self, record: Record, parent: str | bool | None) -> str:
        uuid = f"u{len(self.records)}"
        if parent is True:
            parent = self.records[-1]["uuid"] if self.records else None
        record = {"uuid": uuid, "parentUuid": parent, "isSidechain": False, **record}
        self.records.append(record)
        return uuid

    def user(self, text: str = "hi", parent: str | bool | None = True, **extra: Any) -> str:
        return self._add(
            {"type": "user", "message": {"role": "user", "content": text}, **extra}, parent
        )

    def result(self, call_id: str, parent: str | bool | None = True) -> str:
        block = {"type": "tool_result", "tool_use_id": call_id, "content": "ok"}
        return self._add({"type": "user", "message": {"role": "user", "content": [block]}}, parent)

    def blocks(self, content: list[Record], parent: str | bool | None = True) -> str:
        return self._add({"type": "user", "message": {"role": "user", "content": content}}, parent)

    def assistant(
        self, msg: str, block: Record, parent: str | bool | None = True, **extra: Any
    ) -> str:
        message = {"id": msg, "role": "assistant", "content": [block]}
        return self._add({"type": "assistant", "message": message, **extra}, parent)

    def call(self, msg: str, call_id: str, parent: str | bool | None = True) -> str:
        return self.assistant(
            msg, {"type": "tool_use", "id": call_id, "name": "Bash", "input": {}}, parent
        )

    def text(self, msg: str, parent: str | bool | None = True) -> str:
        return self.assistant(msg, {"type": "text", "text": "done"}, parent)

    def progress(self, parent: str | bool | None = True) -> str:
        return self._add({"type": "progress", "data": {"type": "hook_progress"}}, parent)

    def boundary(self, logical_parent: str | None) -> str:
        record = {
            "type": "system",
            "subtype": "compact_boundary",
            "logicalParentUuid": logical_parent,
        }
        return self._add(record, None)

    def violations(self) -> set[tuple[str, int | None]]:
        return check(self.records)


def test_an_abandoned_branch_may_end_on_an_open_call() -> None:
    s = Session()
    s.user()
    reply = s.text("m0")
    s.user("do it")
    s.call("m1", "a")  # rewound away from: never answered, never sent again
    s.user("do it differently", parent=reply)
    s.call("m2", "b")
    s.result("b")
    s.text("m3")
    assert s.violations() == set()


def test_an_abandoned_branch_that_sent_another_request_is_still_checked() -> None:
    s = Session()
    s.user()
    reply = s.text("m0")
    s.user("do it")
    s.call("m1", "a")
    s.text("m2")  # a request went out with call a open, on this branch
    s.user("do it differently", parent=reply)
    s.text("m3")
    assert s.violations() == {("CLOSE-2", 4)}


def test_a_branch_that_skips_a_result_is_checked_on_its_own() -> None:
    s = Session()
    s.user()
    call = s.call("m1", "a")
    s.user("redo", parent=call)  # a turn hanging from the call before any result
    s.text("m2")
    s.result("a", parent=call)  # the branch the session went on with
    s.text("m3")
    assert s.violations() == {("CLOSE-2", 2)}


def test_a_turn_hanging_from_an_answered_message_continues_from_its_results() -> None:
    # Parallel results sit on sibling branches, so the next turn may hang from
    # the message itself once its results exist: it sees all of them.
    s = Session()
    s.user()
    first = s.call("m1", "a")
    second = s.call("m1", "b")
    s.result("a", parent=first)
    s.result("b", parent=second)
    s.text("m2", parent=second)
    assert s.violations() == set()


def test_progress_lines_are_transparent_and_keep_line_numbers() -> None:
    s = Session()
    s.progress(parent=None)
    s.user()
    s.progress()
    s.call("m1", "a")
    s.progress()
    s.progress()
    s.text("m2")  # the result is missing: a request follows the call
    assert s.violations() == {("CLOSE-2", 4)}


@pytest.mark.parametrize(
    "logical_parent",
    ["u1", "not-in-this-file"],
    # Without its logical parent in the file, the boundary follows the last turn.
    ids=["its-logical-parent", "without-its-logical-parent-uses-the-last-turn"],
)
def test_compaction_with_an_open_call_is_close_6(logical_parent: str) -> None:
    s = Session()
    s.user()
    s.call("m1", "a")
    s.boundary(logical_parent)
    s.user("summary", isCompactSummary=True)
    s.text("m2")
    assert s.violations() == {("CLOSE-6", 2)}


def test_a_result_after_the_compaction_of_its_call_is_close_6() -> None:
    s = Session()
    s.user()
    s.call("m1", "a")
    s.boundary("u1")
    s.user("summary", isCompactSummary=True)
    s.result("a")
    s.text("m2")
    assert s.violations() == {("CLOSE-6", 2), ("CLOSE-6", 5)}


def test_a_clean_compaction_passes() -> None:
    s = Session()
    s.user()
    s.call("m1", "a")
    last = s.result("a")
    s.text("m2")
    s.boundary(last)
    s.user("summary", isCompactSummary=True)
    s.call("m3", "a")  # ids may repeat across turns
    s.result("a")
    s.text("m4")
    report = check_transcript(dump(s.records), "claude-code")
    assert report.ok
    assert report.checks["CLOSE-6"] >= 1


def test_a_sidechain_never_continues_the_main_thread() -> None:
    s = Session()
    s.user()
    task = s.call("m1", "task")
    sub = s.user("subagent prompt", parent=task, isSidechain=True)
    s.records[-1]["isSidechain"] = True
    s.call("m2", "inner", parent=sub)
    s.records[-1]["isSidechain"] = True
    s.result("inner")
    s.records[-1]["isSidechain"] = True
    s.text("m3")
    s.records[-1]["isSidechain"] = True
    s.result("task", parent=task)
    s.text("m4")
    assert s.violations() == set()


def test_a_session_cut_right_after_a_tool_use_is_open_at_end() -> None:
    s = Session()
    s.user()
    s.call("m1", "a")
    s.progress()
    assert s.violations() == {("open-at-end", 2)}


def test_a_duplicated_call_id_across_two_lines_of_one_message_is_close_7() -> None:
    s = Session()
    s.user()
    first = s.call("m1", "a")
    s.call("m1", "a", parent=first)
    s.result("a")
    s.text("m2")
    assert s.violations() == {("CLOSE-7", 3)}


def test_a_result_in_an_assistant_line_is_close_4() -> None:
    s = Session()
    s.user()
    s.assistant("m1", {"type": "tool_result", "tool_use_id": "x", "content": "?"})
    assert s.violations() == {("CLOSE-4", 2)}


def _result_block(call_id: str) -> Record:
    return {"type": "tool_result", "tool_use_id": call_id, "content": "ok"}


def test_text_before_a_result_within_one_line_is_close_2_at_that_line() -> None:
    s = Session()
    s.user()
    s.call("m1", "a")
    s.blocks([{"type": "text", "text": "note"}, _result_block("a")])
    s.text("m2")  # a request carries the misordered message
    report = check_transcript(dump(s.records), "claude-code")
    (violation,) = report.violations
    assert (violation.invariant, violation.line, violation.index) == ("CLOSE-2", 3, 2)
    assert violation.slice == (1, 2)
    assert "comes after the 'text' block at line 3" in violation.message


def test_results_first_within_one_line_passes() -> None:
    s = Session()
    s.user()
    s.call("m1", "a")
    s.blocks([_result_block("a"), {"type": "text", "text": "note"}])
    s.text("m2")
    assert s.violations() == set()


def test_results_first_is_not_checked_across_the_lines_of_one_turn() -> None:
    # Lines of one turn are written as things happen; Claude Code merges them
    # (results first) before sending, so only the order inside a line counts.
    s = Session()
    s.user()
    s.call("m1", "a")
    s.user("a queued prompt")
    s.result("a")
    s.text("m2")
    assert s.violations() == set()


def test_misordered_last_line_sent_nowhere_is_not_reported() -> None:
    # No request followed the misordered message (the run ended there).
    s = Session()
    s.user()
    s.call("m1", "a")
    s.blocks([{"type": "text", "text": "note"}, _result_block("a")])
    assert s.violations() == set()


# -- unreadable input --------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        (json.dumps({"type": "user", "uuid": "x"}), "'message'"),
        (json.dumps({"type": "user", "message": {"content": "hi"}}), "'uuid'"),
        (json.dumps({"type": "user", "uuid": "x", "message": {"content": 3}}), "content"),
        (
            json.dumps(
                {"type": "assistant", "uuid": "x", "message": {"content": [{"type": "tool_use"}]}}
            ),
            "id must be a string",
        ),
    ],
)
def test_unreadable_lines_raise_with_their_line(bad: str, fragment: str) -> None:
    lines = (DATA / "short.jsonl").read_text().splitlines()[:5]
    lines.insert(3, bad)
    lines.insert(3, "")  # blank lines are skipped but counted
    with pytest.raises(TranscriptFormatError) as caught:
        check_transcript(lines, "claude-code")
    assert caught.value.line == 5
    assert fragment in caught.value.message
    assert "line 5" in str(caught.value)


# -- the main session with its subagent files --------------------------------------


def _agents() -> dict[str, list[str]]:
    return {
        f"subagents/{name}": (DATA / "subagents" / name).read_text().splitlines()
        for name in SMALL_AGENTS
    }


def test_tree_passes_and_sums_each_file() -> None:
    main = (DATA / "subagent.jsonl").read_text().splitlines()
    report = check_claude_code_tree(main, _agents(), "subagent.jsonl")
    assert report.ok
    singles = [check_transcript(main, "claude-code")] + [
        check_transcript(lines, "claude-code") for lines in _agents().values()
    ]
    assert report.events == sum(r.events for r in singles)
    assert report.checks["CLOSE-2"] == sum(r.checks["CLOSE-2"] for r in singles)


def test_tree_violation_names_its_file_and_its_line_in_that_file() -> None:
    agents = _agents()
    name = "subagents/agent-aac57f5.jsonl"
    records = [json.loads(line) for line in agents[name]]
    index, call_id = result_lines(records)[0]
    agents[name] = dump(remove(records, index))
    main = (DATA / "tool_heavy.jsonl").read_text().splitlines()
    report = check_claude_code_tree(main, agents, "tool_heavy.jsonl")
    (violation,) = report.violations
    assert violation.message.startswith(f"{name}: ")
    assert violation.line == tool_uses(records)[call_id] + 1


def test_tree_violations_in_the_main_file_name_it() -> None:
    records = load(DATA / "tool_heavy.jsonl")
    index, _ = result_lines(records)[0]
    report = check_claude_code_tree(dump(remove(records, index)), _agents(), "tool_heavy.jsonl")
    assert [v.message.split(":")[0] for v in report.violations] == ["tool_heavy.jsonl"]


def test_tree_format_error_names_its_file() -> None:
    agents = _agents()
    agents["subagents/agent-broken.jsonl"] = ['{"type": "user"', "{}"]
    with pytest.raises(TranscriptFormatError) as caught:
        check_claude_code_tree((DATA / "short.jsonl").read_text(), agents, "short.jsonl")
    assert caught.value.source == "subagents/agent-broken.jsonl"
    assert caught.value.line == 1


# -- size: a 3 MB session stays linear (timed in benchmarks/bench_transcripts.py) ----


def renumbered(records: list[Record], suffix: str) -> list[Record]:
    """A copy with fresh uuids, message ids and call ids (same threading)."""
    out = copy.deepcopy(records)

    def fresh_id(value: Any) -> Any:
        return f"{value}-{suffix}" if isinstance(value, str) else value

    for record in out:
        for key in ("uuid", "parentUuid", "logicalParentUuid", "sourceToolAssistantUUID"):
            if key in record:
                record[key] = fresh_id(record[key])
        if record.get("type") == "assistant":
            record["message"]["id"] = fresh_id(record["message"].get("id"))
        for block in blocks(record):
            if block.get("type") == "tool_use":
                block["id"] = fresh_id(block["id"])
            if "tool_use_id" in block:
                block["tool_use_id"] = fresh_id(block["tool_use_id"])
    return out


def build_large_session(target_bytes: int = 3_000_000) -> list[str]:
    """Real lines, renumbered copy after copy and chained into one long thread."""
    base = load(DATA / "subagent.jsonl") + load(DATA / "tool_heavy.jsonl")
    lines: list[str] = []
    size = 0
    last: str | None = None
    copy_number = 0
    while size < target_bytes:
        for record in renumbered(base, str(copy_number)):
            if "uuid" in record and record.get("parentUuid") is None and last is not None:
                record["parentUuid"] = last
            if record.get("type") in ("user", "assistant"):
                last = record["uuid"]
            line = json.dumps(record)
            lines.append(line)
            size += len(line) + 1
        copy_number += 1
    return lines


def test_a_3_mb_session_is_checked_and_passes() -> None:
    lines = build_large_session()
    assert sum(len(line) + 1 for line in lines) >= 3_000_000
    report = check_transcript(lines, "claude-code", "large")
    assert report.ok, [v.one_line() for v in report.violations[:3]]
    assert report.checks["CLOSE-2"] > 200
