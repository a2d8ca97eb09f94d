"""Narrow deterministic routes, tried before any cache or proposal, and the
offline intent clustering of L1 (specs/plan.md, "A turn").

Routes (Metnos page, section 3: "closed cases"):
- `undo` (`undo`, `undo last turn`, `revert the last change`, ...): restore
  what the owner's last completed turn with effects changed;
- a recurrence in the schedule grammar at the start of the request
  (`daily@08:00 ...`, `every 30m ...`, or an ambiguous `daily ...` /
  `every day ...`): record a task (or ask for the missing detail); the body is
  not run now.

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
