"""Permission rules in Claude Code settings syntax, parsed and matched
(https://code.claude.com/docs/en/permissions, "Permission rule syntax").

Forms: `Tool` (every use) and tool-name globs (`*`, `mcp__*` in deny and
ask; in allow only after a literal `mcp__server__`); `Bash(pattern)`
(`_bashrule`); `Read(path)` for Read, Grep, Glob and LS, `Edit(path)` for
every editing tool (a Read deny or ask also covers edits of the path, an
Edit allow also grants reads); `Write(path)` and `Glob(path)` (never
consulted by Claude Code; here a deny or ask still applies to that one
tool, an allow never does); `WebFetch(domain:host)`; `Agent(type)` /
`Task(type)`; `Skill(name)` / `Skill(name *)`; parameter rules
`Tool(field:value)`; `mcp__server`, `mcp__server__*`, `mcp__server__tool`.

Matching comes in two strengths. A deny or ask rule matches when it *may*
match: a word only known at run time (`rm $x`) or arguments appended at run
time (`xargs rm`) are assumed to be whatever makes the rule match. An allow
rule matches only when it *surely* matches.
"""

from __future__ import annotations

import fnmatch
import functools
import ipaddress
import os
import posixpath
import re
from collections.abc import Callable
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from attrs import frozen

from metis_trace import RuleBehavior
from metis_trace import RuleRef
from metis_trace import Source

from ..shell import SimpleCommand
from ..shell import runner
from ..shell import trusted_name
from ._bashrule import BashPattern
from ._bashrule import compile_bash
from ._bashrule import may_match
from ._bashrule import surely_matches
from ._paths import glob_regex
from ._paths import real_prefix


class RuleSyntaxError(ValueError):
    """A rule's text is malformed; the caller adds the place."""


class SpecKind(StrEnum):
    ANY = "any"  # bare `Tool`
    BASH = "bash"
    PATH = "path"
    DOMAIN = "domain"
    PARAM = "param"  # `Tool(field:value)`
    NAME = "name"  # `Agent(type)`, `Skill(name)`


READ_TOOLS = frozenset({"read", "ls", "glob", "grep", "notebookread", "lsp"})
EDIT_TOOLS = frozenset({"edit", "write", "multiedit", "notebookedit"})
_TOOL_GROUPS: dict[str, frozenset[str]] = {
    "read": READ_TOOLS,
    "edit": EDIT_TOOLS,
    "bash": frozenset({"bash", "monitor"}),
    "webfetch": frozenset({"webfetch", "web_fetch", "fetch"}),
    "websearch": frozenset({"websearch", "web_search"}),
    # Older names real files still carry, and the tool each names today:
    # `Task` is `Agent` (renamed v2.1.63; "Task" still matches the Agent tool,
    # anthropics/claude-code#29677); `KillShell` is `TaskStop` (its input
    # schema keeps `shell_id`, "Deprecated: use task_id instead", for the
    # deprecated KillShell tool; Claude Code 2.1.168's tool description).
    "agent": frozenset({"agent", "task"}),
    "task": frozenset({"agent", "task"}),
    "taskstop": frozenset({"taskstop", "killshell"}),
    "killshell": frozenset({"taskstop", "killshell"}),
}
_PATH_TOOLS = frozenset({"read", "edit", "write", "glob", "multiedit", "notebookedit"})
_NAME_TOOLS = {"agent": "subagent_type", "task": "subagent_type", "skill": "skill"}
_BARE_ONLY = frozenset({"websearch"})
# Input fields a parameter rule may name, per tool (tools-reference); an MCP
# or unknown tool may name any field.
_PARAM_FIELDS: dict[str, frozenset[str]] = {
    "bash": frozenset({"timeout", "description", "run_in_background", "dangerouslyDisableSandbox"}),
    "agent": frozenset(
        {
            "subagent_type",
            "model",
            "description",
            "prompt",
            "run_in_background",
            "isolation",
            "mode",
            "name",
            "team_name",
        }
    ),
    "read": frozenset({"offset", "limit", "pages"}),
    "edit": frozenset({"old_string", "new_string", "replace_all"}),
    "write": frozenset({"content"}),
    "grep": frozenset({"pattern", "glob", "type", "output_mode", "head_limit", "multiline"}),
    "glob": frozenset({"pattern"}),
    "webfetch": frozenset({"prompt"}),
    "websearch": frozenset({"query", "allowed_domains", "blocked_domains"}),
    "notebookedit": frozenset({"cell_id", "new_source", "cell_type", "edit_mode"}),
    "skill": frozenset({"args"}),
}
_PARAM_FIELDS["task"] = _PARAM_FIELDS["agent"]
# Fields Claude Code ignores in a parameter rule (with a warning); here a
# deny or ask on them matches the raw field, which is stricter.
PRIMARY_FIELDS = frozenset({"command", "file_path", "path", "notebook_path", "url"})

_RULE = re.compile(r"(?P<tool>[A-Za-z*][A-Za-z0-9_*-]*)(?:\((?P<spec>.*)\))?", re.DOTALL)
_PARAM = re.compile(r"(?P<field>[A-Za-z_][A-Za-z0-9_]*):(?P<value>.*)", re.DOTALL)
_LABEL = re.compile(r"[a-z0-9_*]([a-z0-9_*-]*[a-z0-9_*])?")  # `_` as hosts in the wild have it


@frozen
class RuleSpec:
    text: str
    tool: str  # as written
    kind: SpecKind
    bash: BashPattern | None = None
    path: str | None = None
    domain: str | None = None
    field: str | None = None  # PARAM: the input field; NAME: the field holding the name
    value: str | None = None  # PARAM / NAME: the glob

    @property
    def tool_glob(self) -> bool:
        return "*" in self.tool

    @property
    def group(self) -> frozenset[str]:
        lower = self.tool.lower()
        if lower == "write" and self.kind is SpecKind.ANY:
            return frozenset({"write"})  # a bare `Write` matches that tool
        if lower in ("write", "glob", "multiedit", "notebookedit") and self.kind is SpecKind.PATH:
            return frozenset({lower})
        return _TOOL_GROUPS.get(lower, frozenset({lower}))


def parse_rule(text: str, behavior: RuleBehavior | None = None) -> RuleSpec:
    """Parse one rule; raise RuleSyntaxError with a one-line reason.

    `behavior` (when known) checks what only some lists accept: tool globs
    other than `mcp__server__...` in allow rules (Claude Code skips them with
    a warning: here they are an error)."""
    if not isinstance(text, str):
        raise RuleSyntaxError(f"a rule must be a string, not {type(text).__name__}")
    stripped = text.strip()
    m = _RULE.fullmatch(stripped)
    if m is None:
        raise RuleSyntaxError(f"malformed rule {text!r}: expected Tool or Tool(specifier)")
    tool = m.group("tool")
    spec = m.group("spec")
    lower = tool.lower()
    if "*" in tool:
        _check_tool_glob(tool, text, behavior)
        if spec is not None:
            raise RuleSyntaxError(f"malformed rule {text!r}: a tool-name glob takes no specifier")
        return RuleSpec(text=stripped, tool=tool, kind=SpecKind.ANY)
    if spec is None:
        return RuleSpec(text=stripped, tool=tool, kind=SpecKind.ANY)
    spec = spec.strip()
    if not spec:
        raise RuleSyntaxError(f"malformed rule {text!r}: empty specifier")
    if "\x00" in spec:
        raise RuleSyntaxError(f"malformed rule {text!r}: NUL in specifier")
    if spec == "*":
        # `Tool(*)` is `Tool` for every tool (permissions docs: "`Bash(*)` is
        # equivalent to `Bash`"; real files write `Read(*)`, `Task(*)`,
        # `Skill(*)`, `mcp__server__tool(*)`).
        return RuleSpec(text=stripped, tool=tool, kind=SpecKind.ANY)
    param = _param(lower, spec)
    if param is not None:
        field, value = param
        return RuleSpec(text=stripped, tool=tool, kind=SpecKind.PARAM, field=field, value=value)
    if lower in ("bash", "monitor"):
        return RuleSpec(text=stripped, tool=tool, kind=SpecKind.BASH, bash=compile_bash(spec))
    if lower in _PATH_TOOLS:
        return RuleSpec(text=stripped, tool=tool, kind=SpecKind.PATH, path=spec)
    if lower == "webfetch":
        return RuleSpec(text=stripped, tool=tool, kind=SpecKind.DOMAIN, domain=_domain(spec, text))
    if lower in _NAME_TOOLS:
        return RuleSpec(
            text=stripped, tool=tool, kind=SpecKind.NAME, field=_NAME_TOOLS[lower], value=spec
        )
    if lower.startswith("mcp__") or lower in _BARE_ONLY:
        raise RuleSyntaxError(f"rule {text!r}: tool {tool!r} takes no specifier")
    raise RuleSyntaxError(f"rule {text!r}: tool {tool!r} takes no specifier")


def _check_tool_glob(tool: str, text: str, behavior: RuleBehavior | None) -> None:
    if behavior is RuleBehavior.ALLOW:
        m = re.fullmatch(r"mcp__([A-Za-z0-9_-]+?)__(.*)", tool)
        if m is None or "*" in m.group(1):
            raise RuleSyntaxError(
                f"rule {text!r}: an allow rule's tool-name glob must follow a literal "
                "mcp__<server>__ (Claude Code skips it)"
            )


def _param(tool: str, spec: str) -> tuple[str, str] | None:
    """`field:value` when `field` is an input field of `tool` (the legacy
    Bash `:*` suffix stays a command prefix: `Bash(timeout:*)`)."""
    m = _PARAM.fullmatch(spec)
    if m is None:
        return None
    field, value = m.group("field"), m.group("value")
    if tool in ("bash", "monitor") and value == "*":
        return None
    if tool == "webfetch" and field == "domain":
        return None
    known = _PARAM_FIELDS.get(tool)
    if known is None:
        return (field, value) if tool.startswith("mcp__") else None
    return (field, value) if field in known or field in PRIMARY_FIELDS else None


_IPV6 = re.compile(r"\[(?P<addr>[0-9a-f:.]+)\](?::(?P<port>[0-9]+))?")


def _domain(spec: str, text: str) -> str:
    """The host (and port) of a `domain:` specifier, lower-cased. An IPv6
    literal is written in brackets, as in a URL (`domain:[::1]`,
    `domain:[::1]:8080`; RFC 3986 section 3.2.2) and kept compressed."""
    if not spec.startswith("domain:") or not spec[len("domain:") :].strip():
        raise RuleSyntaxError(f"malformed rule {text!r}: expected WebFetch(domain:HOST)")
    domain = spec[len("domain:") :].strip().lower().rstrip(".")
    v6 = _IPV6.fullmatch(domain)
    if v6 is not None:
        try:
            addr = ipaddress.IPv6Address(v6.group("addr"))
        except ValueError:
            raise RuleSyntaxError(f"malformed rule {text!r}: bad IPv6 address") from None
        port = v6.group("port")
        return f"[{addr.compressed}]" + (f":{port}" if port else "")
    host, _, port = domain.partition(":")
    if port and not port.isdigit():
        raise RuleSyntaxError(f"malformed rule {text!r}: bad port {port!r}")
    if host != "*" and not all(_LABEL.fullmatch(label) for label in host.split(".")):
        raise RuleSyntaxError(f"malformed rule {text!r}: bad domain {domain!r}")
    return domain


# --- bash matching ----------------------------------------------------------

# Claude Code's allow rules see past these leading assignments only; any
# other keeps an allow from matching (the docs name LANG, TZ, NO_COLOR and
# publish no list: the stricter reading keeps to those).
SAFE_ENV = frozenset({"LANG", "TZ", "NO_COLOR"})

_Form = tuple[tuple[str, ...], tuple[bool, ...]]


def _deny_forms(cmd: SimpleCommand) -> list[_Form]:
    """Deny and ask see the command under each suffix of its wrappers, the
    effective command, its basename form and its subcommand form."""
    argv = cmd.argv
    dyn = tuple(cmd.is_dynamic(i) for i in range(len(argv)))
    forms: list[_Form] = []
    for i in range(len(cmd.wrappers)):
        words = tuple(w for wrapper in cmd.wrappers[i:] for w in wrapper)
        forms.append((words + argv, (False,) * len(words) + dyn))
    forms.append((argv, dyn))
    if argv and "/" in argv[0]:
        forms.append(((posixpath.basename(argv[0]), *argv[1:]), dyn))
    if cmd.subcommand:
        forms.append((cmd.subcommand, (False,) * len(cmd.subcommand)))
    if cmd.unknown_options and argv:
        # Global options metis does not know: any later word may be the subcommand.
        head = (posixpath.basename(argv[0]),)
        for k in range(1, len(argv)):
            if dyn[k] or not argv[k].startswith("-"):
                forms.append((head + argv[k:], (False, *dyn[k:])))
    return forms


def _allow_forms(cmd: SimpleCommand) -> tuple[list[_Form], bool]:
    """The forms an allow rule must match, and whether only an exact rule
    may (a runner Claude Code approves by exact rule only: watch, setsid,
    ionice, flock). Wrappers Claude Code strips are dropped; any other
    runner stays part of the command (`Bash(sudo:*)` allows `sudo rm x`)."""
    kept: list[str] = []
    exact_only = False
    for wrapper in cmd.wrappers:
        spec = runner(posixpath.basename(wrapper[0])) if wrapper else None
        if spec is not None and (spec.strip or (spec.strip_bare and len(wrapper) == 1)):
            continue
        if (spec is not None and spec.exact_only) or posixpath.basename(wrapper[0]) == "find":
            exact_only = True  # watch, setsid, ionice, flock; what find -exec runs
        kept.extend(wrapper)
    argv = cmd.argv
    dyn = tuple(cmd.is_dynamic(i) for i in range(len(argv)))
    head: tuple[str, ...] = tuple(kept)
    forms: list[_Form] = [(head + argv, (False,) * len(head) + dyn)]
    if argv and "/" in argv[0]:
        name = trusted_name(argv[0])
        if name:
            forms.append(((*head, name, *argv[1:]), (False,) * len(head) + dyn))
    if cmd.subcommand and argv[:1] == ("git",):
        # `git -C p log` matches `Bash(git log:*)` (changelog 2.1.0)
        forms.append((head + cmd.subcommand, (False,) * (len(head) + len(cmd.subcommand))))
    return forms, exact_only


def bash_matches(pattern: BashPattern, cmd: SimpleCommand, definite: bool) -> bool:
    """Whether a Bash rule matches one simple command (see module doc)."""
    if not definite:
        return any(
            may_match(pattern, words, dyn, cmd.open_ended) for words, dyn in _deny_forms(cmd)
        )
    if any(name not in SAFE_ENV for name in cmd.env):
        return False
    forms, exact_only = _allow_forms(cmd)
    if (exact_only or cmd.exact_only) and not pattern.exact:
        return False
    return any(surely_matches(pattern, words, dyn, cmd.open_ended) for words, dyn in forms)


# --- path, domain, name and parameter matching ---------------------------------


def path_regex(pattern: str, base: Path, any_depth: bool = False, cwd: Path | None = None) -> str:
    """The regex of a path rule's glob, anchored as Claude Code settings do
    (https://code.claude.com/docs/en/permissions, "Read and Edit").

    `//abs` is absolute, `~/x` is under the home directory, `/x` is relative
    to the rule's base (its settings source's root), `./x` and `x` to the
    current directory `cwd` (the base when not given). A bare name with no
    inner slash (`.env`, `*.pem`) matches at any depth below it, as in
    gitignore. With `any_depth` (deny and ask rules) such a name matches at
    any depth anywhere, and so does a single directory (`src/**` matches
    every `src`; an allow covers `<cwd>/src` only, v2.1.214).
    """
    here = os.fspath(cwd) if cwd is not None else os.fspath(base)
    return _path_regex(pattern, os.fspath(base), here, os.path.expanduser("~"), any_depth)


@functools.lru_cache(maxsize=2048)
def _path_regex(pattern: str, root: str, cwd: str, home: str, any_depth: bool) -> str:
    root = posixpath.normpath(os.path.realpath(root))
    base = posixpath.normpath(os.path.realpath(cwd))
    if pattern.startswith("//"):
        absolute = "/" + pattern.lstrip("/")
    elif pattern == "~" or pattern.startswith("~/"):
        absolute = home + pattern[1:]
    elif pattern.startswith("/"):
        absolute = root + pattern
    elif pattern.startswith("./") or pattern.startswith("../"):
        absolute = base + "/" + pattern
    else:
        body = pattern.rstrip("/")
        single_dir = re.fullmatch(r"[^/]+/\*\*", body) is not None
        if "/" not in body or (any_depth and single_dir):
            prefix = "(?:.*/)?" if any_depth else re.escape(base) + "/(?:[^/]*/)*"
            return prefix + glob_regex(body)
        absolute = base + "/" + pattern
    absolute = absolute.rstrip("/") or "/"
    return glob_regex(real_prefix(posixpath.normpath(absolute)))


def path_matches(
    pattern: str, path: Path, base: Path, any_depth: bool = False, cwd: Path | None = None
) -> bool:
    return _fullmatch(path_regex(pattern, base, any_depth, cwd))(path.as_posix()) is not None


def path_under_matches(pattern: str, root: Path, base: Path, cwd: Path | None = None) -> bool:
    """Whether a deny/ask path rule may match `root` or a path below it (a
    search or recursive read rooted there): the rule's fixed directory part
    is `root`, inside it, or contains it."""
    regex = path_regex(pattern, base, True, cwd)
    text = root.as_posix()
    if _fullmatch(regex)(text) is not None or _fullmatch(regex)(text + "/\x01") is not None:
        return True
    literal = re.match(r"(?:\\.|[^\\.*?(\[])+", regex)
    if literal is None:
        return False
    fixed = re.sub(r"\\(.)", r"\1", literal.group(0)).rstrip("/")
    return fixed.startswith(text.rstrip("/") + "/")


@functools.lru_cache(maxsize=2048)
def _fullmatch(regex: str) -> Callable[[str], re.Match[str] | None]:
    return re.compile(regex, re.DOTALL).fullmatch


def _label_match(pattern: str, label: str) -> bool:
    return fnmatch.fnmatchcase(label, pattern)


def domain_matches(domain: str, url: object) -> bool | None:
    """Whether `url`'s host matches a `domain:` specifier; None if unknown.

    Hostnames compare case-insensitively, a trailing `.` ignored; `*.ex.com`
    matches subdomains at any depth but not `ex.com`; elsewhere `*` spans one
    label (`ex.*` matches `ex.org`, not `ex.evil.com`); `*` alone any host.
    """
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
    if domain.startswith("["):  # an IPv6 literal: compare addresses, not text
        want_addr, _, after = domain[1:].partition("]")
        if after and str(port or "") != after.removeprefix(":"):
            return False
        try:
            return ipaddress.IPv6Address(host) == ipaddress.IPv6Address(want_addr)
        except ValueError:
            return False  # the URL's host is a name or IPv4: not this address
    want, _, want_port = domain.partition(":")
    if want_port and str(port or "") != want_port:
        return False
    if want == "*":
        return True
    labels = host.split(".")
    if want.startswith("*."):
        rest = want[2:].split(".")
        if len(labels) <= len(rest):
            return False
        tail = labels[len(labels) - len(rest) :]
        return all(_label_match(p, label) for p, label in zip(rest, tail, strict=True))
    pats = want.split(".")
    return len(pats) == len(labels) and all(
        _label_match(p, label) for p, label in zip(pats, labels, strict=True)
    )


def mcp_matches(rule_tool: str, tool: str) -> bool:
    """`mcp__server` and `mcp__server__*` cover every tool of the server;
    `mcp__server__tool` one; other globs match the whole name."""
    rule = rule_tool.lower()
    name = tool.lower()
    # `mcp__server__*` is the server form; `mcp__*` (no server) is a plain glob
    # over every MCP tool, as deny and ask rules write it (permissions docs).
    if rule.endswith("__*") and "*" not in rule[:-3] and rule[:-3].count("__") == 1:
        rule = rule[:-3]
    elif "*" in rule:
        return fnmatch.fnmatchcase(name, rule)
    if name == rule:
        return True
    return rule.count("__") == 1 and name.startswith(rule + "__")


def _scalar(value: object) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    return None  # not a top-level scalar: never matches


def param_matches(spec: RuleSpec, tool_input: Mapping[str, Any]) -> bool:
    """A parameter or name rule: the raw field, `*` a wildcard, else exact.
    An omitted field never matches."""
    assert spec.field is not None and spec.value is not None
    got = _scalar(tool_input.get(spec.field)) if spec.field in tool_input else None
    if got is None:
        return False
    if spec.kind is SpecKind.NAME and spec.tool.lower() == "skill" and spec.value.endswith(" *"):
        prefix = spec.value[:-2]
        return got == prefix or got.startswith(prefix + " ")
    return fnmatch.fnmatchcase(got, spec.value) if "*" in spec.value else got == spec.value


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
        spec = self.spec
        written = spec.tool.lower()
        if written.startswith("mcp__") or spec.tool_glob:
            return mcp_matches(spec.tool, lower)
        if lower in spec.group:
            return True
        if (
            spec.kind is SpecKind.PATH
            and written == "read"
            and self.behavior is not RuleBehavior.ALLOW
        ):
            return lower in EDIT_TOOLS  # a Read deny or ask also covers edits of the path
        if spec.kind is SpecKind.PATH and written == "edit" and self.behavior is RuleBehavior.ALLOW:
            return lower in READ_TOOLS  # an Edit allow also grants reads
        return False
