"""Permission rules in Claude Code settings syntax, parsed and matched.

Forms: `Tool` (every use), `Bash(git status:*)` (prefix on words),
`Bash(npm run test)` (exact), `Bash(npm run *)` (wildcard), `Read(path-glob)`,
`Edit(path-glob)`, `Write(path-glob)` (an alias of `Edit`),
`WebFetch(domain:example.com)` and `mcp__server` / `mcp__server__tool`.

Matching comes in two strengths. A deny or ask rule matches when it *may*
match: a word only known at run time (`rm $x`) or arguments appended at run
time (`xargs rm`) are assumed to be whatever makes the rule match. An allow
rule matches only when it *surely* matches.
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
import shlex
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from urllib.parse import urlsplit

from attrs import frozen

from metis_model.trace import RuleBehavior, RuleRef, Source

from ..shell import SimpleCommand, trusted_name
from ._paths import glob_regex, real_prefix


class RuleSyntaxError(ValueError):
    """A rule's text is malformed; the caller adds the place."""


class SpecKind(StrEnum):
    ANY = "any"  # bare `Tool`
    BASH = "bash"
    PATH = "path"
    DOMAIN = "domain"


# Rule tool name (lower case) -> runtime tool names it covers.
_READ_TOOLS = frozenset({"read", "ls", "glob", "grep", "notebookread"})
_EDIT_TOOLS = frozenset({"edit", "write", "multiedit", "notebookedit"})
_TOOL_GROUPS: dict[str, frozenset[str]] = {
    "read": _READ_TOOLS,
    "edit": _EDIT_TOOLS,
    "write": _EDIT_TOOLS,
    "bash": frozenset({"bash"}),
    "webfetch": frozenset({"webfetch", "web_fetch", "fetch"}),
}
_PATH_TOOLS = frozenset({"read", "edit", "write"})

_RULE = re.compile(r"(?P<tool>[A-Za-z][A-Za-z0-9_-]*)(?:\((?P<spec>.*)\))?", re.DOTALL)


@frozen
class BashPattern:
    """`tokens` for prefix/exact forms; `regex` for wildcard forms."""

    form: str  # any | prefix | exact | wildcard
    tokens: tuple[str, ...] = ()
    regex: str = ""
    literal_head: tuple[str, ...] = ()  # wildcard: whole words before the first `*`


@frozen
class RuleSpec:
    text: str
    tool: str  # as written
    kind: SpecKind
    bash: BashPattern | None = None
    path: str | None = None
    domain: str | None = None

    @property
    def group(self) -> frozenset[str]:
        lower = self.tool.lower()
        return _TOOL_GROUPS.get(lower, frozenset({lower}))


def parse_rule(text: str) -> RuleSpec:
    """Parse one rule; raise RuleSyntaxError with a one-line reason."""
    if not isinstance(text, str):
        raise RuleSyntaxError(f"a rule must be a string, not {type(text).__name__}")
    stripped = text.strip()
    m = _RULE.fullmatch(stripped)
    if m is None:
        raise RuleSyntaxError(f"malformed rule {text!r}: expected Tool or Tool(specifier)")
    tool = m.group("tool")
    spec = m.group("spec")
    if spec is None:
        return RuleSpec(text=stripped, tool=tool, kind=SpecKind.ANY)
    spec = spec.strip()
    if not spec:
        raise RuleSyntaxError(f"malformed rule {text!r}: empty specifier")
    lower = tool.lower()
    if lower == "bash" and spec == "*":
        return RuleSpec(text=stripped, tool=tool, kind=SpecKind.ANY)  # Bash(*) is Bash
    if lower == "bash":
        return RuleSpec(text=stripped, tool=tool, kind=SpecKind.BASH, bash=_bash_pattern(spec))
    if lower in _PATH_TOOLS:
        if "\x00" in spec:
            raise RuleSyntaxError(f"malformed rule {text!r}: NUL in path")
        return RuleSpec(text=stripped, tool=tool, kind=SpecKind.PATH, path=spec)
    if lower == "webfetch":
        if not spec.startswith("domain:") or not spec[len("domain:") :].strip():
            raise RuleSyntaxError(f"malformed rule {text!r}: expected WebFetch(domain:HOST)")
        domain = spec[len("domain:") :].strip().lower()
        if not re.fullmatch(r"(\*\.)?[a-z0-9.-]+(:\d+)?", domain):
            raise RuleSyntaxError(f"malformed rule {text!r}: bad domain {domain!r}")
        return RuleSpec(text=stripped, tool=tool, kind=SpecKind.DOMAIN, domain=domain)
    raise RuleSyntaxError(f"rule {text!r}: tool {tool!r} takes no specifier")


def _split(spec: str) -> tuple[str, ...]:
    try:
        return tuple(shlex.split(spec))
    except ValueError as exc:
        raise RuleSyntaxError(f"Bash({spec}): {exc}") from None


def _bash_pattern(spec: str) -> BashPattern:
    if spec.endswith(":*"):
        prefix = spec[:-2]
        if "*" in prefix or not prefix.strip():
            raise RuleSyntaxError(f"Bash({spec}): ':*' needs a literal prefix before it")
        return BashPattern(form="prefix", tokens=_split(prefix))
    if ":*" in spec:
        raise RuleSyntaxError(f"Bash({spec}): ':*' is only allowed at the end")
    if "*" not in spec:
        return BashPattern(form="exact", tokens=_split(spec))
    # Wildcard form: `*` is any text; a trailing ` *` may also match nothing.
    body = " ".join(spec.split())
    tail = body.endswith(" *")
    core = body[:-2] if tail else body
    regex = ".*".join(re.escape(part) for part in core.split("*"))
    if tail:
        regex += "(?: .*)?"
    words = body.split(" ")
    head: list[str] = []
    for w in words:
        if "*" in w:
            break
        head.append(w)
    return BashPattern(form="wildcard", regex=regex, literal_head=tuple(head))


# --- bash matching ----------------------------------------------------------


def _forms(cmd: SimpleCommand, definite: bool) -> list[tuple[tuple[str, ...], tuple[bool, ...]]]:
    """The word sequences a rule is matched against.

    The effective command, and the command with each suffix of its wrappers
    (so `Bash(sudo:*)` sees `sudo rm x`). For allow, a privileged wrapper
    (sudo, doas) must be part of what the rule names.
    """
    forms: list[tuple[tuple[str, ...], tuple[bool, ...]]] = []
    argv = cmd.argv
    dyn = tuple(cmd.is_dynamic(i) for i in range(len(argv)))
    privileged = [
        i for i, w in enumerate(cmd.wrappers) if w and posixpath.basename(w[0]) in {"sudo", "doas"}
    ]
    last_privileged = privileged[-1] if privileged else None
    for i in range(len(cmd.wrappers)):
        if definite and last_privileged is not None and i > last_privileged:
            break
        words = tuple(w for wrapper in cmd.wrappers[i:] for w in wrapper)
        forms.append((words + argv, (False,) * len(words) + dyn))
    if not definite or last_privileged is None:
        forms.append((argv, dyn))
    if argv and "/" in argv[0]:
        # `/bin/rm` is `rm` to a rule; for allow only when it is a system path.
        name = posixpath.basename(argv[0]) if not definite else trusted_name(argv[0])
        if name and (not definite or last_privileged is None):
            forms.append(((name, *argv[1:]), dyn))
    return forms


def bash_matches(pattern: BashPattern, cmd: SimpleCommand, definite: bool) -> bool:
    """Whether a Bash rule matches one simple command (see module doc)."""
    if pattern.form == "any":
        return True
    return any(
        _form_matches(pattern, words, dyn, cmd.open_ended, definite)
        for words, dyn in _forms(cmd, definite)
    )


def _form_matches(
    pattern: BashPattern,
    words: tuple[str, ...],
    dyn: tuple[bool, ...],
    open_ended: bool,
    definite: bool,
) -> bool:
    if pattern.form == "wildcard":
        if definite:
            if open_ended or any(dyn):
                return False
            return re.fullmatch(pattern.regex, " ".join(words)) is not None
        if not open_ended and not any(dyn):
            return re.fullmatch(pattern.regex, " ".join(words)) is not None
        # Over-approximate: only the literal words before the first `*` count.
        return _possible(pattern.literal_head, words, dyn, open_ended, prefix=True)
    prefix = pattern.form == "prefix"
    if definite:
        n = len(pattern.tokens)
        if len(words) < n or any(dyn[:n]) or words[:n] != pattern.tokens:
            return False
        return prefix or (len(words) == n and not open_ended)
    return _possible(pattern.tokens, words, dyn, open_ended, prefix=prefix)


def _possible(
    tokens: tuple[str, ...],
    words: tuple[str, ...],
    dyn: tuple[bool, ...],
    open_ended: bool,
    prefix: bool,
) -> bool:
    """Whether some run-time value of the dynamic words makes the rule match.

    A dynamic word may expand to any number of words (field splitting, globs,
    an empty expansion).
    """

    @functools.cache
    def go(i: int, j: int) -> bool:
        if i == len(tokens):
            return prefix or all(dyn[j:])
        if j == len(words):
            return open_ended
        if dyn[j]:
            # consume 0..k pattern tokens with this word, or drop the word
            return any(go(k, j + 1) for k in range(i, len(tokens) + 1))
        return words[j] == tokens[i] and go(i + 1, j + 1)

    return go(0, 0)


# --- path and domain matching -----------------------------------------------


def path_regex(pattern: str, base: Path) -> str:
    """The regex of a path rule's glob, anchored as Claude Code settings do.

    `//abs` is absolute, `~/x` is under the home directory, `/x` and `./x` are
    relative to the rule's base (the settings file's project root), and a
    bare name with no inner slash (`.env`, `*.pem`) matches at any depth
    below the base, as in gitignore.
    """
    return _path_regex(pattern, os.fspath(base), os.path.expanduser("~"))


@functools.lru_cache(maxsize=1024)
def _path_regex(pattern: str, base: str, home: str) -> str:
    base = posixpath.normpath(os.path.realpath(base))
    if pattern.startswith("//"):
        absolute = "/" + pattern.lstrip("/")
        anchored = True
    elif pattern == "~" or pattern.startswith("~/"):
        absolute = home + pattern[1:]
        anchored = True
    elif pattern.startswith("/"):
        absolute = base + pattern
        anchored = True
    elif pattern.startswith("./") or pattern.startswith("../"):
        absolute = base + "/" + pattern
        anchored = True
    else:
        anchored = "/" in pattern.rstrip("/")
        absolute = base + "/" + pattern
    absolute = absolute.rstrip("/") or "/"
    if anchored:
        absolute = real_prefix(_normalize(absolute))
        return glob_regex(absolute)
    return re.escape(base) + "/(?:[^/]*/)*" + glob_regex(pattern.rstrip("/"))


def _normalize(path: str) -> str:
    # normpath keeps `**` and `*` intact; it folds `./` and `a/..`.
    return posixpath.normpath(path)


def path_matches(pattern: str, path: Path, base: Path) -> bool:
    return _fullmatch(path_regex(pattern, base))(path.as_posix()) is not None


@functools.lru_cache(maxsize=1024)
def _fullmatch(regex: str) -> Callable[[str], re.Match[str] | None]:
    return re.compile(regex).fullmatch


def domain_matches(domain: str, url: object) -> bool | None:
    """Whether `url`'s host is `domain` (or under `*.domain`); None if unknown."""
    if not isinstance(url, str):
        return None
    try:
        parts = urlsplit(url if "://" in url else "//" + url)
        host = (parts.hostname or "").lower().rstrip(".")
        port = parts.port
    except ValueError:
        return None
    if not re.fullmatch(r"[a-z0-9._:-]+", host):
        return None  # no host, or not one: the rule may or may not be about it
    want, _, want_port = domain.partition(":")
    if want_port and str(port or "") != want_port:
        return False
    if want.startswith("*."):
        suffix = want[1:]
        return host.endswith(suffix) and host != suffix[1:]
    return host == want


def mcp_matches(rule_tool: str, tool: str) -> bool:
    """`mcp__server` and `mcp__server__*` cover every tool of the server."""
    rule = rule_tool.lower()
    name = tool.lower()
    if rule.endswith("__*"):
        rule = rule[:-3]
    if name == rule:
        return True
    return rule.count("__") == 1 and name.startswith(rule + "__")


@frozen
class Rule:
    """A rule in a policy: its text, behaviour, source, recency and base dir."""

    spec: RuleSpec
    behavior: RuleBehavior
    source: Source
    recency: int
    base: Path | None = None  # None: relative paths resolve against the workspace
    origin: str = ""  # where it was written, for messages

    @property
    def pattern(self) -> str:
        return self.spec.text

    def ref(self) -> RuleRef:
        return RuleRef(
            behavior=self.behavior, source=self.source, pattern=self.spec.text, recency=self.recency
        )

    def applies_to(self, tool: str) -> bool:
        lower = tool.lower()
        if self.spec.tool.lower().startswith("mcp__"):
            return mcp_matches(self.spec.tool, lower)
        return lower in self.spec.group
