"""Paths as the gate sees them: resolved, then classified.

Every path is resolved through symlinks and `..` (`os.path.realpath`) before
any check, so `src/../.git/config` and a symlink into `~/.ssh` are seen for
what they are.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from collections.abc import Callable
from collections.abc import Iterable
from pathlib import Path

from .._realpath import settled_realpath

# Protected paths: Claude Code's whole list (https://code.claude.com/docs/en/
# permission-modes, "Protected paths"), plus metis's own: `.ssh`, `.gnupg`
# and the agent's folders `.metis` and `.claude` (all of them: settings,
# hooks, agents, skills, runs), which an agent could use to grant itself
# rights. `.claude/worktrees` holds working copies (the docs exempt it), and
# only the part of a path below the workspace counts: a child agent's
# workspace is a worktree under `.metis/runs/`.
PROTECTED_DIRS: frozenset[str] = frozenset(
    {
        ".git",
        ".vscode",
        ".idea",
        ".husky",
        ".cargo",
        ".devcontainer",
        ".yarn",
        ".mvn",
        ".claude",
        ".metis",
        ".ssh",
        ".gnupg",
    }
)
_PROTECTED_SUBDIRS = ((".config", "git"),)
_UNPROTECTED_SUBDIRS = frozenset({(".claude", "worktrees")})
# Files whose content runs code or configures tools that do (rc files, hooks,
# package-manager and build configuration).
PROTECTED_FILES: frozenset[str] = frozenset(
    {
        ".bashrc",
        ".bash_profile",
        ".bash_login",
        ".bash_logout",
        ".profile",
        ".zshrc",
        ".zshenv",
        ".zprofile",
        ".zlogin",
        ".zlogout",
        ".kshrc",
        ".cshrc",
        ".tcshrc",
        ".inputrc",
        ".gitconfig",
        ".gitmodules",
        ".envrc",
        ".npmrc",
        ".yarnrc",
        ".yarnrc.yml",
        ".pnp.cjs",
        ".pnp.loader.mjs",
        ".pnpmfile.cjs",
        "bunfig.toml",
        ".bunfig.toml",
        ".bazelrc",
        ".bazelversion",
        ".bazeliskrc",
        ".pre-commit-config.yaml",
        "lefthook.yml",
        "lefthook.yaml",
        ".lefthook.yml",
        ".lefthook.yaml",
        "gradle-wrapper.properties",
        "maven-wrapper.properties",
        ".devcontainer.json",
        ".ripgreprc",
        "pyrightconfig.json",
        ".mcp.json",
        ".claude.json",
    }
)

# Secret-looking file names (fnmatch, matched on the base name).
SECRET_PATTERNS: tuple[str, ...] = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.keystore",
    "*.jks",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "credentials*",
    ".netrc",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    "secrets.json",
    "secrets.yaml",
    "secrets.yml",
    "secrets.toml",
    "secrets.env",
)
# Templates meant to be committed; they hold no secrets.
_NOT_SECRET = (".env.example", ".env.sample", ".env.template", "*.pub")


def _any_of(patterns: Iterable[str]) -> Callable[[str], re.Match[str] | None]:
    """One regex for `any(fnmatch.fnmatchcase(name, p) for p in patterns)`."""
    return re.compile("|".join(fnmatch.translate(p) for p in patterns)).match


_secret_name = _any_of(SECRET_PATTERNS)
_not_secret_name = _any_of(_NOT_SECRET)


def resolve(path: str | os.PathLike[str], base: Path) -> Path:
    """`path` made absolute against `base`, `~` expanded, symlinks and `..` resolved."""
    text = os.path.expanduser(os.fspath(path))
    joined = text if os.path.isabs(text) else os.path.join(os.fspath(base), text)
    return Path(settled_realpath(joined))  # still changing: the caller's OSError


def lexical(path: str | os.PathLike[str], base: Path) -> Path:
    """`path` made absolute against `base`, `~` expanded and `..` folded, but
    symlinks not followed: the name a rule on a link's own path sees."""
    text = os.path.expanduser(os.fspath(path))
    joined = text if os.path.isabs(text) else os.path.join(os.fspath(base), text)
    return Path(posixpath.normpath(joined))


def is_protected(path: Path, roots: Iterable[Path] = (), workspace: Path | None = None) -> bool:
    """Whether changing `path` is bypass-immune (see module constants), or
    `path` is one of `roots` or below one (a run's own trace files). Inside
    `workspace`, only the parts below it count (a child's worktree may itself
    lie under the parent's `.metis/runs/`)."""
    parts = path.parts
    if workspace is not None:
        root = workspace.parts
        if parts[: len(root)] == root and len(parts) > len(root):
            parts = parts[len(root) :]
    for i, part in enumerate(parts):
        if part in PROTECTED_DIRS:
            if tuple(parts[i : i + 2]) in _UNPROTECTED_SUBDIRS and len(parts) > i + 2:
                continue  # inside a worktree: a working copy, not configuration
            return True
        if tuple(parts[i : i + 2]) in _PROTECTED_SUBDIRS:
            return True
    if roots and is_within(path, roots):
        return True
    return path.name in PROTECTED_FILES


def is_critical(path: Path, workspace: Path, home: Path) -> bool:
    """Whether removing `path` is never allowed by a rule: `/`, a child of
    `/`, the home directory, the workspace and its parents (permission-modes
    docs, "Critical paths")."""
    if len(path.parts) <= 2 or path == home:
        return True
    return path == workspace or path in workspace.parents


def is_secret(path: Path) -> bool:
    """Whether `path` looks like a secret (credentials, keys, `.env`)."""
    name = path.name
    if _not_secret_name(name) is not None:
        return False
    if _secret_name(name) is not None:
        return True
    return ".ssh" in path.parts and not name.endswith(".pub") and name != "known_hosts"


def is_within(path: Path, roots: Iterable[Path]) -> bool:
    """Whether `path` is one of `roots` or below one (all already resolved).

    `path == root or root in path.parents`, by parts: the parents are the
    prefixes of the parts (building them costs microseconds each); `.` has
    no parts and is a parent of relative paths only."""
    parts = path.parts
    for root in roots:
        prefix = root.parts
        if parts[: len(prefix)] == prefix and (prefix or not path.is_absolute()):
            return True
    return False


def glob_regex(pattern: str) -> str:
    """Translate a gitignore-style glob over absolute paths into a regex.

    `**/` matches zero or more directories, `/**` everything below, `*` and
    `?` stay within one segment, `[...]` is a class. A match on a directory
    covers everything beneath it, as in gitignore.
    """
    out: list[str] = []
    i = 0
    n = len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            close = pattern.find("]", i + 2)
            if close < 0:
                out.append(re.escape(c))
                i += 1
                continue
            body = pattern[i + 1 : close]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = close + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out) + "(?:/.*)?"


def has_glob(text: str) -> bool:
    return any(c in text for c in "*?[")


def real_prefix(pattern: str) -> str:
    """Resolve symlinks in the literal directory prefix of an absolute glob.

    Candidate paths are realpath'd, so the pattern's fixed part must be too
    (e.g. /tmp -> /private/tmp on macOS).
    """
    segments = pattern.split("/")
    literal: list[str] = []
    for seg in segments[:-1]:
        if has_glob(seg):
            break
        literal.append(seg)
    if len(literal) <= 1:
        return pattern
    prefix = "/".join(literal)
    rest = pattern[len(prefix) :]
    return posixpath.normpath(os.path.realpath(prefix)) + rest
