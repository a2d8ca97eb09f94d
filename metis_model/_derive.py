"""The reference fact-deriver: AUTH-4, "a decision's facts include those its
recorded settings give for the call".

PERM-1 checks that a decision follows from its facts; this checks the facts
themselves, from what the trace records and nothing the gate computed: the
rules the run read (the header's `meta.permissions`, written by the runtime
from its policy: every rule with its source, recency and anchor), the
workspace, the scope's roots and the protected list, and the call's input
(the `assistant` event). It is written from Claude Code's permission docs
(https://code.claude.com/docs/en/permissions, "Read and Edit", "Bash";
https://code.claude.com/docs/en/permission-modes, "Protected paths"; the
snapshot in `shared/reference/claude-code-permissions.md`) and specs/
permissions.md, and shares no code with `metis_runtime`.

It is one-sided. It derives only what it is sure of, and the recorded facts
must include it: every rule it finds matching, `protected`/`secret` where it
finds them true, `in_scope` false where it finds a path outside. Where it is
not sure it says nothing:

- a file tool's path counts only when the decision's footprint (`reads`,
  `writes`) names it as written: the tool resolved it to itself, so no
  symlink or alias stands between the name and the file; a deny or ask rule
  is matched against that name (the gate matches a link or its target);
- a Bash line only when `_derive_shell` reads it plainly; its deny and ask
  rules per simple command, Read/Edit deny and ask rules on `cat`/`head`/
  `tail` arguments and redirect targets, and `protected` for a redirect
  target (the gate checks a write's name and target); no `secret` (a name
  may be a link to anything) and no scope for Bash;
- allow rules only in their bare form (`Read`), for file tools, outside auto
  mode; never a tool-name glob, an MCP, domain, agent or parameter rule.
"""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Collection, Mapping
from typing import Any

from attrs import frozen

from ._derive_shell import Command, bash_rule_matches, split_line
from .trace import Facts, RuleBehavior, RuleRef, TraceHeader

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

META_KEY = "permissions"

_READ_GROUP = frozenset({"read", "grep", "glob", "ls"})
_EDIT_GROUP = frozenset({"edit", "write"})
_FILE_TOOLS = _READ_GROUP | _EDIT_GROUP
_SEARCH_TOOLS = frozenset({"grep", "glob", "ls"})  # default path: the workspace
# A bare `Tool` rule covers these tools (docs: Read rules cover the tools
# that read files, Edit rules every tool that edits them; a bare Write its tool).
_BARE_GROUPS: Mapping[str, frozenset[str]] = {"read": _READ_GROUP, "edit": _EDIT_GROUP}
_DENYING = (RuleBehavior.DENY, RuleBehavior.ASK)

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


@frozen
class Derived:
    """The facts the deriver is sure of, for one call."""

    rules: frozenset[RuleRef] = frozenset()
    protected: bool = False
    secret: bool = False
    out_of_scope: bool = False

    @property
    def empty(self) -> bool:
        return not (self.rules or self.protected or self.secret or self.out_of_scope)


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
    if spec is not None and _FIELD.match(spec) and not legacy:
        tool = ""  # a parameter rule `Tool(field:value)`: not derived
    return RecordedRule(ref=ref, tool=tool, spec=spec, base=base)


# --- paths ------------------------------------------------------------------


def _lexical(raw: str, workspace: str, home: str) -> str | None:
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


def _below(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def protected_path(path: str, recorded: Recorded) -> bool:
    if any(_below(path, p) for p in recorded.protected):
        return True
    ws = recorded.workspace
    rest = path[len(ws) :] if _below(path, ws) else path
    parts = [p for p in rest.split("/") if p]
    for i, part in enumerate(parts):
        if part == ".claude" and parts[i + 1 : i + 2] == ["worktrees"] and len(parts) > i + 2:
            continue
        if part in _PROTECTED_DIRS or (part == ".config" and parts[i + 1 : i + 2] == ["git"]):
            return True
    return bool(parts) and parts[-1] in _PROTECTED_FILES


def _secret(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    if any(fnmatch.fnmatchcase(name, p) for p in _NOT_SECRETS):
        return False
    return any(fnmatch.fnmatchcase(name, p) for p in _SECRETS)


# --- deriving -----------------------------------------------------------------


def _covers(rule: RecordedRule, tool: str) -> bool:
    """Whether a deny or ask rule's tool covers `tool` (path or bare form)."""
    if rule.spec is None:
        return tool in _BARE_GROUPS.get(rule.tool, frozenset({rule.tool}))
    if rule.tool == "read":
        return tool in _READ_GROUP or tool in _EDIT_GROUP  # a Read deny covers edits
    if rule.tool == "edit":
        return tool in _EDIT_GROUP
    return rule.tool in ("write", "glob") and tool == rule.tool


def derive(
    recorded: Recorded, tool: str, input: Mapping[str, Any], footprint: Collection[str]
) -> Derived:
    """The facts the recorded settings surely give for one call."""
    name = tool.lower()
    if name == "bash":
        return _derive_bash(recorded, input.get("command"))
    if name not in _FILE_TOOLS:
        return Derived()
    rules = {
        r.ref
        for r in recorded.rules
        if r.spec is None and _covers(r, name) and (r.ref.behavior in _DENYING or not recorded.auto)
    }
    raw = input.get("path")
    if raw is None and name in _SEARCH_TOOLS:
        path: str | None = recorded.workspace
    else:
        path = _lexical(raw, recorded.workspace, recorded.home) if isinstance(raw, str) else None
    if path is None or path not in footprint:
        return Derived(rules=frozenset(rules))
    rules |= {
        r.ref
        for r in recorded.rules
        if r.spec is not None
        and r.ref.behavior in _DENYING
        and _covers(r, name)
        and path_rule_matches(r, path, recorded)
    }
    return Derived(
        rules=frozenset(rules),
        protected=name in _EDIT_GROUP and protected_path(path, recorded),
        secret=_secret(path),
        out_of_scope=not any(_below(path, root) for root in recorded.roots),
    )


def _file_args(command: Command) -> list[str] | None:
    """The files `cat`, `head` or `tail` reads, when its options are plain."""
    argv = command.argv
    if not argv or argv[0] not in ("cat", "head", "tail"):
        return []
    out: list[str] = []
    skip = False
    for word in argv[1:]:
        if skip:
            skip = False
        elif argv[0] != "cat" and word in ("-n", "-c"):
            skip = True
        elif argv[0] != "cat" and re.fullmatch(r"-[nc]?[0-9]+", word):
            continue
        elif word.startswith("-"):
            if argv[0] != "cat":
                return None  # an option of head or tail not read here
        else:
            out.append(word)
    return out


def _derive_bash(recorded: Recorded, command: object) -> Derived:
    bash = [r for r in recorded.rules if r.tool == "bash" and r.ref.behavior in _DENYING]
    rules = {r.ref for r in bash if r.spec is None}
    commands = split_line(command) if isinstance(command, str) else None
    if commands is None:
        return Derived(rules=frozenset(rules))
    for cmd in commands:
        rules |= {r.ref for r in bash if r.spec is not None and bash_rule_matches(r.spec, cmd)}
    if any(c.argv[:1] and c.argv[0] in ("cd", "pushd", "popd") for c in commands):
        return Derived(rules=frozenset(rules))  # relative paths: from where?
    paths = [r for r in recorded.rules if r.spec is not None and r.ref.behavior in _DENYING]
    protected = False
    for cmd in commands:
        args = _file_args(cmd)
        reads = [_lexical(a, recorded.workspace, recorded.home) for a in args or ()]
        writes = [_lexical(w, recorded.workspace, recorded.home) for w in cmd.writes]
        for path in (p for p in reads if p is not None):
            rules |= {
                r.ref for r in paths if r.tool == "read" and path_rule_matches(r, path, recorded)
            }
        for path in (p for p in writes if p is not None):
            rules |= {
                r.ref
                for r in paths
                if r.tool in ("read", "edit") and path_rule_matches(r, path, recorded)
            }
            protected = protected or protected_path(path, recorded)
    return Derived(rules=frozenset(rules), protected=protected)


def facts_problem(
    recorded: Recorded,
    tool: str,
    input: Mapping[str, Any],
    facts: Facts,
    footprint: Collection[str],
) -> tuple[bool, str | None]:
    """AUTH-4 for one decision: (whether the deriver was sure of anything,
    the first fact the recorded facts lack, or None)."""
    derived = derive(recorded, tool, input, footprint)
    if derived.empty:
        return False, None
    missing = sorted(derived.rules - set(facts.rules), key=lambda r: r.recency)
    if missing:
        r = missing[0]
        return True, (
            f"the recorded settings give the {r.behavior.value} rule {r.pattern} "
            f"({r.source.value}, recency {r.recency}) for this {tool} call; its facts lack it"
        )
    if derived.protected and not facts.protected:
        return True, f"this {tool} call changes a protected path; its facts say protected=false"
    if derived.secret and not facts.secret:
        return True, f"this {tool} call reads a secret-looking path; its facts say secret=false"
    if derived.out_of_scope and facts.in_scope:
        return True, f"this {tool} call's path is outside every root; its facts say in_scope=true"
    return True, None
