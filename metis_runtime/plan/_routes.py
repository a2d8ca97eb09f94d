"""Narrow deterministic routes, tried before any cache or proposal, and the
offline intent clustering of L1 (specs/plan.md, "A turn").

Routes (Metnos page, section 3: "closed cases"):
- `undo` (`undo`, `undo last turn`, `revert the last change`, ...): restore
  what the owner's last completed turn with effects changed;
- a recurrence in the schedule grammar at the start of the request
  (`daily@08:00 ...`, `every 30m ...`, or an ambiguous `daily ...` /
  `every day ...`): record a task (or ask for the missing detail); the body is
  not run now. A recurrence elsewhere in the request (`... every 30m`,
  `... every Monday at 8`, `... daily at 9`) is the same route: the phrase is
  the schedule and the rest the command (Metnos section 11.1: a recurrence
  not recognized unambiguously is asked about, the body is not run).

L1 clusters are keyed without the network: the intent key is the request's
content words (lower-cased; stop words, numbers and path-like words left out),
sorted and de-duplicated. A request with no cluster of its own joins the
nearest existing one when their word sets overlap by at least
`SIMILARITY` (Jaccard).

Explicit targets: `--target name=value`, and a request that names exactly one
workspace path (a word with a `/` and a file extension) has it as `path`.
"""

from __future__ import annotations

import re

import attrs

from ._store import PlanStore

SIMILARITY = 0.75
_UNDO = re.compile(
    r"^(?:please\s+)?(?:undo|revert|roll\s*back)(?:\s+(?:the|my))?"
    r"(?:\s+last\s+(?:turn|change|changes|action|request))?\s*[.!]?$"
)
_SCHEDULE_HEAD = re.compile(r"^(daily|every|each|weekly|hourly)\b", re.IGNORECASE)
_UNITS = r"(?:m|min|mins|minutes?|h|hrs?|hours?)"
_DAYS = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
# A recurrence phrase inside a request; "every file", "daily report" are not.
_RECURRENCE = re.compile(
    rf"\b(?:daily@\S*|daily\s+at\s+\S+"
    rf"|(?:every|each)\s+(?:\d+\s*{_UNITS}\b|\d+\b(?!\s*[a-z])"
    rf"|(?:other\s+)?(?:day|morning|evening|night|week|weekday|month|hour|minute|{_DAYS})s?\b"
    rf"(?:\s+at\s+\d{{1,2}}(?::\d{{2}})?(?:\s*[ap]m)?)?))",
    re.IGNORECASE,
)
_PATH_WORD = re.compile(r"(?<![\w./-])(?:[\w.-]+/)+[\w.-]*\.\w+(?![\w/])")
_WORD = re.compile(r"[a-z]+")
STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "the",
        "of",
        "to",
        "in",
        "into",
        "on",
        "for",
        "from",
        "with",
        "my",
        "me",
        "our",
        "your",
        "please",
        "then",
        "them",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "at",
        "by",
        "as",
        "is",
        "are",
        "be",
        "all",
        "each",
        "every",
    ]
)


@attrs.frozen
class Route:
    name: str  # "undo" | "schedule"
    schedule: str = ""
    command: str = ""


def match_route(request: str) -> Route | None:
    text = " ".join(request.strip().split())
    if _UNDO.match(text.lower()):
        return Route("undo")
    head = _SCHEDULE_HEAD.match(text)
    if head:
        spec, _, command = text.partition(" ")
        if spec.lower() in ("every", "each") and command:
            amount, _, rest = command.partition(" ")
            spec, command = f"{spec} {amount}", rest
        return Route("schedule", spec, command.strip())
    found = _RECURRENCE.search(text)
    if found:
        spec = " ".join(found[0].split())
        if m := re.fullmatch(r"(every|each) (\d+) ?([mh])\w*", spec, re.IGNORECASE):
            spec = f"{m[1]} {m[2]}{m[3]}"  # "every 30 minutes" is "every 30m"
        command = (text[: found.start()] + text[found.end() :]).strip(" ,;")
        return Route("schedule", spec, " ".join(command.split()))
    return None


def explicit_targets(request: str) -> dict[str, str]:
    paths = sorted(set(_PATH_WORD.findall(request)))
    return {"path": paths[0]} if len(paths) == 1 else {}


def intent_key(request: str) -> str:
    text = _PATH_WORD.sub(" ", request.lower())
    words = sorted({w for w in _WORD.findall(text) if w not in STOP_WORDS and len(w) > 1})
    return "intent:" + " ".join(words)


def _words(key: str) -> set[str]:
    return set(key.removeprefix("intent:").split())


def nearest_cluster(store: PlanStore, key: str) -> str | None:
    """An existing L1 cluster key at least SIMILARITY close to `key` (or None)."""
    mine = _words(key)
    best: tuple[float, str] | None = None
    for entry in store.plans():
        if entry.path != "L1":
            continue
        theirs = _words(entry.key)
        union = mine | theirs
        score = len(mine & theirs) / len(union) if union else 0.0
        if score >= SIMILARITY and (best is None or score > best[0]):
            best = (score, entry.key)
    return best[1] if best else None
