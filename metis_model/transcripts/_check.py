"""The public checks: one transcript, or a Claude Code session with its subagents."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Literal, get_args

from .._report import Report, Violation
from ._api import TOP, Reader, read_anthropic, read_openai_chat, read_openai_responses
from ._claude_code import read_session
from ._locate import join_lines, scan_documents
from ._tree import check_tree

TranscriptFormat = Literal["anthropic", "openai-chat", "openai-responses", "claude-code"]
FORMATS: tuple[TranscriptFormat, ...] = get_args(TranscriptFormat)

_READERS: Mapping[str, Reader] = {
    "anthropic": read_anthropic,
    "openai-chat": read_openai_chat,
    "openai-responses": read_openai_responses,
}


def _check_session(
    lines: Iterable[str], name: str
) -> tuple[list[Violation], Counter[str], int, Counter[str]]:
    session = read_session(lines, name)
    violations, checks = check_tree(
        session.tree,
        always_requested=False,
        ends=session.ends,
        compacted=session.compacted,
        label=name,
    )
    checks["CLOSE-6"] += 0  # always listed: a session may compact
    return violations, checks, session.events, session.kinds


def check_transcript(lines: Iterable[str] | str, fmt: TranscriptFormat, source: str = "") -> Report:
    """Check tool-call closure in another runtime's transcript.

    `lines` are the input's lines (with or without line endings; a single string
    is split). Raises `TranscriptFormatError` (with the 1-based line) for input
    that is not JSON or not the shape `fmt` needs.

    Each violation carries the file line of the offending call or result;
    `index` is the 0-based message/item index (API formats) or line index
    (claude-code). `checks` counts how often each invariant was evaluated;
    `transitions` counts the kinds of records read (roles, item types, session
    line types), so a report shows what was skipped as well as what was checked.
    """
    if isinstance(lines, str):
        lines = lines.split("\n")  # not splitlines(): U+2028 may sit in a JSON string
    if fmt == "claude-code":
        violations, checks, events, kinds = _check_session(lines, "")
        return Report(source, events, tuple(violations), dict(checks), dict(kinds))
    reader = _READERS.get(fmt)
    if reader is None:
        raise ValueError(f"unknown transcript format {fmt!r} (expected one of {FORMATS})")
    docs = scan_documents(join_lines(lines), TOP)
    tree, events, kinds = reader(docs, "")
    violations, checks = check_tree(tree, always_requested=True)
    return Report(source, events, tuple(violations), dict(checks), dict(kinds))


def check_claude_code_tree(
    main_lines: Iterable[str] | str,
    subagent_files: Mapping[str, Iterable[str] | str],
    source: str = "",
) -> Report:
    """Check a Claude Code session and its `subagents/agent-*.jsonl` sidechains.

    Each file is checked on its own (line numbers are per file); every
    violation message starts with the file's name: `source` (or "main") for the
    session, the mapping key for a subagent. A format error names its file in
    `TranscriptFormatError.source`.
    """
    files: list[tuple[str, Iterable[str] | str]] = [(source or "main", main_lines)]
    files.extend(sorted(subagent_files.items()))
    violations: list[Violation] = []
    checks: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    events = 0
    for name, lines in files:
        if isinstance(lines, str):
            lines = lines.split("\n")  # not splitlines(): U+2028 may sit in a JSON string
        found, file_checks, file_events, file_kinds = _check_session(lines, name)
        violations.extend(found)
        checks.update(file_checks)
        kinds.update(file_kinds)
        events += file_events
    return Report(source, events, tuple(violations), dict(checks), dict(kinds))
