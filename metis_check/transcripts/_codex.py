"""Reader for Codex CLI rollout files (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).

Each line is `{"timestamp", "type", "payload"}` (`RolloutLine` in openai/codex
`codex-rs/protocol/src/protocol.rs`; newer builds add `ordinal` and
`metadata`). What is read:

* `response_item`: a Responses API item (`codex-rs/protocol/src/models.rs`),
  read exactly as `--format openai-responses` reads one
  (`_api.read_responses_item`): every client-executed call type, paired with
  its output by `call_id`. Codex sends the whole history with each request, so
  the Responses rules hold along it (OAR-1..5): a call must have its output
  before the next model turn, and a `call_id` is used once.
* `compacted`: the history was replaced by a summary (and, in newer builds,
  `replacement_history` items, read as the start of the new thread): a call
  still open there is a CLOSE-6, and so is an output after it whose call came
  before it.
* `session_meta`, `turn_context`, `event_msg` and the newer kinds are neutral
  (counted in `transitions`); an unknown kind is a warning.

The rollout is a log, not a request: a call still open where the file ends is
undecided (`open-at-end`), the session may be running. A file whose first line
is not `session_meta` is a slice (a resumed or cut copy): outputs before any
call whose call is in no line of it are `outside-slice`. Older builds wrote the
items themselves, one per line (with `record_type: "state"` lines); those are
read too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from metis_trace import TranscriptFormatError

from .._report import Note
from ._api import _Builder
from ._api import mark_open_ends
from ._api import read_responses_item
from ._claude_code import record_lines
from ._locate import Located
from ._tree import Parsed
from ._tree import Tree

ROLLOUT_KINDS = frozenset(
    {
        "session_meta",
        "response_item",
        "event_msg",
        "turn_context",
        "compacted",
        "inter_agent_communication",
        "inter_agent_communication_metadata",
        "token_usage_record",
        "world_state",
        "retained_context",
        "security_risk_score",
        "realtime_item",
    }
)


def read_rollout(lines: Iterable[str], source: str = "") -> Parsed:
    parsed = Parsed(Tree(), 0, Counter())
    build = _Builder(parsed.tree)
    item_ids: dict[str, int] = {}
    foreign: Counter[str] = Counter()
    index = -1
    started = False  # a session_meta line was read first
    rollout_lines = 0
    for number, record in record_lines(lines, source, parsed.notes):
        index += 1
        kind = record.get("type")
        payload = record.get("payload")
        if "payload" in record and kind in ROLLOUT_KINDS:
            rollout_lines += 1
            parsed.kinds[f"line:{kind}"] += 1
            if index == 0 and kind == "session_meta":
                started = True
            if kind == "response_item":
                if not isinstance(payload, dict):
                    raise TranscriptFormatError(
                        number, "a response_item needs an object 'payload'", source
                    )
                _item(parsed, build, Located(payload, number), index, item_ids, source)
            elif kind == "compacted":
                _compacted(parsed, build, payload, number, index, item_ids, source)
            continue
        if "record_type" in record or ("instructions" in record and index == 0):
            parsed.kinds["line:legacy-state"] += 1
            started = started or index == 0
            continue
        if "payload" not in record and isinstance(kind, str) and "timestamp" not in record:
            _item(parsed, build, Located(record, number), index, item_ids, source)  # older builds
            continue
        foreign[str(kind)] += 1
    if rollout_lines == 0 and parsed.records == 0:
        raise TranscriptFormatError(
            1, "not a Codex rollout: no session_meta or response_item line", source
        )
    for kind, count in sorted(foreign.items()):
        parsed.notes.append(
            Note(None, f"{count} line(s) of type {kind!r}, not a rollout kind: not checked")
        )
    if not started and parsed.tree.nodes:
        parsed.slice_roots.add(0)  # no session_meta first: the file starts mid-session
    return mark_open_ends(parsed)


def _item(
    parsed: Parsed,
    build: _Builder,
    record: Located,
    index: int,
    item_ids: dict[str, int],
    source: str,
) -> None:
    read_responses_item(parsed, build, record, index, False, item_ids, source)


def _compacted(
    parsed: Parsed,
    build: _Builder,
    payload: object,
    line: int,
    index: int,
    item_ids: dict[str, int],
    source: str,
) -> None:
    """History replaced. Without `replacement_history`, a call open now can never be
    answered after it; with it, the calls it carries go on in the new thread, and
    an output whose call it dropped is a CLOSE-6 where it comes."""
    history = payload.get("replacement_history") if isinstance(payload, dict) else None
    if build.current is not None and not isinstance(history, list):
        parsed.ends[build.current] = "CLOSE-6"
    boundary = parsed.tree.add("boundary", None, line, index)
    parsed.compacted[boundary] = line
    build.current, build.side = boundary, "boundary"
    item_ids.clear()  # the next request carries only what replaced the history
    for item in history if isinstance(history, list) else []:
        if isinstance(item, dict):
            _item(parsed, build, Located(item, line), index, item_ids, source)
