"""`WebFetch(domain:h)` rules against a call's URL, for the reference
fact-deriver (AUTH-4).

Written from Claude Code's permission docs (https://code.claude.com/docs/en/
permissions, "WebFetch"; the snapshot in
`shared/reference/claude-code-permissions.md`): the rule names a hostname,
compared case-insensitively with a trailing `.` ignored; `*.ex.com` matches
subdomains at any depth and not `ex.com` itself; elsewhere `*` spans one
label; `domain:*` is any host. It shares no code with
`metis_runtime/permissions`. One-sided: a URL whose host it cannot read
for certain, or a rule with a port, an IPv6 literal or other syntax, says
nothing (None).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

__all__ = ["domain_rule_matches"]

_HOST = re.compile(r"[a-z0-9-]+(?:\.[a-z0-9-]+)*")
_PATTERN = re.compile(r"(?:\*|[a-z0-9*-]+)(?:\.(?:\*|[a-z0-9*-]+))*")


def _host(url: object) -> str | None:
    if not isinstance(url, str) or not url.lower().startswith(("http://", "https://")):
        return None
    try:
        parts = urlsplit(url)
        host = parts.hostname
        _ = parts.port  # a bad port: not a URL read here
    except ValueError:
        return None
    if host is None:
        return None
    host = host.lower().rstrip(".")
    return host if _HOST.fullmatch(host) else None


def _label(pattern: str, label: str) -> bool:
    regex = "[a-z0-9-]*".join(re.escape(part) for part in pattern.split("*"))
    return re.fullmatch(regex, label) is not None


def domain_rule_matches(spec: str, url: object) -> bool | None:
    """Whether the rule `WebFetch(spec)` surely matches (True) or surely does
    not (False) a fetch of `url`; None when not sure."""
    if not spec.startswith("domain:"):
        return None
    want = spec[len("domain:") :].lower().rstrip(".")
    host = _host(url)
    if host is None or not _PATTERN.fullmatch(want):
        return None
    if want == "*":
        return True
    labels = host.split(".")
    if want.startswith("*."):
        rest = want[2:].split(".")
        if "*" in want[2:]:
            return None  # a wildcard below a subdomain wildcard: not documented
        return len(labels) > len(rest) and labels[len(labels) - len(rest) :] == rest
    parts = want.split(".")
    return len(parts) == len(labels) and all(
        _label(p, h) for p, h in zip(parts, labels, strict=True)
    )
