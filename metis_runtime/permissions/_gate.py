"""The permission gate: one class for every route a call can arrive by.

`Gate.decide` gathers the facts of a call (mode, kind, protected, secret,
in-scope, transition, matching rules) and runs the staged order over those
facts alone (`_staged.staged_decision`), so the recorded facts always
recompute the recorded decision.

Shell commands. A bash call is split with `analyze_command` and checked one
simple command at a time; what is recorded in `Facts` is:

- every deny and ask rule that may match *any* part (containers such as the
  `bash -c` entry included);
- allow rules only when *every* part is surely matched by some allow rule:
  then the union of the allow rules that matched. A rule that allowed only
  some parts is left out, because the call as a whole was not allowed by it;
- `protected` is also set when the command is opaque (the parser could not
  see everything it runs). Stage 5 then caps the decision at ask, so an
  opaque command is never allowed: not by a broad `Bash` allow rule, not in
  bypassPermissions, and it is denied outright in dontAsk;
- protected / secret / scope facts also come from the static words and
  redirection targets of the parts (`cat .env`, `echo x >> ~/.bashrc`).
  Words only known at run time (`cat $F`) cannot be checked. A relative
  word is resolved against the workspace and every directory a `cd` or
  `pushd` before it may have entered (`cd .metis && cp x .` writes the
  settings folder), and against the directory an `env -C DIR` or
  `sudo -D DIR` wrapper runs its command in; a `cd` or wrapper directory
  known only at run time (`cd $D`, `cd -`) makes the call as opaque.

A bash call declared read_only whose command is not read-only is treated as
exec; a declared kind is never weakened.
"""

from __future__ import annotations

import functools
import os
import posixpath
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from attrs import frozen

from metis_model.trace import (
    AUTHORITY,
    MUTATING_KINDS,
    Decision,
    DecisionEvent,
    Facts,
    Mode,
    Route,
    RuleBehavior,
    RuleRef,
    Source,
    Stage,
    ToolKind,
)

from .._errors import ConfigError
from ..shell import ShellAnalysis, SimpleCommand, analyze_command, trusted_name
from ._askers import Asker, AskRequest, TerminalAsker
from ._paths import is_protected, is_secret, is_within, resolve
from ._policy import Policy
from ._rules import Rule, SpecKind, bash_matches, domain_matches, path_matches
from ._staged import staged_decision

_BASH_TOOLS = frozenset({"bash"})
_NOT_PATHS = frozenset({"echo", "printf"})  # their words are text, not paths
_CHDIR = frozenset({"cd", "pushd"})  # later relative words resolve against their target
# Wrappers that run their command in another directory: name -> (short, long) option.
_WRAPPER_CHDIR = {"env": ("C", "--chdir"), "sudo": ("D", "--chdir")}
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
class GateDecision:
    """A decision, the stage that made it, the rule it reports and its facts."""

    decision: Decision
    stage: Stage
    rule: RuleRef | None
    facts: Facts
    route: Route
    detail: str = ""  # why, for people (e.g. what made a command opaque)

    def event(self, *, occ: str, seq: int, t: float, causes: Sequence[int] = ()) -> DecisionEvent:
        """This decision as a trace event."""
        return DecisionEvent(
            seq=seq,
            t=t,
            causes=tuple(causes),
            occ=occ,
            decision=self.decision,
            stage=self.stage.value,
            rule=self.rule,
            facts=self.facts,
            route=self.route,
        )


@frozen
class AskAnswer:
    """How an ask was resolved: `resolver` is user, protocol, headless-default or parent."""

    approved: bool
    resolver: str


@frozen
class Refusal:
    """A request to make a gate more permissive than allowed, refused (a value)."""

    reason: str
    current: Mode
    requested: Mode


@functools.lru_cache(maxsize=512)
def _analyze(command: str) -> ShellAnalysis:
    return analyze_command(command)


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
        protected_paths: Sequence[str | os.PathLike[str]] = (),
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
            analysis = _analyze(command) if command is not None else _NO_COMMAND
            if kind is ToolKind.READ_ONLY and not analysis.read_only:
                kind = ToolKind.EXEC
            matched = self._bash_rules(rules, analysis)
            words, scoped, lost = self._shell_paths(analysis)
            if kind in MUTATING_KINDS:
                protected = protected or any(is_protected(p, protected_roots, ws) for p in words)
            secret = secret or any(is_secret(p) for p in words)
            in_scope = in_scope and all(is_within(p, roots) for p in scoped)
            if analysis.opaque:
                protected = True  # never allow what cannot be seen (module doc)
                detail = "not fully analysable: " + "; ".join(analysis.reasons)
            elif lost:
                protected = True  # later relative paths cannot be resolved: as opaque
                detail = "changes directory to a place known only when it runs"
        else:
            matched = self._other_rules(rules, tool, input, resolved)
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

    def _bash_rules(self, rules: Sequence[Rule], analysis: ShellAnalysis) -> list[Rule]:
        matched: list[Rule] = []
        commands = analysis.commands
        for rule in rules:
            if rule.behavior is RuleBehavior.ALLOW:
                continue
            if _may_deny_or_ask(rule, commands):
                matched.append(rule)
        allows = [r for r in rules if r.behavior is RuleBehavior.ALLOW]
        parts = [c for c in commands if not (c.container and not analysis.opaque)]
        if not parts:
            matched.extend(r for r in allows if r.spec.kind is SpecKind.ANY)
            return matched
        used: dict[int, Rule] = {}
        for part in parts:
            hits = [r for r in allows if _allows_command(r, part)]
            if not hits:
                return matched  # one part not allowed: no allow rule counts
            used.update((id(r), r) for r in hits)
        matched.extend(used.values())
        return matched

    def _other_rules(
        self,
        rules: Sequence[Rule],
        tool: str,
        input: Mapping[str, Any],
        resolved: Sequence[Path],
    ) -> list[Rule]:
        matched: list[Rule] = []
        allow_hits: list[Rule] = []
        covered: set[int] = set()
        for rule in rules:
            kind = rule.spec.kind
            definite = rule.behavior is RuleBehavior.ALLOW
            if kind is SpecKind.ANY or kind is SpecKind.BASH:
                hit = kind is SpecKind.ANY
                if hit and definite:
                    covered.update(range(len(resolved)))
            elif kind is SpecKind.PATH and rule.spec.path is not None:
                base = self._base(rule)
                idx = [i for i, p in enumerate(resolved) if path_matches(rule.spec.path, p, base)]
                hit = bool(idx)
                if definite:
                    covered.update(idx)
            elif kind is SpecKind.DOMAIN and rule.spec.domain is not None:
                m = domain_matches(rule.spec.domain, input.get("url"))
                hit = m is True or (m is None and not definite)
            else:
                hit = False
            if not hit:
                continue
            (allow_hits if definite else matched).append(rule)
        # An allow counts only if every path is covered by some allow rule.
        if len(covered) == len(resolved):
            matched.extend(allow_hits)
        return matched

    def _shell_paths(self, analysis: ShellAnalysis) -> tuple[list[Path], list[Path], bool]:
        """Resolved static words of every part (for protected/secret), the
        path-looking ones among them (for scope), and whether a `cd` went
        somewhere only known when the command runs.

        A relative word is resolved against the workspace and against every
        directory a `cd`/`pushd` before it may have entered (`cd .metis &&
        cp x .` writes the settings folder): an over-approximation, since a
        subshell or a failed `cd` leaves the directory as it was."""
        words: list[Path] = []
        scoped: list[Path] = []
        bases = [self._workspace]
        lost = False
        for c in analysis.commands:
            if c.container:
                continue
            name = trusted_name(c.argv[0]) if c.argv else None
            outer = bases
            bases, known = _wrapper_dirs(c, outer)
            lost = lost or not known
            for target in (*c.writes, *c.reads):
                for base in bases:
                    p = resolve(target, base)
                    words.append(p)
                    scoped.append(p)
            if name in _CHDIR:
                entered, known = self._entered(c, bases)
                outer = [*outer, *(p for p in entered if p not in outer)]
                lost = lost or not known
            candidates = list(enumerate(c.argv))
            if name in _NOT_PATHS:
                candidates = []
            elif c.argv and "/" not in c.argv[0]:
                candidates = candidates[1:]
            for i, word in candidates:
                if c.is_dynamic(i) or not word or "://" in word or "\x00" in word:
                    continue
                if word.startswith("-"):
                    _, eq, value = word.partition("=")
                    if not eq or not value:
                        continue
                    word = value  # --file=.env
                path_like = "/" in word or word.startswith("~") or word in {".", ".."}
                for base in bases:
                    p = resolve(word, base)
                    words.append(p)
                    if path_like:
                        scoped.append(p)
            bases = outer  # a wrapper's directory is its command's alone
        return words, scoped, lost

    @staticmethod
    def _entered(c: SimpleCommand, bases: Sequence[Path]) -> tuple[list[Path], bool]:
        """The directories a `cd`/`pushd` may enter from any of `bases`, and
        whether they are all known (a dynamic word or `cd -` is not)."""
        args = [(i, w) for i, w in enumerate(c.argv[1:], 1) if w != "--"]
        if any(c.is_dynamic(i) for i, _ in args):
            return [], False
        targets = [w for _, w in args if not w.startswith("-") or w in {"-"}]
        if not targets:
            return [resolve("~", Path("/"))], True  # `cd` alone: home
        if "-" in targets or len(targets) > 1:
            return [], False  # the previous directory, or a form we do not model
        return [resolve(targets[0], base) for base in bases], True

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
            protected_paths=self._protected,
            _parent=self,
        )


def _wrapper_dirs(c: SimpleCommand, bases: list[Path]) -> tuple[list[Path], bool]:
    """`bases` plus the directories `env -C DIR` / `sudo -D DIR` wrappers of
    `c` run it in (each resolved from every base), and whether all are known.
    Read conservatively: a cluster such as `-iC DIR` counts too."""
    dirs = list(bases)
    known = True
    for wrapper in c.wrappers:
        spec = _WRAPPER_CHDIR.get(posixpath.basename(wrapper[0])) if wrapper else None
        if spec is None:
            continue
        short, long = spec
        found: list[str] = []
        args = wrapper[1:]
        for i, word in enumerate(args):
            if word == long or word.startswith(long + "="):
                value = word.partition("=")[2] if "=" in word else None
            elif word.startswith("-") and not word.startswith("--") and short in word[1:]:
                value = word[word.index(short, 1) + 1 :] or None
            else:
                continue
            if value is None:
                value = args[i + 1] if i + 1 < len(args) else ""
            found.append(value)
        for value in found:
            if not value or any(ch in value for ch in "$`*?["):
                known = False  # a run-time directory
                continue
            for base in bases:
                p = resolve(value, base)
                if p not in dirs:
                    dirs.append(p)
    return dirs, known


def _may_deny_or_ask(rule: Rule, commands: Sequence[SimpleCommand]) -> bool:
    if rule.spec.kind is SpecKind.ANY:
        return True
    pattern = rule.spec.bash
    return pattern is not None and any(bash_matches(pattern, c, definite=False) for c in commands)


def _allows_command(rule: Rule, command: SimpleCommand) -> bool:
    if rule.spec.kind is SpecKind.ANY:
        return True
    return rule.spec.bash is not None and bash_matches(rule.spec.bash, command, definite=True)
