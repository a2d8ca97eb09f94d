"""The public checks: one transcript, or a Claude Code session with its subagents."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from collections.abc import Mapping
from typing import Literal
from typing import get_args

from metis_trace import TranscriptFormatError

from .._report import Note
from .._report import Report
from .._report import Undecided
from .._report import Violation
from ._agents_sdk import TOP as AGENTS_TOP
from ._agents_sdk import read_run_items
from ._api import TOP
from ._api import Reader
from ._api import read_anthropic
from ._api import read_openai_chat
from ._api import read_openai_responses
from ._claude_code import read_session
from ._codex import read_rollout
from ._locate import Want
from ._locate import join_lines
from ._locate import scan_documents
from ._otel import TOP as OTEL_TOP
from ._otel import read_spans
from ._pydantic_ai import TOP as PAI_TOP
from ._pydantic_ai import read_history
from ._rules import FORMAT_RULES
from ._rules import STRICT_RULES
from ._tree import Parsed
from ._tree import check_tree

TranscriptFormat = Literal[
    "anthropic",
    "openai-chat",
    "openai-responses",
    "claude-code",
    "codex",
    "pydantic-ai",
    "otel",
    "openai-agents",
]
FORMATS: tuple[TranscriptFormat, ...] = get_args(TranscriptFormat)

# What a record of each format is called, for the error when there is none.
RECORD_NAMES: Mapping[str, str] = {
    "anthropic": "Anthropic Messages message",
    "openai-chat": "OpenAI Chat Completions message",
    "openai-responses": "OpenAI Responses item",
    "claude-code": "Claude Code session line",
    "codex": "Codex rollout line",
    "pydantic-ai": "pydantic-ai message",
    "otel": "OpenTelemetry GenAI span",
    "openai-agents": "OpenAI Agents SDK run item",
}

_READERS: Mapping[str, Reader] = {
    "anthropic": read_anthropic,
    "openai-chat": read_openai_chat,
    "openai-responses": read_openai_responses,
}


_LOG_READERS: Mapping[str, tuple[Reader, Want]] = {
    "pydantic-ai": (read_history, PAI_TOP),
    "otel": (read_spans, OTEL_TOP),
    "openai-agents": (read_run_items, AGENTS_TOP),
}


def _parse(lines: Iterable[str], fmt: str, name: str) -> Parsed:
    if fmt == "claude-code":
        return read_session(lines, name)
    if fmt == "codex":
        return read_rollout(lines, name)
    if fmt in _LOG_READERS:
        read, top = _LOG_READERS[fmt]
        parsed = read(scan_documents(join_lines(lines), top, name), name)
        if parsed.records == 0:
            raise TranscriptFormatError(1, f"no {RECORD_NAMES[fmt]} in the input", name)
        return parsed
    reader = _READERS.get(fmt)
    if reader is None:
        raise ValueError(f"unknown transcript format {fmt!r} (expected one of {FORMATS})")
    parsed = reader(scan_documents(join_lines(lines), TOP, name), name)
    if parsed.records == 0:
        raise TranscriptFormatError(1, f"no {RECORD_NAMES[fmt]} in the input", name)
    return parsed


def parse_transcript(lines: Iterable[str] | str, fmt: str, name: str = "") -> Parsed:
    """The transcript read into the tree the closure check walks (what a
    drawing shows); `TranscriptFormatError` as `check_transcript` raises it."""
    if isinstance(lines, str):
        lines = lines.split("\n")
    return _parse(lines, fmt, name)


class _Sum:
    """Findings of one or more files, summed into one report."""

    def __init__(self) -> None:
        self.violations: list[Violation] = []
        self.undecided: list[Undecided] = []
        self.notes: list[Note] = []
        self.checks: Counter[str] = Counter()
        self.kinds: Counter[str] = Counter()
        self.events = 0

    def add(
        self, lines: Iterable[str] | str, fmt: str, name: str, label: str, strict: bool = False
    ) -> None:
        lines = lines.split("\n") if isinstance(lines, str) else list(lines)  # not splitlines():
        parsed = _parse(lines, fmt, name)  # U+2028 may sit in a JSON string
        outcome = check_tree(
            parsed.tree,
            ends=parsed.ends,
            compacted=parsed.compacted,
            label=label,
            rules=STRICT_RULES.get(fmt, FORMAT_RULES[fmt]) if strict else FORMAT_RULES[fmt],
            slice_roots=parsed.slice_roots,
        )
        prefix = f"{label}: " if label else ""
        own = [v if not prefix else _labelled(v, prefix) for v in parsed.violations]
        found = sorted([*outcome.violations, *own], key=_place)
        if own:
            outcome.checks["CLOSE-9"] += 0
        self.violations.extend(found)
        self.undecided.extend(outcome.undecided)
        self.notes.extend(
            Note(n.line, f"{prefix}{n.message}") if prefix else n for n in parsed.notes
        )
        self.checks.update(outcome.checks)
        if fmt == "claude-code" and any('"metis"' in line for line in lines):
            # The hook's verdicts, when it wrote the file (AUTH-4). Imported
            # only then: the deriver and pydantic are heavy for a plain session.
            from ._hook_facts import check_hook_facts

            hook = check_hook_facts(lines, label)
            self.violations.extend(hook.violations)
            self.notes.extend(hook.notes)
            if hook.checked or hook.violations:
                self.checks["AUTH-4"] += hook.checked
        self.kinds.update(parsed.kinds)
        self.events += parsed.records

    def report(self, source: str, fmt: str) -> Report:
        return Report(
            source,
            self.events,
            tuple(self.violations),
            dict(self.checks),
            dict(self.kinds),
            tuple(self.undecided),
            tuple(self.notes),
            fmt,
        )


def _labelled(violation: Violation, prefix: str) -> Violation:
    return Violation(
        violation.invariant,
        violation.index,
        prefix + violation.message,
        violation.line,
        violation.state,
        violation.slice,
        violation.rule,
    )


def _place(violation: Violation) -> tuple[int, str]:
    line = violation.line if violation.line is not None else violation.index
    return line, violation.invariant


def check_transcript(
    lines: Iterable[str] | str, fmt: TranscriptFormat, source: str = "", *, strict: bool = False
) -> Report:
    """Check tool-call closure in another runtime's transcript.

    `lines` are the input's lines (with or without line endings; a single string
    is split). Raises `TranscriptFormatError` (with the 1-based line) for input
    that is not JSON, not the shape `fmt` needs, or holds no record of `fmt`.

    Each violation carries the file line of the offending call or result and
    the provider rule it breaks; `index` is the 0-based message/item index (API
    formats) or line index (claude-code). `undecided` holds the checks the input
    cannot decide (a slice, a live session); `notes` the warnings. `checks`
    counts how often each invariant was evaluated; `transitions` counts the
    kinds of records read (roles, item and block types, session line types), so
    a report shows what was skipped as well as what was checked.

    `strict`: also the rules that every provider of the wire holds where the
    wire's own provider is laxer (`STRICT_RULES`: OAR-6).
    """
    total = _Sum()
    total.add(lines, fmt, "", "", strict)
    if fmt == "claude-code":
        total.checks["CLOSE-6"] += 0  # always listed: a session may compact
    return total.report(source, fmt)


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
    total = _Sum()
    for name, lines in files:
        total.add(lines, "claude-code", name, name)
    total.checks["CLOSE-6"] += 0
    return total.report(source, "claude-code")
