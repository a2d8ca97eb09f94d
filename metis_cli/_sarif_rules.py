"""SARIF `reportingDescriptor`s: one rule per reported invariant (and provider
rule), each with its texts: `shortDescription`, `fullDescription` and
`help` (text and markdown) from the invariant's statement in specs/, and the
spec section that defines it.

metis has no public home yet, so no URL is made up: `helpUri` and the
driver's `informationUri` are written only when `METIS_SOURCE_URL` names the
repository (an `https://` URL of a GitHub-style host); the links are then
`<url>/blob/main/specs/<page>#<anchor>` and `<url>` itself. Without it, the
help's markdown names the spec section as a path (`specs/closure.md#...`).
An invariant is defined as a bullet under a heading of its spec page; the
anchor is that heading's GitHub slug. `tests/cli/test_sarif_github.py`
recomputes every anchor from `specs/`, so a moved definition fails a test
rather than a link.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from typing import Any
from urllib.parse import urlsplit

from metis_model import BY_ID

__all__ = ["SOURCE_URL", "information_uri", "rule_descriptor", "settings_rule", "spec_section"]

SOURCE_URL = "METIS_SOURCE_URL"

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


def information_uri() -> str | None:
    """The repository URL `METIS_SOURCE_URL` configures, or None (no link is written)."""
    url = os.environ.get(SOURCE_URL, "").strip()
    if not url:
        return None
    return _checked(url)


@functools.cache
def _checked(url: str) -> str | None:
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.netloc or parts.query or parts.fragment:
        # Said once per value: every rule would otherwise repeat it.
        print(
            f"warning: {SOURCE_URL}={url!r} is not an https URL of a repository; "
            "no helpUri or informationUri is written",
            file=sys.stderr,
        )
        return None
    return url.rstrip("/")


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


_SETTINGS_SECTION = "permissions.md#metis-settings-check"


def settings_rule(kind: str, text: str) -> dict[str, Any]:
    """A `metis settings check` finding kind (`settings/shadowed`, ...) as a rule."""
    uri = _help_uri(_SETTINGS_SECTION)
    see = f"[specs/{_SETTINGS_SECTION}]({uri})" if uri else f"`specs/{_SETTINGS_SECTION}`"
    descriptor: dict[str, Any] = {
        "id": f"settings/{kind}",
        "name": "Settings" + "".join(part.capitalize() for part in kind.split("-")),
        "shortDescription": {"text": text},
        "fullDescription": {"text": text},
        "help": {"text": text, "markdown": f"{text}\n\nSee {see}."},
        "properties": {"tags": ["metis", "settings"]},
    }
    if uri is not None:
        descriptor["helpUri"] = uri
    return descriptor
