"""What a trace header records of the gate (`meta.permissions`), read for
the reference fact-deriver (AUTH-4, `_derive`), and the deriver's path
matching: the documented anchoring forms and gitignore globs
(https://code.claude.com/docs/en/permissions, "Read and Edit"), the
protected list (https://code.claude.com/docs/en/permission-modes,
"Protected paths") and secret-looking names (specs/permissions.md). Written
from the docs, sharing no code with `metis_runtime`.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Mapping

from attrs import frozen

from metis_trace import RuleRef, TraceHeader

__all__ = [
    "META_KEY",
    "Recorded",
    "RecordedRule",
    "below",
    "is_secret",
    "lexical",
    "parse_recorded_rule",
    "path_rule_matches",
    "protected_path",
    "recorded_permissions",
]

META_KEY = "permissions"


# Protected paths: the permission-modes docs' list, plus metis's `.ssh`,
# `.gnupg` and `.metis` (specs/permissions.md, Facts); counted below the
# workspace only, `.claude/worktrees/...` exempt.
_PROTECTED_DIRS = frozenset(
    {".git", ".vscode", ".idea", ".husky", ".cargo", ".devcontainer", ".yarn", ".mvn"}
    | {".claude", ".metis", ".ssh", ".gnupg"}
)
_PROTECTED_FILES = frozenset(
    {".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zshenv", ".zprofile"}
    | {".gitconfig", ".gitmodules", ".envrc", ".npmrc", ".mcp.json", ".claude.json"}
)
# Secret-looking names (specs/permissions.md: `.env`, keys, credentials).
_SECRETS = (".env", ".env.*", "*.pem", "*.key", "id_rsa*", "id_ed25519*", "credentials*")
_NOT_SECRETS = (".env.example", ".env.sample", ".env.template", "*.pub")


@frozen
class RecordedRule:
    ref: RuleRef
    tool: str  # the rule's tool, lower case
    spec: str | None  # what the parentheses hold; None for a bare rule
    base: str  # where `/x` anchors


@frozen
class Recorded:
    """What the trace header records of the gate's settings."""

    workspace: str
    home: str
    roots: tuple[str, ...]
    protected: tuple[str, ...]
    auto: bool
    rules: tuple[RecordedRule, ...]


_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*:")
_RULE_TEXT = re.compile(r"([A-Za-z][A-Za-z0-9_-]*)(?:\((.*)\))?", re.DOTALL)


def _abs_path(value: object) -> str | None:
    return (
        value if isinstance(value, str) and value.startswith("/") and "\x00" not in value else None
    )


def recorded_permissions(header: TraceHeader | None) -> Recorded | None:
    """The header's `meta.permissions`; None when absent or not as written by
    the runtime (an older trace: AUTH-4 is then not exercised)."""
    meta = header.meta.get(META_KEY) if header is not None else None
    if not isinstance(meta, Mapping):
        return None
    workspace, home = _abs_path(meta.get("workspace")), _abs_path(meta.get("home"))
    roots, protected = meta.get("roots"), meta.get("protected")
    raw_rules = meta.get("rules")
    if workspace is None or home is None or not isinstance(raw_rules, list):
        return None
    if not isinstance(roots, list) or not isinstance(protected, list):
        return None
    if any(_abs_path(p) is None for p in (*roots, *protected)):
        return None
    rules: list[RecordedRule] = []
    for item in raw_rules:
        rule = parse_recorded_rule(item, workspace)
        if rule is None:
            return None
        rules.append(rule)
    return Recorded(
        workspace=workspace,
        home=home,
        roots=tuple(roots),
        protected=tuple(protected),
        auto=meta.get("auto") is True,
        rules=tuple(rules),
    )


def parse_recorded_rule(item: object, workspace: str) -> RecordedRule | None:
    if not isinstance(item, Mapping):
        return None
    try:  # validated as the trace's own RuleRef: strict types, known members
        ref = RuleRef.model_validate(
            {k: item.get(k) for k in ("behavior", "source", "pattern", "recency")}, strict=False
        )
    except ValueError:
        return None
    if not isinstance(item.get("recency"), int) or not isinstance(item.get("pattern"), str):
        return None
    base = item.get("base")
    base = workspace if base is None else _abs_path(base)
    if base is None:
        return None
    m = _RULE_TEXT.fullmatch(ref.pattern.strip())
    tool, spec = (m.group(1).lower(), m.group(2)) if m is not None else ("", None)
    spec = spec.strip() if spec is not None else None
    if spec == "*" and tool in ("bash", "read", "edit"):
        spec = None  # `Bash(*)` is `Bash`
    legacy = tool == "bash" and spec is not None and spec.endswith(":*") and spec.count(":") == 1
    domain = tool == "webfetch" and spec is not None and spec.startswith("domain:")
    if spec is not None and _FIELD.match(spec) and not legacy and not domain:
        tool = ""  # a parameter rule `Tool(field:value)`: not derived
    return RecordedRule(ref=ref, tool=tool, spec=spec, base=base)


# --- paths ------------------------------------------------------------------


def lexical(raw: str, workspace: str, home: str) -> str | None:
    """`raw` made absolute against the workspace, `..` folded, no symlink followed."""
    if not raw or "\x00" in raw or raw.startswith("//"):
        return None
    if raw == "~" or raw.startswith("~/"):
        raw = home + raw[1:]
    elif raw.startswith("~"):
        return None  # another user's home
    joined = raw if raw.startswith("/") else workspace + "/" + raw
    return posixpath.normpath(joined)


def _glob(pattern: str) -> str | None:
    """A gitignore-style glob over absolute paths as a regex: `**/` any
    directories, `/**` all below, `*` and `?` within one segment; a match
    covers what lies below. None for a character class (not read here)."""
    if "[" in pattern:
        return None
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            c = pattern[i]
            out.append("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c))
            i += 1
    return "".join(out) + "(?:/.*)?"


def path_rule_matches(rule: RecordedRule, path: str, recorded: Recorded) -> bool:
    """A deny or ask path rule against an absolute path, anchored as the docs
    say: `//abs`, `~/x` the home, `/x` the settings file's root, `./x` and
    `x` the working directory; a name without an inner slash at any depth,
    and for deny and ask a single directory (`src/**`) too."""
    pattern = rule.spec or ""
    if pattern.startswith("//"):
        full = "/" + pattern.lstrip("/")
    elif pattern == "~" or pattern.startswith("~/"):
        full = recorded.home + pattern[1:]
    elif pattern.startswith("/"):
        full = rule.base + pattern
    elif pattern.startswith(("./", "../")):
        full = recorded.workspace + "/" + pattern
    else:
        body = pattern.rstrip("/")
        if "/" not in body or re.fullmatch(r"[^/]+/\*\*", body):
            glob = _glob(body)
            return glob is not None and re.fullmatch("(?:.*/)?" + glob, path, re.DOTALL) is not None
        full = recorded.workspace + "/" + pattern
    glob = _glob(posixpath.normpath(full.rstrip("/") or "/"))
    return glob is not None and re.fullmatch(glob, path, re.DOTALL) is not None


def below(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def protected_path(path: str, recorded: Recorded) -> bool:
    if any(below(path, p) for p in recorded.protected):
        return True
    ws = recorded.workspace
    rest = path[len(ws) :] if below(path, ws) else path
    parts = [p for p in rest.split("/") if p]
    for i, part in enumerate(parts):
        if part == ".claude" and parts[i + 1 : i + 2] == ["worktrees"] and len(parts) > i + 2:
            continue
        if part in _PROTECTED_DIRS or (part == ".config" and parts[i + 1 : i + 2] == ["git"]):
            return True
    return bool(parts) and parts[-1] in _PROTECTED_FILES


def is_secret(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    if any(fnmatch.fnmatchcase(name, p) for p in _NOT_SECRETS):
        return False
    return any(fnmatch.fnmatchcase(name, p) for p in _SECRETS)
