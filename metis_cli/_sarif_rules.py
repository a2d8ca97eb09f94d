"""SARIF `reportingDescriptor`s: one rule per reported invariant (and provider
rule), each with its texts and a `helpUri` to the spec section defining it.

The links are `<Source>/blob/main/specs/<page>#<anchor>`, `Source` being the
project's `[project.urls]` entry in pyproject.toml (read from the installed
metadata, so there is one place to change it); the driver's
`informationUri` is `Source` itself. An invariant is defined as a bullet
under a heading of its spec page; the anchor is that heading's GitHub slug.
`tests/cli/test_sarif_github.py` recomputes every anchor from `specs/`, so a
moved definition fails a test rather than a link.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from metis_model import BY_ID

__all__ = ["information_uri", "rule_descriptor", "spec_section"]

# The heading an invariant is defined under, where it is not its page's "Invariants".
_SECTION = {
    "AUTH-3": "the-tool-surface",
    "CHILD-4": "trees-of-traces",
    "CHILD-5": "trees-of-traces",
    "CHILD-6": "trees-of-traces",
    "CLOSE-8": "context-control",
}
# Rules that are not invariants: where closure.md explains them.
_OTHER = {
    "open-at-end": "closure.md#verdicts",
    "outside-slice": "closure.md#verdicts",
    "reader-warning": "closure.md#reading-and-what-is-refused",
}
PROVIDER_RULES = "closure.md#provider-rules"

_UNDECIDED_HELP = {
    "open-at-end": "The input ends on a call whose result is not written and nothing was sent "
    "after it: the session may be live, or cut. Allow it with --allow open-at-end.",
    "outside-slice": "The input starts in the middle of a session and a result there answers a "
    "call in an earlier file. Allow it with --allow outside-slice.",
}


@functools.cache
def information_uri() -> str | None:
    """The project's `Source` URL from its metadata (pyproject `[project.urls]`)."""
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        urls = metadata("metis").get_all("Project-URL") or []
    except PackageNotFoundError:
        return None
    for entry in urls:
        label, _, url = str(entry).partition(",")
        if label.strip().lower() == "source" and url.strip().startswith("https://"):
            return url.strip().rstrip("/")
    return None


def spec_section(rule: str) -> str:
    """`<page>#<anchor>` of the spec section that defines `rule` (an invariant ID,
    an undecided status, `reader-warning`)."""
    if rule in BY_ID:
        return f"{BY_ID[rule].spec}#{_SECTION.get(rule, 'invariants')}"
    return _OTHER.get(rule, "closure.md#verdicts")


def _help_uri(section: str) -> str | None:
    base = information_uri()
    return f"{base}/blob/main/specs/{section}" if base else None


def rule_descriptor(rule_id: str, invariant: str, provider_rule: str) -> dict[str, Any]:
    """The rule `rule_id` (`CLOSE-9/ANT-5`, `CLOSE-2`, `open-at-end`, ...)."""
    from metis_check.transcripts import BY_RULE

    statement = BY_ID[invariant].statement if invariant in BY_ID else invariant
    if invariant == "reader-warning":
        statement = "The reader repaired or skipped part of the input (the note says what)."
    full = help_text = statement
    section = spec_section(invariant)
    if provider_rule in BY_RULE:
        rule = BY_RULE[provider_rule]
        full = f"{statement} Provider rule {rule.id} ({rule.basis}): {rule.statement}"
        help_text = f"{full} Sources: {', '.join(rule.sources)}"
    elif invariant in _UNDECIDED_HELP:
        full = help_text = _UNDECIDED_HELP[invariant]
    uri = _help_uri(section)
    see = f"[specs/{section}]({uri})" if uri else f"`specs/{section}`"
    if provider_rule in BY_RULE:
        rules_uri = _help_uri(PROVIDER_RULES)
        where = (
            f"[specs/{PROVIDER_RULES}]({rules_uri})" if rules_uri else f"`specs/{PROVIDER_RULES}`"
        )
        see += f" (provider rule {provider_rule}: {where})"
    descriptor: dict[str, Any] = {
        "id": rule_id,
        # A Pascal-case identifier (SARIF Multitool's SARIF2012): Close9Ant5, OpenAtEnd.
        "name": "".join(part.capitalize() for part in re.split(r"[^A-Za-z0-9]+", rule_id)),
        "shortDescription": {"text": statement[:1000]},
        "fullDescription": {"text": full},
        "help": {"text": help_text, "markdown": f"{help_text}\n\nSee {see}."},
        "properties": {"tags": ["metis", invariant], "precision": "very-high"},
    }
    if uri is not None:
        descriptor["helpUri"] = uri
    return descriptor
