"""Settings files and the policy that aggregates their rules.

A settings file is shaped like Claude Code's `settings.json`
(https://code.claude.com/docs/en/settings-reference):

    {"permissions": {"allow": [...], "ask": [...], "deny": [...],
                     "defaultMode": "default", "additionalDirectories": [...],
                     "disableBypassPermissionsMode": "disable",
                     "disableAutoMode": "disable",
                     "allowManagedPermissionRulesOnly": true}}

Other top-level keys belong to other features and are ignored (but a
top-level `disableAutoMode`, which the docs allow there too). Invalid JSON,
or a file that is not an object, stops with one line naming the file. Inside
`permissions` nothing else refuses the file, as in Claude Code: a rule metis
cannot read is a warning and the rest applies, but a lost `deny` or `ask`
fails closed as an ask on its tool (`_salvage`); an unknown key is a warning
(one holding a list is read as lost rules); an unknown `defaultMode` or a
bad `additionalDirectories` entry is a warning and ignored; a
`disableBypassPermissionsMode` or `disableAutoMode` other than `"disable"`
is a warning and still disables (its author meant to close the mode).
`defaultMode` takes every mode the docs list: `manual` is `default`, and
`auto` runs as `acceptEdits` with broad allow rules suspended
(specs/permissions.md, "Modes").
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from attrs import evolve
from attrs import field
from attrs import frozen

from metis_trace import AUTHORITY
from metis_trace import Mode
from metis_trace import RuleBehavior
from metis_trace import Source

from .._errors import ConfigError
from ._rules import Rule
from ._rules import RuleSyntaxError
from ._rules import parse_rule
from ._salvage import LostRule
from ._salvage import read_rule_list
from ._salvage import unknown_key_rules

_LISTS: tuple[tuple[str, RuleBehavior], ...] = (
    ("allow", RuleBehavior.ALLOW),
    ("ask", RuleBehavior.ASK),
    ("deny", RuleBehavior.DENY),
)
_KNOWN_KEYS = frozenset(
    {
        "allow",
        "ask",
        "deny",
        "defaultMode",
        "additionalDirectories",
        "disableBypassPermissionsMode",
        "disableAutoMode",
        "allowManagedPermissionRulesOnly",
    }
)
# Claude Code's mode names, onto the model's modes (`auto`: acceptEdits with
# broad allows suspended; `manual`: the label of default, v2.1.200+).
MODE_NAMES: dict[str, Mode] = {
    **{m.value: m for m in Mode},
    "manual": Mode.DEFAULT,
    "auto": Mode.ACCEPT_EDITS,
}


def parse_mode(text: object, where: str) -> tuple[Mode, bool]:
    """A mode name as the docs list them: the model's mode, and whether it is
    `auto`. ConfigError names `where`."""
    if not isinstance(text, str) or text not in MODE_NAMES:
        choices = ", ".join(MODE_NAMES)
        raise ConfigError(f"{where}: unknown mode {text!r} (one of {choices})")
    return MODE_NAMES[text], text == "auto"


_AGENT_DIRS = frozenset({".metis", ".claude"})
_INDEX_MAX = 1024  # tool names kept in a policy's rule index


def settings_root(path: Path) -> Path:
    """The project root a settings file's relative rules are anchored at.

    `<root>/.metis/settings.json` and `<root>/.claude/settings.local.json` give
    `<root>`; any other file gives its own directory.
    """
    parent = path.absolute().parent
    return parent.parent if parent.name in _AGENT_DIRS else parent


@frozen
class Settings:
    """The permission part of one settings file, validated."""

    path: Path
    root: Path
    allow: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    default_mode: Mode | None = None
    additional_directories: tuple[Path, ...] = ()
    disable_bypass: bool = False
    auto: bool = False  # defaultMode was `auto` (default_mode is then acceptEdits)
    disable_auto: bool = False
    managed_only: bool = False  # allowManagedPermissionRulesOnly
    lost: tuple[LostRule, ...] = ()  # rules not read (a deny or ask: an ask stands in)
    notes: tuple[str, ...] = ()  # other things ignored, one line each
    # The file's other top-level keys, as read: the MCP setup takes its
    # approval and policy keys from here (one reader of the hierarchy).
    other: Mapping[str, Any] = field(factory=dict, eq=False, repr=False)

    @property
    def warnings(self) -> tuple[str, ...]:
        """Every line worth telling the user about this file, in file order."""
        return (*(lost.warning() for lost in self.lost), *self.notes)

    def rules(self, behavior: RuleBehavior) -> tuple[str, ...]:
        return {"allow": self.allow, "ask": self.ask, "deny": self.deny}[behavior.value]

    def rules_count(self) -> int:
        return len(self.allow) + len(self.ask) + len(self.deny) + len(self.lost)

    def without_rules(self) -> Settings:
        return evolve(self, allow=(), ask=(), deny=(), lost=())

    def without_mode(self) -> Settings:
        return evolve(self, default_mode=None, auto=False)


def load_settings(path: str | os.PathLike[str], root: Path | None = None) -> Settings:
    """Read and validate a settings file; ConfigError names the file and field."""
    from metis_trace import InputError
    from metis_trace import decode_json

    from .._input import read_input_text

    p = Path(path)
    try:  # bounded, regular files only (`-` is standard input), strict UTF-8
        text = read_input_text(path)
    except InputError as exc:
        reason = exc.message
        if reason.startswith("cannot read (") and reason.endswith(")"):
            reason = reason.removeprefix("cannot read (").removesuffix(")")
        raise ConfigError(f"{p}: cannot read settings: {reason}") from None
    try:  # strict JSON: no NaN, no huge integers, no repeated keys, bounded depth
        data = decode_json(text, source=str(p))
    except InputError as exc:
        try:
            json.loads(text)
        except json.JSONDecodeError as plain:
            raise ConfigError(
                f"{p}: invalid JSON at line {plain.lineno} column {plain.colno}: {plain.msg}"
            ) from None
        except (RecursionError, ValueError):  # too deep, or too many digits: the strict message
            pass
        raise ConfigError(exc.describe(str(p))) from None
    return settings_from_mapping(data, p, root)


def settings_from_mapping(data: object, path: Path, root: Path | None = None) -> Settings:
    """Validate already-parsed settings data (named `path` in messages);
    `root` is where `/x` path rules anchor (default: `settings_root`)."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: settings must be a JSON object")
    root = root if root is not None else settings_root(path)
    notes: list[str] = []
    lost: list[LostRule] = []
    perms = data.get("permissions", {})
    if not isinstance(perms, Mapping):
        # Nothing in it can be read: a non-empty one may have held a deny.
        if perms not in (None, [], "", False):
            lost.extend(read_rule_list([perms], path, "permissions", None)[1])
        else:
            notes.append(f"{path}: permissions: must be an object, ignored")
        perms = {}
    unknown_notes, unknown_lost = unknown_key_rules(perms, _KNOWN_KEYS, path)
    notes.extend(unknown_notes)
    lists: dict[str, tuple[str, ...]] = {}
    for name, behavior in _LISTS:
        kept, lost_here = read_rule_list(perms.get(name, []), path, f"permissions.{name}", behavior)
        lists[name] = kept
        lost.extend(lost_here)
    lost.extend(unknown_lost)
    mode = perms.get("defaultMode")
    default_mode: Mode | None = None
    auto = False
    if mode is not None:
        try:
            default_mode, auto = parse_mode(mode, f"{path}: permissions.defaultMode")
        except ConfigError as exc:
            notes.append(f"{exc}, ignored")
    dirs: list[str] = []
    raw_dirs = perms.get("additionalDirectories", [])
    if not isinstance(raw_dirs, list):
        notes.append(f"{path}: permissions.additionalDirectories: must be a list, ignored")
        raw_dirs = []
    for i, item in enumerate(raw_dirs):
        if isinstance(item, str) and "\x00" in item:
            notes.append(
                f"{path}: permissions.additionalDirectories[{i}]: contains a NUL byte, ignored"
            )
        elif isinstance(item, str) and item:
            dirs.append(item)
        else:
            notes.append(
                f"{path}: permissions.additionalDirectories[{i}]: {item!r} is not a path, ignored"
            )
    disable = perms.get("disableBypassPermissionsMode")
    if disable not in (None, "disable"):
        notes.append(
            f"{path}: permissions.disableBypassPermissionsMode: {disable!r} is not 'disable'; "
            "bypassPermissions is disabled all the same"
        )
    no_auto = perms.get("disableAutoMode", data.get("disableAutoMode"))
    if no_auto not in (None, "disable"):
        notes.append(
            f"{path}: disableAutoMode: {no_auto!r} is not 'disable'; auto is disabled all the same"
        )
    managed_only = perms.get("allowManagedPermissionRulesOnly", False)
    if not isinstance(managed_only, bool):
        # A managed policy key: neither reading spares every rule, so stop.
        raise ConfigError(f"{path}: permissions.allowManagedPermissionRulesOnly: must be a boolean")
    return Settings(
        path=path,
        root=root,
        allow=lists["allow"],
        ask=lists["ask"],
        deny=lists["deny"],
        default_mode=default_mode,
        additional_directories=tuple(
            Path(os.path.realpath(root / os.path.expanduser(d))) for d in dirs
        ),
        disable_bypass=disable is not None,
        auto=auto,
        disable_auto=no_auto is not None,
        managed_only=managed_only,
        lost=tuple(lost),
        notes=tuple(notes),
        other={str(k): v for k, v in data.items() if k != "permissions"},
    )


class _Counter:
    """Recency source shared by a policy and the policies derived from it."""

    def __init__(self) -> None:
        self.value = 0

    def next(self) -> int:
        self.value += 1
        return self.value


@frozen
class _Setting:
    source: Source
    recency: int
    value: Any = field(default=None)


class Policy:
    """Rules from every source, each with a recency (later added = larger).

    Sources rank by `AUTHORITY`: policy (managed) > cli > session > project >
    persisted approvals. A derived policy (for a child agent) sees its
    parent's rules live, plus its own.
    """

    def __init__(self, *, _parent: Policy | None = None) -> None:
        self._parent = _parent
        self._counter: _Counter = _parent._counter if _parent is not None else _Counter()
        self._rules: list[Rule] = []
        self._modes: list[_Setting] = []
        self._dirs: list[Path] = []
        self._disable_bypass = False
        self._disable_auto = False
        # `rules_for`'s index, valid while the family's counter stands still:
        # every rule added here, in an ancestor or in a derived policy moves it.
        self._index: dict[str, tuple[Rule, ...]] = {}
        self._index_version = -1

    def add(
        self,
        source: Source,
        behavior: RuleBehavior,
        pattern: str,
        *,
        base: Path | None = None,
        origin: str = "",
    ) -> Rule:
        """Add one rule; a malformed one raises ConfigError naming `origin`."""
        try:
            spec = parse_rule(pattern, RuleBehavior(behavior))
        except RuleSyntaxError as exc:
            where = origin or f"{Source(source).value} {RuleBehavior(behavior).value} rule"
            raise ConfigError(f"{where}: {exc}") from None
        rule = Rule(
            spec=spec,
            behavior=RuleBehavior(behavior),
            source=Source(source),
            recency=self._counter.next(),
            base=Path(os.path.realpath(base)) if base is not None else None,
            origin=origin,
        )
        self._rules.append(rule)
        return rule

    def add_settings(self, settings: Settings, source: Source) -> None:
        """Add a settings file's rules, in file order, and its mode and dirs."""
        for name, behavior in _LISTS:
            for i, pattern in enumerate(settings.rules(behavior)):
                self.add(
                    source,
                    behavior,
                    pattern,
                    base=settings.root,
                    origin=f"{settings.path}: permissions.{name}[{i}]",
                )
        for lost in settings.lost:
            if lost.fallback is not None:
                self.add(
                    source,
                    RuleBehavior.ASK,
                    lost.fallback,
                    base=settings.root,
                    origin=f"{settings.path}: {lost.where} (not read: {lost.text}; asks instead)",
                )
        if settings.default_mode is not None:
            value = (settings.default_mode, settings.auto)
            self._modes.append(
                _Setting(source=Source(source), recency=self._counter.next(), value=value)
            )
        self._dirs.extend(settings.additional_directories)
        self._disable_bypass = self._disable_bypass or settings.disable_bypass
        self._disable_auto = self._disable_auto or settings.disable_auto

    def load(
        self, path: str | os.PathLike[str], source: Source, root: Path | None = None
    ) -> Settings:
        """Load a settings file and add it under `source` (`/x` rules anchored
        at `root`, default `settings_root`)."""
        settings = load_settings(path, root)
        self.add_settings(settings, source)
        return settings

    def add_directory(self, path: str | os.PathLike[str]) -> None:
        self._dirs.append(Path(os.path.realpath(os.path.expanduser(os.fspath(path)))))

    @property
    def rules(self) -> tuple[Rule, ...]:
        inherited = self._parent.rules if self._parent is not None else ()
        return (*inherited, *self._rules)

    def rules_for(self, tool: str) -> tuple[Rule, ...]:
        """The rules that apply to `tool` (`Rule.applies_to`), in `rules`
        order. Kept per tool name until a rule is added anywhere in this
        policy's family (its ancestors and the policies derived from them
        share the counter every addition moves)."""
        if self._index_version != self._counter.value:
            self._index = {}
            self._index_version = self._counter.value
        hit = self._index.get(tool)
        if hit is None:
            if len(self._index) >= _INDEX_MAX:
                self._index.clear()
            hit = self._index[tool] = tuple(r for r in self.rules if r.applies_to(tool))
        return hit

    @property
    def default_mode(self) -> Mode | None:
        """The `defaultMode` of the most authoritative source (then most recent)."""
        best = self._best_mode()
        return None if best is None else Mode(best[0])

    @property
    def auto_mode(self) -> bool:
        """Whether that `defaultMode` is `auto` (run as acceptEdits)."""
        best = self._best_mode()
        return best is not None and bool(best[1])

    def _best_mode(self) -> tuple[Mode, bool] | None:
        modes = [*self._parent._all_modes(), *self._modes] if self._parent else self._modes
        if not modes:
            return None
        best = min(modes, key=lambda s: (AUTHORITY.index(s.source), -s.recency))
        value: tuple[Mode, bool] = best.value
        return value

    def _all_modes(self) -> list[_Setting]:
        inherited = self._parent._all_modes() if self._parent is not None else []
        return [*inherited, *self._modes]

    @property
    def additional_directories(self) -> tuple[Path, ...]:
        inherited = self._parent.additional_directories if self._parent is not None else ()
        return (*inherited, *self._dirs)

    @property
    def auto_disabled(self) -> bool:
        inherited = self._parent.auto_disabled if self._parent is not None else False
        return inherited or self._disable_auto

    @property
    def bypass_disabled(self) -> bool:
        inherited = self._parent.bypass_disabled if self._parent is not None else False
        return inherited or self._disable_bypass

    def derive(self) -> Policy:
        """A policy that sees this one's rules live and can add its own."""
        return Policy(_parent=self)


def policy_from_files(files: Iterable[tuple[Source, str | os.PathLike[str]]]) -> Policy:
    """A policy loaded from `(source, path)` pairs, in order."""
    policy = Policy()
    for source, path in files:
        policy.load(path, source)
    return policy
