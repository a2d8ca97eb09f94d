"""The reference fact-deriver: AUTH-4, "a decision's facts include those its
recorded settings give for the call", from what the trace records (the
header's `meta.permissions`) and the call's input, never from what the gate
computed; it shares no code with `metis_runtime`. Written from Claude Code's
docs (https://code.claude.com/docs/en/permissions: the tools' rules, the
anchoring forms and gitignore globs of "Read and Edit"; .../permission-modes,
"Protected paths"; the snapshot in `shared/reference/claude-code-permissions.md`)
and specs/permissions.md ("Facts derived from the recorded settings";
secret-looking names). One-sided: it derives only what it is sure of.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Collection
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from attrs import astuple
from attrs import frozen

from metis_trace import Facts
from metis_trace import RuleBehavior
from metis_trace import RuleRef
from metis_trace import ToolKind
from metis_trace import TraceHeader

from ._derive_shell import bash_rule_matches
from ._derive_shell import split_line
from ._derive_shell import surely_writes

__all__ = [
    "Derived",
    "Recorded",
    "RecordedRule",
    "derive",
    "facts_problem",
    "parse_recorded_rule",
    "path_rule_matches",
    "protected_path",
    "recorded_permissions",
]

_READ_GROUP = frozenset({"read", "grep", "glob", "ls"})
_EDIT_GROUP = frozenset({"edit", "write"})
_FILE_TOOLS = _READ_GROUP | _EDIT_GROUP
_SEARCH_TOOLS = frozenset({"grep", "glob", "ls"})  # default path: the workspace
# A bare `Tool` rule covers these tools (docs: Read rules cover the tools
# that read files, Edit rules every tool that edits them; a bare Write its tool).
_BARE_GROUPS: Mapping[str, frozenset[str]] = {"read": _READ_GROUP, "edit": _EDIT_GROUP}
_DENYING = (RuleBehavior.DENY, RuleBehavior.ASK)
_GLOBS = frozenset("*?[]{}\\")
# A line that may change folder or expand a name: its relative targets are not read.
_MOVES = re.compile(r"\b(?:cd|pushd|popd)\b|[`$]")
_HOST = re.compile(r"[a-z0-9-]+(?:\.[a-z0-9-]+)*")
_DOMAIN = re.compile(r"(?:\*|[a-z0-9*-]+)(?:\.(?:\*|[a-z0-9*-]+))*")

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
_FIELD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*:")
_RULE_TEXT = re.compile(r"([A-Za-z][A-Za-z0-9_-]*)(?:\((.*)\))?", re.DOTALL)
# A gitignore-style glob over absolute paths: `**/` any directories, `/**`
# all below, `*` and `?` within one segment.
_GLOB_PARTS = {"**/": "(?:[^/]*/)*", "**": ".*", "*": "[^/]*", "?": "[^/]"}


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


@frozen
class Derived:
    """The facts the deriver is sure of, for one call."""

    rules: frozenset[RuleRef] = frozenset()
    protected: bool = False
    secret: bool = False
    out_of_scope: bool = False
    writes: str | None = None  # why a Bash line may change a file: not read_only
    # Rules (any behaviour) that surely do not match the call: never its facts'.
    unmatched: frozenset[RuleRef] = frozenset()

    @property
    def empty(self) -> bool:
        return not any(astuple(self, recurse=False))


def _abs_path(value: object) -> str | None:
    return (
        value if isinstance(value, str) and value.startswith("/") and "\x00" not in value else None
    )


def recorded_permissions(header: TraceHeader | None) -> Recorded | None:
    """The header's `meta.permissions`; None when absent or not as written by
    the runtime (an older trace: AUTH-4 is then not exercised)."""
    meta = header.meta.get("permissions") if header is not None else None
    if not isinstance(meta, Mapping):
        return None
    workspace, home = _abs_path(meta.get("workspace")), _abs_path(meta.get("home"))
    roots, protected, items = meta.get("roots"), meta.get("protected"), meta.get("rules")
    if workspace is None or home is None or not isinstance(items, list):
        return None
    if not isinstance(roots, list) or not isinstance(protected, list):
        return None
    if any(_abs_path(p) is None for p in (*roots, *protected)):
        return None
    rules = tuple(r for r in (parse_recorded_rule(i, workspace) for i in items) if r is not None)
    if len(rules) < len(items):
        return None
    auto = meta.get("auto") is True
    return Recorded(workspace, home, tuple(roots), tuple(protected), auto, rules)


def parse_recorded_rule(item: object, workspace: str) -> RecordedRule | None:
    if not isinstance(item, Mapping):
        return None
    try:  # validated as the trace's own RuleRef: strict types, known members
        ref = RuleRef.model_validate(
            {k: item.get(k) for k in ("behavior", "source", "pattern", "recency")}, strict=False
        )
    except ValueError:
        return None
    base = workspace if item.get("base") is None else _abs_path(item.get("base"))
    if not isinstance(item.get("recency"), int) or not isinstance(item.get("pattern"), str):
        return None
    m = _RULE_TEXT.fullmatch(ref.pattern.strip())
    tool = m.group(1).lower() if m is not None else ""
    spec = m.group(2).strip() if m is not None and m.group(2) is not None else None
    if spec == "*" and tool in ("bash", "read", "edit"):
        spec = None  # `Bash(*)` is `Bash`
    # A parameter rule `Tool(field:value)` is not derived; a legacy `Bash(x:*)`
    # and a `WebFetch(domain:h)` are no parameter rules.
    if spec is not None and _FIELD.match(spec):
        legacy = tool == "bash" and spec.endswith(":*") and spec.count(":") == 1
        if not legacy and not (tool == "webfetch" and spec.startswith("domain:")):
            tool = ""
    return None if base is None else RecordedRule(ref=ref, tool=tool, spec=spec, base=base)


def derive(
    recorded: Recorded, tool: str, input: Mapping[str, Any], footprint: Collection[str]
) -> Derived:
    """The facts the recorded settings surely give for one call."""
    name = tool.lower()
    if name == "bash":
        return _derive_bash(recorded, input.get("command"))
    if name == "webfetch":
        return _derive_fetch(recorded, input.get("url"))
    if name not in _FILE_TOOLS:
        return Derived()
    bare = [r for r in recorded.rules if r.spec is None and _covers(r, name)]
    rules = {r.ref for r in bare if r.ref.behavior in _DENYING or not recorded.auto}
    raw = input.get("path")
    if raw is None and name in _SEARCH_TOOLS:
        path: str | None = recorded.workspace
    else:
        path = lexical(raw, recorded) if isinstance(raw, str) else None
    if path is None or path not in footprint:  # a symlink or an alias: not the file named
        return Derived(rules=frozenset(rules))
    return Derived(
        rules=frozenset(rules | _path_rules(recorded, path, name)),
        protected=name in _EDIT_GROUP and protected_path(path, recorded),
        secret=is_secret(path),
        out_of_scope=not any(below(path, root) for root in recorded.roots),
    )


def facts_problem(
    recorded: Recorded,
    tool: str,
    input: Mapping[str, Any],
    facts: Facts,
    footprint: Collection[str],
    writes: Collection[str] | None = None,
) -> tuple[bool, str | None]:
    """AUTH-4 for one decision: (whether the deriver was sure of anything, the
    first fact the recorded facts lack, or None). `writes`, where the decision
    records its write footprint: not empty for a line that may write (a
    path-by-path comparison would need the symlinks the runtime resolved)."""
    derived = derive(recorded, tool, input, footprint)
    if derived.empty:
        return False, None
    r = min(derived.rules - set(facts.rules), key=lambda r: r.recency, default=None)
    if r is not None:
        return True, (
            f"the recorded settings give the {r.behavior.value} rule {r.pattern} "
            f"({r.source.value}, recency {r.recency}) for this {tool} call; its facts lack it"
        )
    r = min(derived.unmatched & set(facts.rules), key=lambda r: r.recency, default=None)
    if r is not None:
        return True, (
            f"its facts hold the {r.behavior.value} rule {r.pattern}, which does not match"
            f" this {tool} call"
        )
    if derived.protected and not facts.protected:
        return True, f"this {tool} call changes a protected path; its facts say protected=false"
    if derived.secret and not facts.secret:
        return True, f"this {tool} call reads a secret-looking path; its facts say secret=false"
    if derived.out_of_scope and facts.in_scope:
        return True, f"this {tool} call's path is outside every root; its facts say in_scope=true"
    if derived.writes is not None and facts.kind is ToolKind.READ_ONLY:
        return True, f"this {tool} line may write ({derived.writes}); its facts say read_only"
    if derived.writes is not None and writes is not None and not writes:
        return True, f"this {tool} line may write ({derived.writes}); it records no write"
    return True, None


def _derive_bash(recorded: Recorded, command: object) -> Derived:
    """Each simple command's deny and ask Bash rules, the Read rules over the
    files it reads, the Read and Edit rules and protected list over those it writes."""
    line = command if isinstance(command, str) else ""  # not a line: nothing read
    bash = [r for r in recorded.rules if r.tool == "bash" and r.ref.behavior in _DENYING]
    rules = {r.ref for r in bash if r.spec is None}
    commands = split_line(line) or []
    for cmd in commands:
        rules |= {r.ref for r in bash if r.spec is not None and bash_rule_matches(r.spec, cmd)}
    # After a `cd`, relative paths: from where?
    moved = any(c.argv[:1] in (("cd",), ("pushd",), ("popd",)) for c in commands)
    reads = [] if moved else [name for c in commands for name in c.reads]
    targets = [] if moved else [name for c in commands for name in c.writes]
    writes = surely_writes(line)
    if writes is not None and _MOVES.search(line) is None:
        targets += [t for t in writes.targets if not set(t) & _GLOBS]
    read = [p for p in (lexical(name, recorded) for name in reads) if p is not None]
    written = [p for p in (lexical(name, recorded) for name in targets) if p is not None]
    rules |= {ref for p in read for ref in _path_rules(recorded, p, "read")}
    rules |= {ref for p in written for ref in _path_rules(recorded, p, "edit")}
    return Derived(
        rules=frozenset(rules),
        protected=any(protected_path(p, recorded) for p in written),
        writes=writes.reason if writes is not None else None,
    )


def _derive_fetch(recorded: Recorded, url: object) -> Derived:
    """Bare `WebFetch` denials and asks, and `domain:` rules: the deny and
    ask rules that surely match, and every rule that surely does not."""
    rules, unmatched = set(), set()
    for r in (r for r in recorded.rules if r.tool == "webfetch"):
        matches = True if r.spec is None else domain_rule_matches(r.spec, url)
        if matches is True and r.ref.behavior in _DENYING:
            rules.add(r.ref)
        elif matches is False:
            unmatched.add(r.ref)
    return Derived(rules=frozenset(rules), unmatched=frozenset(unmatched))


def domain_rule_matches(spec: str, url: object) -> bool | None:
    """Whether the rule `WebFetch(spec)` surely matches (True) or surely does
    not (False) a fetch of `url`, as the docs say (WebFetch): `domain:h`
    names a hostname, compared case-insensitively with a trailing `.`
    ignored; `*.ex.com` matches subdomains at any depth, not `ex.com`
    itself; elsewhere `*` spans one label; `domain:*` is any host. None when
    not sure: a URL whose host it cannot read, a rule with a port, an IPv6
    literal or other syntax, a wildcard below `*.` (not documented)."""
    if not isinstance(url, str) or not url.lower().startswith(("http://", "https://")):
        return None
    try:
        parts = urlsplit(url)
        host, _ = (parts.hostname or "").lower().rstrip("."), parts.port  # a bad port: unread
    except ValueError:
        return None
    want = spec.removeprefix("domain:").lower().rstrip(".")
    if not spec.startswith("domain:") or not _HOST.fullmatch(host) or not _DOMAIN.fullmatch(want):
        return None
    if want == "*":
        return True
    subdomains = want.startswith("*.")
    if subdomains and "*" in want[2:]:
        return None
    labels = want.removeprefix("*.").split(".")
    regex = r"\.".join("[a-z0-9-]*".join(map(re.escape, label.split("*"))) for label in labels)
    return re.fullmatch(r"(?:[a-z0-9-]+\.)+" * subdomains + regex, host) is not None


def _covers(rule: RecordedRule, tool: str) -> bool:
    """Whether a deny or ask rule's tool covers `tool` (path or bare form)."""
    if rule.spec is None:
        return tool in _BARE_GROUPS.get(rule.tool, frozenset({rule.tool}))
    if rule.tool == "read":
        return tool in _FILE_TOOLS  # a Read deny covers edits
    if rule.tool == "edit":
        return tool in _EDIT_GROUP
    return rule.tool in ("write", "glob") and tool == rule.tool


def _path_rules(recorded: Recorded, path: str, tool: str) -> set[RuleRef]:
    """The deny and ask path rules over `path` that cover `tool`."""
    rules = [r for r in recorded.rules if r.spec is not None and r.ref.behavior in _DENYING]
    return {r.ref for r in rules if _covers(r, tool) and path_rule_matches(r, path, recorded)}


def lexical(raw: str, recorded: Recorded) -> str | None:
    """`raw` made absolute against the workspace, `..` folded, no symlink followed."""
    if not raw or "\x00" in raw or raw.startswith("//"):
        return None
    if raw == "~" or raw.startswith("~/"):
        raw = recorded.home + raw[1:]
    elif raw.startswith("~"):
        return None  # another user's home
    return posixpath.normpath(raw if raw.startswith("/") else recorded.workspace + "/" + raw)


def _glob_matches(pattern: str, path: str, anywhere: bool = False) -> bool:
    """Whether `path`, or a folder it lies below, matches the glob `pattern`
    (`anywhere`: at any depth). False for a character class (not read here)."""
    if "[" in pattern:
        return False
    parts = re.finditer(r"\*\*/|\*\*|\*|\?|[^*?]+", pattern)
    glob = "".join(_GLOB_PARTS.get(m[0], re.escape(m[0])) for m in parts)
    prefix = "(?:.*/)?" if anywhere else ""
    return re.fullmatch(prefix + glob + "(?:/.*)?", path, re.DOTALL) is not None


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
            return _glob_matches(body, path, anywhere=True)
        full = recorded.workspace + "/" + pattern
    return _glob_matches(posixpath.normpath(full.rstrip("/") or "/"), path)


def below(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def protected_path(path: str, recorded: Recorded) -> bool:
    if any(below(path, p) for p in recorded.protected):
        return True
    ws = recorded.workspace
    parts = [p for p in (path[len(ws) :] if below(path, ws) else path).split("/") if p]
    for i, part in enumerate(parts):
        if part == ".claude" and parts[i + 1 : i + 2] == ["worktrees"] and len(parts) > i + 2:
            continue
        if part in _PROTECTED_DIRS or (part == ".config" and parts[i + 1 : i + 2] == ["git"]):
            return True
    return bool(parts) and parts[-1] in _PROTECTED_FILES


def is_secret(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    secret = any(fnmatch.fnmatchcase(name, p) for p in _SECRETS)
    return secret and not any(fnmatch.fnmatchcase(name, p) for p in _NOT_SECRETS)
