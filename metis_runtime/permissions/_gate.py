"""The permission gate: one class for every route a call can arrive by.

`Gate.decide` gathers the facts of a call (mode, kind, protected, secret,
in-scope, transition, matching rules) and runs the staged order over those
facts alone (`_staged.staged_decision`), so the recorded facts always
recompute the recorded decision.

Shell commands are checked part by part (`_shellgate.shell_facts`): deny
and ask rules on any part or on any file a part reads or writes, allow rules
only when every part, write target and out-of-scope read is covered, and
the guards (opaque lines, run-time write targets, protected paths, critical
`rm`, `cd` then `git`, `git config` writes) set `protected`, so that stage 5
caps the decision at ask.

File tools: a deny or ask path rule matches when the path as named or its
real target matches (a symlink is checked both ways), a bare name or a single
directory (`src/**`) at any depth; an allow must match both. A search (Grep,
Glob, LS) rooted at or above a denied folder is denied, unless the gate is
told the search hides denied files (`search_hides_denied`, as Claude Code's
Grep and Glob do, and metis's own search tools do with `hides`): then only a
search rooted at a denied path, or at a folder every entry of which is
denied (`secrets` under `Read(secrets/**)`), is.

A bash call declared read_only whose command is not read-only is treated as
exec; a declared kind is never weakened, except that a line the analysis
proves to be only in-scope file edits (acceptEdits's documented
auto-approval of `mkdir touch rm rmdir mv cp sed` and redirections) is an
edit.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from attrs import frozen

from metis_trace import AUTHORITY
from metis_trace import MUTATING_KINDS
from metis_trace import Decision
from metis_trace import Facts
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import Source
from metis_trace import ToolKind

from .._errors import ConfigError
from ..shell import ShellAnalysis
from ..shell import analyze_command
from ._decision import AskAnswer
from ._decision import GateDecision
from ._paths import is_protected
from ._paths import is_secret
from ._paths import is_within
from ._paths import lexical
from ._paths import resolve
from ._policy import Policy
from ._rules import Rule
from ._rules import SpecKind
from ._rules import domain_matches
from ._rules import param_matches
from ._rules import path_matches
from ._rules import path_under_matches
from ._shellgate import shell_facts
from ._staged import staged_decision

if TYPE_CHECKING:  # the askers (and asyncio) load only when an ask is resolved
    from ._askers import Asker

_BASH_TOOLS = frozenset({"bash"})
_SEARCH_TOOLS = frozenset({"grep", "glob", "ls"})
_PATH_FIELDS = ("file_path", "path", "notebook_path")
_NEVER_ALLOW_PATH_TOOLS = frozenset({"write", "glob", "multiedit", "notebookedit"})
_RULELESS_MAX = 256  # decisions kept per gate for calls no rule applies to

# The modes a parent in each mode may give a child: never more permissive.
# plan and dontAsk are incomparable (plan asks where dontAsk denies; dontAsk
# allows by rule where plan denies), so neither may have the other as child.
MODES_BELOW: dict[Mode, frozenset[Mode]] = {
    Mode.PLAN: frozenset({Mode.PLAN}),
    Mode.DONT_ASK: frozenset({Mode.DONT_ASK}),
    Mode.DEFAULT: frozenset({Mode.PLAN, Mode.DONT_ASK, Mode.DEFAULT}),
    Mode.ACCEPT_EDITS: frozenset({Mode.PLAN, Mode.DONT_ASK, Mode.DEFAULT, Mode.ACCEPT_EDITS}),
    Mode.BYPASS: frozenset(Mode),
}


def mode_at_most(child: Mode, parent: Mode) -> bool:
    """Whether a `child` mode is never more permissive than `parent`."""
    return child in MODES_BELOW[parent]


@frozen
class Refusal:
    """A request to make a gate more permissive than allowed, refused (a value)."""

    reason: str
    current: Mode
    requested: Mode


_NO_COMMAND = ShellAnalysis(commands=(), opaque=True, read_only=False, reasons=("no command",))


class Gate:
    """Decides calls and resolves asks for one agent.

    `route` says how asks are answered: interactive (a person, through
    `asker`, a TerminalAsker by default), protocol (`asker` is required: a
    CallbackAsker or JsonRpcAsker), headless and background (never asks:
    an ask resolves at once to `headless_default`, deny unless configured).
    Child gates come from `clone_for_child` and ask their parent.
    """

    def __init__(
        self,
        policy: Policy,
        mode: Mode,
        workspace: str | os.PathLike[str],
        route: Route = Route.INTERACTIVE,
        asker: Asker | None = None,
        *,
        headless_default: Decision = Decision.DENY,
        additional_directories: Sequence[str | os.PathLike[str]] = (),
        auto: bool = False,
        protected_paths: Sequence[str | os.PathLike[str]] = (),
        search_hides_denied: bool = False,
        _parent: Gate | None = None,
    ) -> None:
        route = Route(route)
        mode = Mode(mode)
        if headless_default not in (Decision.ALLOW, Decision.DENY):
            raise ConfigError(f"headless_default: must be allow or deny, not {headless_default}")
        if route is Route.CHILD and _parent is None:
            raise ConfigError("route child: child gates come from Gate.clone_for_child")
        if route in (Route.HEADLESS, Route.BACKGROUND) and asker is not None:
            raise ConfigError(f"route {route.value}: never asks; set headless_default instead")
        if route is Route.PROTOCOL and asker is None:
            raise ConfigError(
                "route protocol: an asker (CallbackAsker or JsonRpcAsker) is required"
            )
        if mode is Mode.BYPASS and policy.bypass_disabled:
            raise ConfigError("mode bypassPermissions: disabled by disableBypassPermissionsMode")
        if route is Route.INTERACTIVE and asker is None:
            from ._askers import TerminalAsker

            asker = TerminalAsker()
        self._policy = policy
        self._mode = mode
        self._workspace = Path(os.path.realpath(os.fspath(workspace)))
        self._route = route
        self._asker = asker
        self._headless_default = headless_default
        self._extra_dirs = tuple(
            Path(os.path.realpath(os.path.expanduser(os.fspath(d)))) for d in additional_directories
        )
        # The run's own files (trace, journal, agent tree): protected like `.metis/`.
        self._protected = tuple(Path(os.path.realpath(os.fspath(p))) for p in protected_paths)
        self._parent = _parent
        self._auto = auto  # Claude Code's auto mode, run as acceptEdits (specs/permissions.md)
        # Claude Code's Grep and Glob hide the files a Read deny matches from
        # their results (code.claude.com/docs/en/permissions: "a deny hides
        # matching files from discovery and search", 2.1.162), so a search
        # above a denied file is not denied whole; only a search rooted at a
        # denied path is. Set where the tool that runs the search hides them.
        self._search_hides_denied = search_hides_denied
        self._transition = False
        # `decide`'s decisions for calls no rule applies to, without paths.
        self._ruleless: dict[tuple[str, Mode, ToolKind, bool], GateDecision] = {}

    # --- state ----------------------------------------------------------------

    @property
    def policy(self) -> Policy:
        return self._policy

    @property
    def route(self) -> Route:
        return self._route

    @property
    def workspace(self) -> Path:
        return self._workspace

    @property
    def mode(self) -> Mode:
        """The effective mode: a child is capped by its parent's, live."""
        if self._parent is None:
            return self._mode
        ceiling = self._parent.mode
        return self._mode if mode_at_most(self._mode, ceiling) else ceiling

    @property
    def in_transition(self) -> bool:
        return self._transition or (self._parent is not None and self._parent.in_transition)

    @property
    def protected_paths(self) -> tuple[Path, ...]:
        """The run's own files and folders, protected like `.metis/` (resolved)."""
        return self._protected

    @property
    def roots(self) -> tuple[Path, ...]:
        """The workspace and every additional directory: the scope."""
        return (self._workspace, *self._extra_dirs, *self._policy.additional_directories)

    def header_meta(self) -> dict[str, Any]:
        """What a trace header records of this gate (`meta.permissions`), so
        that the model's fact-deriver can check each decision's facts
        against it (AUTH-4): the workspace, the scope's roots, the protected
        list, auto mode and every rule as the policy holds it, in order."""
        return {
            "workspace": str(self._workspace),
            "home": os.path.expanduser("~"),
            "roots": [str(p) for p in self.roots],
            "protected": [str(p) for p in self._protected],
            "auto": self._auto,
            "rules": [
                {
                    "behavior": r.behavior.value,
                    "source": r.source.value,
                    "pattern": r.pattern,
                    "recency": r.recency,
                    "base": str(r.base) if r.base is not None else None,
                    "origin": r.origin,
                }
                for r in self._policy.rules
            ],
        }

    def begin_transition(self) -> None:
        """A mode change is in flight: every call is denied until it completes."""
        self._transition = True

    def complete_transition(self, mode: Mode) -> Refusal | None:
        """Finish a mode change; a child cannot exceed its parent's mode."""
        mode = Mode(mode)
        refusal = self._check_mode(mode)
        self._transition = False
        if refusal is None:
            self._mode = mode
        return refusal

    def _check_mode(self, mode: Mode) -> Refusal | None:
        if mode is Mode.BYPASS and self._policy.bypass_disabled:
            return Refusal("bypassPermissions is disabled by settings", self.mode, mode)
        if self._parent is None:
            return None
        ceiling = self._parent.mode
        if ceiling is Mode.PLAN and mode is not Mode.PLAN:
            return Refusal("a plan parent forces plan", ceiling, mode)
        if not mode_at_most(mode, ceiling):
            return Refusal(
                f"a {ceiling.value} parent cannot have a {mode.value} child", ceiling, mode
            )
        return None

    # --- deciding -------------------------------------------------------------

    def decide(
        self,
        tool: str,
        input: Mapping[str, Any],
        kind: ToolKind,
        paths: Sequence[str | os.PathLike[str]] = (),
        command: str | None = None,
    ) -> GateDecision:
        """Decide one call (synchronous, no I/O beyond resolving paths).

        `paths` are resolved against the workspace; for bash, `command` (or
        `input["command"]`) is analysed and recorded as the module doc says.
        The decision is `staged_decision(facts)` of the facts it carries.
        """
        kind = kind if kind.__class__ is ToolKind else ToolKind(kind)
        if paths or self._policy.rules_for(tool):
            return self._decide(tool, input, kind, paths, command)
        # No rule applies and no path: the facts are the mode's, the kind's
        # and the transition flag's alone (a shell command's analysis aside),
        # so the decision for those three is kept, computed the same way.
        # `rules_for` is asked on every call: a rule added meanwhile counts.
        key = (tool, self.mode, kind, self.in_transition)
        hit = self._ruleless.get(key)
        if hit is not None:
            return hit
        decision = self._decide(tool, input, kind, paths, command)
        if tool.lower() not in _BASH_TOOLS:
            if len(self._ruleless) >= _RULELESS_MAX:
                self._ruleless.clear()
            self._ruleless[key] = decision
        return decision

    def _decide(
        self,
        tool: str,
        input: Mapping[str, Any],
        kind: ToolKind,
        paths: Sequence[str | os.PathLike[str]] = (),
        command: str | None = None,
    ) -> GateDecision:
        """`decide`, computed every time."""
        kind = ToolKind(kind)
        mode = self.mode
        resolved = [resolve(p, self._workspace) for p in paths]
        rules = self._policy.rules_for(tool)
        matched: list[Rule] = []
        protected_roots, ws = self._protected, self._workspace
        protected = kind in MUTATING_KINDS and any(
            is_protected(p, protected_roots, ws) for p in resolved
        )
        secret = any(is_secret(p) for p in resolved)
        roots = self.roots
        in_scope = all(is_within(p, roots) for p in resolved)
        detail = ""
        if tool.lower() in _BASH_TOOLS:
            if command is None:
                command = input.get("command") if isinstance(input.get("command"), str) else None
            analysis = analyze_command(command) if command is not None else _NO_COMMAND
            shell = shell_facts(
                analysis,
                kind,
                workspace=self._workspace,
                protected_roots=protected_roots,
                roots=roots,
                rules_for=self._policy.rules_for,
                base=self._base,
                usable=self._usable,
            )
            kind = shell.kind
            # Parameter rules name Bash's own fields too (the docs' example:
            # `Bash(dangerouslyDisableSandbox:true)`); deny and ask only.
            matched = [*shell.rules, *_param_hits(rules, input)]
            protected = protected or shell.protected
            secret = secret or shell.secret
            in_scope = in_scope and shell.in_scope
            detail = "; ".join(shell.details)
        else:
            matched = self._other_rules(rules, tool, input, paths, resolved)
        refs = tuple(
            r.ref() for r in sorted(matched, key=lambda r: (AUTHORITY.index(r.source), r.recency))
        )
        facts = Facts(
            mode=mode,
            kind=kind,
            protected=protected,
            secret=secret,
            in_scope=in_scope,
            transition=self.in_transition,
            rules=refs,
        )
        decision, stage, rule = staged_decision(facts)
        return GateDecision(
            decision=decision, stage=stage, rule=rule, facts=facts, route=self._route, detail=detail
        )

    def _base(self, rule: Rule) -> Path:
        return rule.base if rule.base is not None else self._workspace

    def _named(
        self, input: Mapping[str, Any], paths: Sequence[str | os.PathLike[str]]
    ) -> list[Path]:
        """Each path as the call names it (symlinks not followed): a tool may
        pass its paths already resolved, so a one-path call's input field is
        taken when it has one."""
        if len(paths) == 1:
            for key in _PATH_FIELDS:
                value = input.get(key)
                if isinstance(value, str) and value and "\x00" not in value:
                    return [lexical(value, self._workspace)]
        return [lexical(p, self._workspace) for p in paths]

    def _usable(self, rule: Rule) -> bool:
        """Under auto mode (run as acceptEdits) broad allow rules are suspended."""
        return not (self._auto and rule.behavior is RuleBehavior.ALLOW and is_broad(rule))

    def _other_rules(
        self,
        rules: Sequence[Rule],
        tool: str,
        input: Mapping[str, Any],
        paths: Sequence[str | os.PathLike[str]],
        resolved: Sequence[Path],
    ) -> list[Rule]:
        matched: list[Rule] = []
        allow_hits: list[Rule] = []
        covered: set[int] = set()
        named = self._named(input, paths)
        # A search that does not hide denied files is denied when one may lie
        # below it; one that hides them, when rooted at a denied path or at
        # a folder whose every entry is denied (`secrets/**`).
        search = tool.lower() in _SEARCH_TOOLS
        below = search and not self._search_hides_denied
        for rule in rules:
            spec = rule.spec
            kind = spec.kind
            definite = rule.behavior is RuleBehavior.ALLOW
            if definite and not self._usable(rule):
                continue
            if kind is SpecKind.ANY:
                hit = True
                if definite:
                    covered.update(range(len(resolved)))
            elif kind is SpecKind.PATH and spec.path is not None:
                if definite and spec.tool.lower() in _NEVER_ALLOW_PATH_TOOLS:
                    continue  # Claude Code never consults Write(path) / Glob(path)
                base = self._base(rule)
                idx = [
                    i
                    for i, (lex, real) in enumerate(zip(named, resolved, strict=True))
                    if _path_hit(
                        spec.path, lex, real, base, self._workspace, definite, below, folder=search
                    )
                ]
                hit = bool(idx)
                if definite:
                    covered.update(idx)
            elif kind is SpecKind.DOMAIN and spec.domain is not None:
                m = domain_matches(spec.domain, input.get("url"))
                hit = m is True or (m is None and not definite)
            elif kind is SpecKind.PARAM:
                hit = not definite and param_matches(spec, input)  # deny and ask only (_param_hits)
            elif kind is SpecKind.NAME:
                hit = param_matches(spec, input)
            else:
                hit = False
            if not hit:
                continue
            (allow_hits if definite else matched).append(rule)
        # An allow counts only if every path is covered by some allow rule.
        if len(covered) == len(resolved):
            matched.extend(allow_hits)
        return matched

    def hides(self, path: Path) -> bool:
        """Whether a search (grep, glob, ls) leaves `path` out of its results
        and unread: a Read of it would not be allowed without asking (a Read
        deny or ask rule, a secret-looking file, a path out of scope), as
        Claude Code's Grep and Glob hide what a Read deny matches
        (https://code.claude.com/docs/en/permissions: a deny "hides matching
        files from discovery and search")."""
        decision = self.decide("read", {"path": os.fspath(path)}, ToolKind.READ_ONLY, (path,))
        return decision.decision is not Decision.ALLOW

    # --- asking ---------------------------------------------------------------

    async def resolve_ask(
        self, occ: str, tool: str, input: Mapping[str, Any], decision: GateDecision
    ) -> AskAnswer:
        """Resolve an `ask` by this gate's route.

        Headless and background gates answer at once with the configured
        default. A child asks its parent. An asker that fails denies. A
        decision that is not `ask` needs no one: it answers itself
        (resolver `policy`).
        """
        if decision.decision is not Decision.ASK:
            return AskAnswer(approved=decision.decision is Decision.ALLOW, resolver="policy")
        if self._route in (Route.HEADLESS, Route.BACKGROUND):
            return AskAnswer(
                approved=self._headless_default is Decision.ALLOW, resolver="headless-default"
            )
        if self._parent is not None:
            answer = await self._parent.resolve_ask(occ, tool, input, decision)
            return AskAnswer(approved=answer.approved, resolver="parent")
        asker = self._asker
        if asker is None:  # unreachable by construction; deny rather than hang
            return AskAnswer(approved=False, resolver="headless-default")
        from ._askers import AskRequest

        request = AskRequest(
            occ=occ,
            tool=tool,
            input=input,
            decision=decision.decision,
            stage=decision.stage,
            rule=decision.rule,
            facts=decision.facts,
            detail=decision.detail,
        )
        try:
            approved = await asker(request)
        except Exception:  # an asker that fails is a denial, not a crash of the loop
            approved = False
        return AskAnswer(approved=approved is True, resolver=asker.resolver)

    # --- children -------------------------------------------------------------

    def clone_for_child(
        self, mode: Mode | None = None, extra_deny: Sequence[str] = ()
    ) -> Gate | Refusal:
        """A gate for a child agent, never more permissive than this one.

        A plan parent forces plan; otherwise a child may ask for any mode no
        more permissive than the parent's (`MODES_BELOW`), or gets a
        Refusal. The child's mode is also capped live by the parent's, should
        the parent later become stricter. The child sees
        this gate's rules live plus `extra_deny` (session deny rules), and its
        asks go to this gate.
        """
        current = self.mode
        requested = Mode(mode) if mode is not None else current
        if current is Mode.PLAN:
            requested = Mode.PLAN
        elif not mode_at_most(requested, current):
            return Refusal(
                f"a {current.value} parent cannot have a {requested.value} child",
                current,
                requested,
            )
        policy = self._policy.derive()
        for i, pattern in enumerate(extra_deny):
            policy.add(Source.SESSION, RuleBehavior.DENY, pattern, origin=f"extra_deny[{i}]")
        return Gate(
            policy,
            requested,
            self._workspace,
            Route.CHILD,
            headless_default=self._headless_default,
            additional_directories=self._extra_dirs,
            auto=self._auto,
            protected_paths=self._protected,
            search_hides_denied=self._search_hides_denied,
            _parent=self,
        )


def _param_hits(rules: Sequence[Rule], input: Mapping[str, Any]) -> list[Rule]:
    """Deny and ask parameter rules (`Tool(field:value)`) matching the call's
    raw input (https://code.claude.com/docs/en/permissions, "Parameter rules")."""
    return [
        r
        for r in rules
        if r.spec.kind is SpecKind.PARAM
        and r.behavior is not RuleBehavior.ALLOW
        and param_matches(r.spec, input)
    ]


def _path_hit(
    pattern: str,
    lex: Path,
    real: Path,
    base: Path,
    cwd: Path,
    definite: bool,
    below: bool,
    folder: bool = False,
) -> bool:
    """An allow needs the path as named and its real target to match; a deny
    or ask either of them (at any depth), or, for a search, anything below
    (`below`) or every entry of the folder (`folder`: any name in it matches)."""
    if definite:
        return path_matches(pattern, lex, base, cwd=cwd) and path_matches(
            pattern, real, base, cwd=cwd
        )
    if path_matches(pattern, lex, base, True, cwd) or path_matches(pattern, real, base, True, cwd):
        return True
    if folder and any(path_matches(pattern, p / "\x01", base, True, cwd) for p in (lex, real)):
        return True
    return below and (
        path_under_matches(pattern, lex, base, cwd) or path_under_matches(pattern, real, base, cwd)
    )


_BROAD_INTERPRETERS = frozenset(
    {"python", "python3", "node", "ruby", "perl", "php", "bash", "sh", "zsh", "deno", "bun"}
)
_RUNNERS = ("npm run", "yarn run", "pnpm run", "bun run", "npx", "make")


def is_broad(rule: Rule) -> bool:
    """An allow auto mode suspends (permission-modes docs): `Bash(*)`,
    interpreter wildcards, package-manager run rules, `Agent`, `Monitor`."""
    spec = rule.spec
    tool = spec.tool.lower()
    if spec.kind is SpecKind.ANY and tool in ("bash", "powershell", "agent", "task", "monitor"):
        return True
    if spec.kind is SpecKind.BASH and spec.bash is not None and not spec.bash.exact:
        head = " ".join(spec.bash.literal_head)
        return head.split(" ")[0] in _BROAD_INTERPRETERS or head.startswith(_RUNNERS) or not head
    return False
