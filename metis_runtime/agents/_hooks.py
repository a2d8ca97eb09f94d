"""PreToolUse hooks: a command or a callable that can veto a call.

A hook configured on an agent is passed to every child it spawns, which
passes it on (CHILD-6); a child may add hooks, never drop one. A hook runs
in preflight, after the gate decided and only if the gate did not deny:

- a command gets a JSON object on stdin (`tool`, `input`, `agent_id`,
  `depth`); exit 0 lets the call through, exit 2 vetoes it (stderr is the
  reason), as does a JSON `{"decision": "block"}` on stdout. Any other exit
  code, a timeout, a hook that cannot be started, stdout that starts as JSON
  but is not strict JSON (`metis_trace.decode_json`), or more than
  HOOK_OUTPUT_BYTES of it vetoes too: a guard that fails must fail closed;
  plain text on stdout is no decision;
- a callable, named `module:attribute` so a child process can import it, is
  called with `(tool, input)`; False or a string (the reason) vetoes.

A veto is a `deny` whose facts carry a deny rule `hook:<id>` (source
policy), so the recorded decision still recomputes from its facts (PERM-1).
Hooks run synchronously inside `decide`, so keep them short (timeout 10 s).

Every run is on the decision `HookedGate.decide` returns (`hooks`: id,
vetoed, reason, in the order they ran), and the loop records each as a
`hook` event before the call's `decision`; the trace header lists the hooks
in force (`header_hooks`), so the model checks that they were enforced
(CHILD-6), not merely configured.
"""

from __future__ import annotations

import fnmatch
import importlib
import json
import os
import subprocess
import tempfile
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import IO
from typing import Any

import attrs
from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import model_validator

from metis_trace import Decision
from metis_trace import Facts
from metis_trace import HookRef
from metis_trace import InputError
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import RuleRef
from metis_trace import Source
from metis_trace import Stage
from metis_trace import ToolKind
from metis_trace import decode_json

from .._errors import ConfigError
from .._input import read_fd_bounded
from ..dispatch import GateDecision
from ..dispatch import GateDecisionLike
from ..dispatch import GateLike
from ..permissions import staged_decision

HookFunction = Callable[[str, Mapping[str, Any]], "bool | str | None"]


class HookSpec(BaseModel):
    """`id` names the hook in traces; `matcher` is a glob over tool names."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    command: str | None = None
    callable: str | None = None
    matcher: str = "*"
    timeout_s: float = 10.0

    @model_validator(mode="after")
    def _one_kind(self) -> HookSpec:
        if (self.command is None) == (self.callable is None):
            raise ValueError(f"hook {self.id!r}: give exactly one of command or callable")
        if self.callable is not None and ":" not in self.callable:
            raise ValueError(f"hook {self.id!r}: callable must be 'module:attribute'")
        return self


@attrs.frozen
class HookVerdict:
    vetoed: bool
    reason: str = ""


def _load(spec: HookSpec) -> HookFunction:
    assert spec.callable is not None
    module, _, attr = spec.callable.partition(":")
    try:
        fn = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"hook {spec.id!r}: cannot import {spec.callable}: {exc}") from exc
    if not callable(fn):
        raise ConfigError(f"hook {spec.id!r}: {spec.callable} is not callable")
    return fn  # type: ignore[no-any-return]


class Hook:
    """One loaded hook. `run` never raises: a failure is a veto."""

    def __init__(self, spec: HookSpec, *, cwd: str | os.PathLike[str] | None = None) -> None:
        self.spec = spec
        self._cwd = cwd
        self._fn = _load(spec) if spec.callable is not None else None

    def matches(self, tool: str) -> bool:
        return fnmatch.fnmatchcase(tool, self.spec.matcher)

    def run(self, tool: str, input: Mapping[str, Any], about: Mapping[str, Any]) -> HookVerdict:
        if self._fn is not None:
            try:
                got = self._fn(tool, input)
            except Exception as exc:  # a crashing guard fails closed
                return HookVerdict(True, f"hook {self.spec.id} failed: {type(exc).__name__}")
            if got is False or isinstance(got, str):
                return HookVerdict(True, got if isinstance(got, str) else "")
            return HookVerdict(False)
        return self._run_command(tool, input, about)

    def _run_command(
        self, tool: str, input: Mapping[str, Any], about: Mapping[str, Any]
    ) -> HookVerdict:
        payload = json.dumps({"tool": tool, "input": dict(input), **about}, default=str)
        assert self.spec.command is not None
        # The hook's output goes to files read back bounded (metis_runtime._input):
        # a hook that prints without end fills neither memory nor the trace.
        with tempfile.TemporaryFile() as out_f, tempfile.TemporaryFile() as err_f:
            try:
                done = subprocess.run(
                    ["/bin/sh", "-c", self.spec.command],
                    input=payload.encode(),
                    stdout=out_f,
                    stderr=err_f,
                    timeout=self.spec.timeout_s,
                    cwd=self._cwd,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                return HookVerdict(True, f"hook {self.spec.id} timed out")
            except OSError as exc:
                return HookVerdict(True, f"hook {self.spec.id} could not run: {exc.strerror}")
            err = _hook_output(err_f, f"hook {self.spec.id} stderr") or "(stderr too long)"
            out = _hook_output(out_f, f"hook {self.spec.id} stdout")
        reason = " ".join(err.split())[:300]
        if done.returncode == 2:
            return HookVerdict(True, reason)
        if done.returncode != 0:
            return HookVerdict(True, f"hook {self.spec.id} exited {done.returncode}: {reason}")
        if out is None:
            return HookVerdict(True, f"hook {self.spec.id}: stdout over {HOOK_OUTPUT_BYTES} bytes")
        if not out.lstrip().startswith("{"):
            return HookVerdict(False)  # plain text: no decision
        try:
            # Strict, as every reader: a `{"decision": "block", "reason": NaN}`
            # that lenient json.loads would read is refused, and so vetoes.
            decided = decode_json(out, source=f"hook {self.spec.id} stdout")
        except InputError as exc:
            return HookVerdict(True, f"{exc} (a hook's JSON must be valid: vetoed)")
        if isinstance(decided, dict) and decided.get("decision") == "block":
            return HookVerdict(True, str(decided.get("reason", "")))
        return HookVerdict(False)


HOOK_OUTPUT_BYTES = 1 << 20  # what a hook may print on stdout (stderr: the first bytes kept)


def _hook_output(f: IO[bytes], source: str) -> str | None:
    """What a hook wrote to `f` (lone bytes that are not UTF-8 replaced), or
    None when it wrote more than HOOK_OUTPUT_BYTES."""
    try:
        data = read_fd_bounded(f.fileno(), source, limit=HOOK_OUTPUT_BYTES)
    except InputError:
        return None
    return data.decode("utf-8", "replace")


def hook_rule(spec: HookSpec) -> RuleRef:
    return RuleRef(behavior=RuleBehavior.DENY, source=Source.POLICY, pattern=f"hook:{spec.id}")


def header_hooks(specs: Sequence[HookSpec]) -> tuple[HookRef, ...]:
    """The hooks in force as a trace header lists them (id and matcher, in order)."""
    return tuple(HookRef(id=s.id, matcher=s.matcher) for s in specs)


HookRunRecord = tuple[str, bool, str]  # (hook id, vetoed, reason)


@attrs.frozen
class HookedDecision:
    """A gate decision with the hooks that ran on it; `inner` is the gate's own
    decision (what its `resolve_ask` is given back)."""

    decision: Decision
    stage: Stage
    rule: RuleRef | None
    facts: Facts
    route: Route
    hooks: tuple[HookRunRecord, ...]
    inner: GateDecisionLike


class HookedGate:
    """A gate whose non-deny decisions pass through the hooks first."""

    def __init__(
        self,
        inner: GateLike[Any],
        hooks: Sequence[Hook],
        *,
        about: Mapping[str, Any] | None = None,
    ) -> None:
        self.inner = inner
        self.hooks = tuple(hooks)
        self.about = dict(about or {})
        self.vetoes: list[tuple[str, str, str]] = []  # (tool, hook id, reason)

    def __getattr__(self, name: str) -> Any:
        # mode, route, workspace, clone_for_child...: the inner gate's.
        return getattr(self.inner, name)

    def decide(
        self,
        tool: str,
        input: Mapping[str, Any],
        kind: ToolKind,
        paths: Sequence[Path],
        command: str | None,
    ) -> GateDecisionLike:
        decision: GateDecisionLike = self.inner.decide(tool, input, kind, paths, command)
        if decision.decision is Decision.DENY:
            return decision  # the gate denied first: no hook needs to run
        runs: list[HookRunRecord] = []
        for hook in self.hooks:
            if not hook.matches(tool):
                continue
            verdict = hook.run(tool, input, self.about)
            runs.append((hook.spec.id, verdict.vetoed, verdict.reason))
            if verdict.vetoed:
                self.vetoes.append((tool, hook.spec.id, verdict.reason))
                return _vetoed(decision, hook_rule(hook.spec), tuple(runs))
        if not runs:
            return decision
        return HookedDecision(
            decision.decision,
            Stage(decision.stage),
            decision.rule,
            decision.facts,
            decision.route,
            tuple(runs),
            decision,
        )

    async def resolve_ask(
        self, occ: str, tool: str, input: Mapping[str, Any], decision: GateDecisionLike
    ) -> Any:
        inner = decision.inner if isinstance(decision, HookedDecision) else decision
        return await self.inner.resolve_ask(occ, tool, input, inner)


def _vetoed(
    decision: GateDecisionLike, rule: RuleRef, runs: tuple[HookRunRecord, ...]
) -> HookedDecision:
    facts: Facts = decision.facts.model_copy(update={"rules": (*decision.facts.rules, rule)})
    verdict, stage, chosen = staged_decision(facts)
    denied = GateDecision(verdict, stage, chosen, facts, decision.route)
    return HookedDecision(verdict, stage, chosen, facts, decision.route, runs, denied)


def load_hooks(specs: Sequence[HookSpec], cwd: str | os.PathLike[str] | None = None) -> list[Hook]:
    """Load every hook; ConfigError (naming the hook) if one cannot be loaded."""
    ids = [s.id for s in specs]
    if len(set(ids)) != len(ids):
        raise ConfigError(f"hooks: ids must be unique, got {ids}")
    return [Hook(s, cwd=cwd) for s in specs]
