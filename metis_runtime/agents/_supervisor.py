"""`AgentSupervisor`: one agent's children — spawning, watching, waiting, killing.

A spawn, in order: look up the definition; resolve it against this agent
and the call (`_resolve`: tools, mode, provider, workspace; a refusal is a
value); clone the gate for that mode (`clone_for_child`); ask the tree's spawn
guard (a refusal is a value with a code); make the workspace; write the
child's trace header (so the tree links even if the child dies at once);
record the `spawn` event in this agent's trace; start
`python -m metis_runtime.agents._child CONFIG.json` in its own process group.
A watcher waits for it (killing its group at the timeout), reads its result,
releases its guard slot and keeps or removes its workspace.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
import uuid
from collections.abc import Awaitable
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from typing import Protocol

import attrs

from metis_trace import Decision
from metis_trace import HookRef
from metis_trace import InputError
from metis_trace import Mode
from metis_trace import Route
from metis_trace import TraceHeader

from .._errors import ConfigError
from .._input import read_input_json
from .._lifeline import die_with_parent
from .._private import append_private_jsonl
from .._private import default_redactor
from .._private import open_private
from .._private import private_dirs
from .._private import write_private_json
from .._trace import TraceWriter
from ..dispatch import GateLike
from ..mcp import servers_for_surface
from ..permissions import Refusal
from ._config import ChildConfig
from ._config import GateConfig
from ._config import ProviderConfig
from ._config import build_gate
from ._config import clone_gate_config
from ._config import gate_mode
from ._definitions import AgentCatalog
from ._guard import GuardAdmit
from ._guard import GuardRefusal
from ._guard import GuardRequest
from ._guard import SpawnLedger
from ._hooks import HookSpec
from ._hooks import header_hooks
from ._placement import WorkspacePlan
from ._process import install_reaper
from ._process import register_group
from ._process import sanitized_env
from ._process import signal_group
from ._process import unregister_group
from ._resolve import ParentContext
from ._resolve import ResolvedAgent
from ._resolve import ResolveRefusal
from ._resolve import resolve_agent
from ._worktree import AgentWorkspace
from ._worktree import IntegrationPlan
from ._worktree import WorkspaceError
from ._worktree import WorkspaceKind
from ._worktree import WorkspaceManager
from ._worktree import changed_files
from ._worktree import make_workspace
from ._worktree import printable

PRODUCER = "metis_runtime.agents"
CHILD_MODULE = "metis_runtime.agents._child"
KILL_GRACE_S = 2.0
_STDERR_WINDOW = 1 << 16  # bytes of a child's stderr.log read back for its error
_DONE = ("completed", "failed", "cancelled", "timed_out", "killed")


@attrs.frozen
class AgentIdentity:
    """Where an agent sits in its tree. `run_dir` holds the tree's ledger
    (`guard.json`), its agents' folders (`agents/<id>/`) and worktrees."""

    root_run_id: str
    agent_id: str
    depth: int
    run_dir: Path


class InlineRunner(Protocol):
    """What runs a child in this process to its end (`run_child`)."""

    def __call__(
        self, config: ChildConfig, *, env: dict[str, str] | None = None
    ) -> Awaitable[Any]: ...


@attrs.frozen
class SpawnRefused:
    """A spawn that did not happen: a guard code, or AUTHORITY / UNKNOWN_AGENT / WORKSPACE."""

    code: str
    message: str

    def text(self) -> str:
        return f"spawn refused: {self.code}: {self.message}"


@attrs.define
class ChildRecord:
    agent_id: str
    agent: str
    task: str
    depth: int
    mode: Mode
    tools: tuple[str, ...]
    workspace: AgentWorkspace
    agent_dir: Path
    sync: bool
    started: float
    status: str = "starting"
    pid: int | None = None
    text: str = ""
    error: str = ""
    turns: int = 0
    ended: float | None = None
    changed: tuple[str, ...] = ()
    done: asyncio.Event = attrs.field(factory=asyncio.Event)
    process: asyncio.subprocess.Process | None = None
    inline: asyncio.Task[Any] | None = None  # a child run in this process (ablation)
    watcher: asyncio.Task[None] | None = None
    kill_reason: str | None = None
    reported: bool = False  # its answer reached the parent (a sync spawn's, or wait's result)
    integrated: bool = False  # its workspace was applied to the parent's (integrate_agent)
    choice: str = ""  # the workspace as chosen ("auto: branch, ... is in a git repository")

    @property
    def finished(self) -> bool:
        return self.status in _DONE

    def summary(self) -> dict[str, Any]:
        elapsed = (self.ended or time.monotonic()) - self.started
        out: dict[str, Any] = {
            "agent_id": self.agent_id,
            "agent": self.agent,
            "status": self.status,
            "depth": self.depth,
            "mode": self.mode.value,
            "workspace": str(self.workspace.path),
            "worktree": self.workspace.kind.value,
            "seconds": round(elapsed, 2),
            "turns": self.turns,
        }
        if self.workspace.branch:
            out["branch"] = self.workspace.branch
        if self.choice.startswith("auto"):
            out["worktree_choice"] = self.choice
        if self.integrated:
            out["integrated"] = True
        if self.error:
            out["error"] = self.error
        return out

    def report(self) -> str:
        """The tool result text for a finished child."""
        head = f"agent {self.agent_id} ({self.agent}) {self.status} after {self.turns} turn(s)"
        lines = [head]
        ws = self.workspace
        if ws.kind is not WorkspaceKind.INHERIT:
            kept = self.status == "completed"
            where = f"branch {ws.branch}" if ws.branch else "a copy"
            if self.choice.startswith("auto"):
                where += f"; {self.choice}"
            fate = "kept until you integrate it (integrate_agent) or exit" if kept else "removed"
            if self.integrated:
                fate = "integrated into yours, then removed"
            lines.append(f"workspace: {ws.path} ({where}; {fate})")
            if self.changed:
                lines.append(f"changed: {', '.join(self.changed)}")
        if self.error:
            lines.append(f"error: {self.error}")
        if self.text:
            lines += ["---", self.text]
        return "\n".join(lines)


class AgentSupervisor:
    """The children of one agent.

    `gate` is this agent's gate (cloned for each child); `visible_tools`
    its visible tool names (a callable is asked at each spawn); `trace` its
    trace writer (the `spawn` events go there; may be set after
    construction). `child_deny` is a deny list applied to every descendant.
    `python` and `env` are those of the child processes; `project_dir`
    is where every descendant looks up `.metis/agents` (default: workspace).
    `ablation` switches protections off, for the child-boundary ablation only;
    `inline` runs children as tasks of this process with that runner
    (`metis_runtime.agents.run_child`: same config, same child builder, no
    process boundary): for the ablation and tests only. The runner is passed in
    because the module that builds an agent builds its supervisor too. The
    agent tools bound to a supervisor are `agent_tools(supervisor)`.
    """

    def __init__(
        self,
        identity: AgentIdentity,
        *,
        workspace: str | os.PathLike[str],
        gate: GateLike[Any],
        visible_tools: Sequence[str] | Callable[[], Sequence[str]],
        catalog: AgentCatalog,
        provider: ProviderConfig,
        ledger: SpawnLedger,
        hooks: Sequence[HookSpec] = (),
        child_deny: Sequence[str] = (),
        headless_default: Decision = Decision.DENY,
        context_budget: Mapping[str, int] | None = None,
        max_turns: int = 50,
        trace: TraceWriter | None = None,
        python: str = sys.executable,
        env: Mapping[str, str] | None = None,
        project_dir: str | os.PathLike[str] | None = None,
        ablation: Mapping[str, Any] | None = None,
        inline: InlineRunner | None = None,
        mcp_servers: Mapping[str, Mapping[str, Any]] | None = None,
        mcp_classes: Sequence[tuple[str, str, str | None]] = (),
    ) -> None:
        self.identity = identity
        self.workspace = Path(os.path.realpath(workspace))
        self.gate = gate
        self._visible = visible_tools
        self.catalog = catalog
        self.provider = provider
        self.ledger = ledger
        self.hooks = tuple(hooks)
        self.child_deny = tuple(child_deny)
        self.headless_default = headless_default
        self.context_budget = dict(context_budget) if context_budget else None
        self.max_turns = max_turns
        self.trace = trace
        self.python = python
        self.env = dict(env) if env is not None else None
        self.project_dir = str(project_dir) if project_dir is not None else str(self.workspace)
        self.ablation = dict(ablation or {})
        self.inline = inline
        # MCP servers a child may connect to (only those its surface has tools of).
        self.mcp_servers = {k: dict(v) for k, v in (mcp_servers or {}).items()}
        self.mcp_classes = tuple(mcp_classes)
        self.children: dict[str, ChildRecord] = {}
        # The run's own files are never integrated into, whatever the gate decided.
        self.workspaces = WorkspaceManager(getattr(gate, "protected_paths", ()))
        self.limits = ledger.limits
        install_reaper()

    def bind(
        self,
        visible_tools: Sequence[str] | Callable[[], Sequence[str]],
        trace: TraceWriter | None,
    ) -> None:
        """Set what this agent shows (usually `registry.names`, once the registry
        holds `agent_tools(self)`) and the trace its `spawn` events go to."""
        self._visible = visible_tools
        self.trace = trace

    # --- helpers --------------------------------------------------------------

    def visible_tools(self) -> tuple[str, ...]:
        got = self._visible() if callable(self._visible) else self._visible
        return tuple(got)

    @property
    def agents_dir(self) -> Path:
        return self.identity.run_dir / "agents"

    def header_meta(self) -> dict[str, Any]:
        """What this agent's own trace header should carry in `meta`
        (the guard's limits: CHILD-4; its gate's settings, `permissions`:
        AUTH-4 and CHILD-2)."""
        describe = getattr(self.gate, "header_meta", None)
        gate = {"permissions": describe()} if callable(describe) else {}
        return {"guard": self.limits.to_json(), **gate}

    def header_hooks(self) -> tuple[HookRef, ...]:
        """The hooks in force, as this agent's trace header lists them (CHILD-6)."""
        return header_hooks(self.hooks)

    def _emit_spawn(self, agent_id: str, mode: Mode, tools: Sequence[str], requested: Mode) -> None:
        if self.trace is None:
            return
        n = self.trace.next_seq
        self.trace.emit(
            "spawn",
            (n - 1,) if n else (),
            agent_id=agent_id,
            child_mode=mode,
            child_tools=list(tools),
            parent_mode=gate_mode(self.gate),
            parent_tools=list(self.visible_tools()),
            requested_mode=requested,
        )

    # --- spawning -------------------------------------------------------------

    def parent_context(self) -> ParentContext:
        """What a child of this agent inherits (its definition narrows it)."""
        return ParentContext(
            gate_mode(self.gate),
            self.visible_tools(),
            self.provider,
            self.workspace,
            self.max_turns,
        )

    def runs_in_place(self, agent: str, mode: str | None, worktree: str | None) -> bool:
        """Whether a spawn with these call arguments may run sync in this
        agent's own directory (no git asked: a definition that names a
        workspace, or a background one, does not)."""
        definition = self.catalog.get(agent)
        sync = mode == "sync" if mode is not None else not (definition and definition.background)
        chosen = worktree or (definition.workspace if definition is not None else None)
        return sync and chosen in (None, "inherit")

    def _child_gate(self, resolved: ResolvedAgent, child_workspace: Path) -> GateConfig | Refusal:
        """This agent's gate cloned for the child `resolved` describes."""
        return clone_gate_config(
            self.gate,
            resolved.mode,
            parent_workspace=self.workspace,
            child_workspace=child_workspace,
            headless_default=self.headless_default,
            extra_deny=resolved.deny_rules,
        )

    async def spawn(
        self,
        agent: str,
        task: str,
        *,
        sync: bool | None = None,
        worktree: str | None = None,
        tools: Sequence[str] | None = None,
        disallowed_tools: Sequence[str] = (),
        permission_mode: Mode | None = None,
        context: str = "",
        force: bool = False,
        rationale: str = "",
    ) -> ChildRecord | SpawnRefused:
        """Start a child. `sync` None: async if the definition says
        `background: true`, else sync; `worktree` None: the definition's
        workspace, else `inherit` (see `_resolve`)."""
        definition = self.catalog.get(agent)
        if definition is None:
            known = ", ".join(self.catalog.names()) or "none"
            return SpawnRefused("UNKNOWN_AGENT", f"no agent named {agent!r} (known: {known})")
        resolved = await asyncio.to_thread(
            resolve_agent,
            definition,
            self.parent_context(),
            call_tools=tools,
            call_deny=disallowed_tools,
            call_mode=permission_mode,
            call_worktree=worktree,
            tree_deny=self.child_deny,
        )
        if isinstance(resolved, ResolveRefusal):
            return SpawnRefused(resolved.code, resolved.message)
        if isinstance(resolved.workspace, ResolveRefusal):
            return SpawnRefused(resolved.workspace.code, resolved.workspace.message)
        plan = resolved.workspace
        sync = sync if sync is not None else not resolved.background
        agent_id = f"{agent}-{uuid.uuid4().hex[:8]}"
        # The gate is cloned against the child's workspace; the mode check does not depend on it.
        try:
            probe = self._child_gate(resolved, self.workspace)
        except ConfigError as exc:  # a gate without rules cannot carry deny rules
            return SpawnRefused("AUTHORITY", str(exc))
        if isinstance(probe, Refusal):
            return SpawnRefused("AUTHORITY", probe.reason)
        mode = probe.mode
        request = GuardRequest(
            self.identity.agent_id, self.identity.depth, agent, task, force, rationale
        )
        admitted = await asyncio.to_thread(self.ledger.request, request, agent_id)
        if isinstance(admitted, GuardRefusal):
            return SpawnRefused(admitted.code.value, admitted.message)
        try:
            ws = await asyncio.to_thread(
                make_workspace,
                plan.kind,
                self.workspace,
                self.identity.run_dir / "worktrees",
                agent_id,
                branch=plan.branch,
            )
        except (WorkspaceError, OSError) as exc:
            self.ledger.finished(agent_id)
            return SpawnRefused("WORKSPACE", str(exc))
        gate_cfg = self._child_gate(resolved, ws.path)
        assert not isinstance(gate_cfg, Refusal)  # the probe above already passed
        if self.ablation.get("open_gate"):
            gate_cfg = gate_cfg.model_copy(update={"kind": "open"})
        agent_dir = self.agents_dir / agent_id
        private_dirs(agent_dir)
        config = ChildConfig(
            agent=definition,
            task=task,
            context=context,
            root_run_id=self.identity.root_run_id,
            run_id=uuid.uuid4().hex,
            parent_id=self.identity.agent_id,
            agent_id=agent_id,
            depth=admitted.depth,
            parent_pid=os.getpid(),
            run_dir=str(self.identity.run_dir),
            agent_dir=str(agent_dir),
            workspace=str(ws.path),
            project_dir=self.project_dir,
            mode=mode,
            tools=resolved.tools,
            filter_registry=not self.ablation.get("unfiltered_registry", False),
            gate=gate_cfg,
            hooks=self.hooks,
            provider=resolved.provider,
            child_deny=self.child_deny,
            spawnable=resolved.spawnable,
            context_budget=self.context_budget,
            max_turns=resolved.max_turns,
            mcp_servers=servers_for_surface(self.mcp_servers, resolved.tools),
            mcp_classes=self.mcp_classes,
        )
        record = ChildRecord(
            agent_id=agent_id,
            agent=agent,
            task=task,
            depth=admitted.depth,
            mode=mode,
            tools=config.tools,
            workspace=ws,
            agent_dir=agent_dir,
            sync=sync,
            started=time.monotonic(),
        )
        self.children[agent_id] = record
        record.choice = plan.describe()
        self._write_child_header(config, admitted, resolved, plan)
        self._emit_spawn(agent_id, mode, config.tools, resolved.mode)
        # Redacted like every file metis writes: the child works on what is on disk.
        write_private_json(agent_dir / "config.json", config.model_dump(mode="json"))
        try:
            if self.inline:
                self._start_inline(record, config)
            else:
                await self._start(record, config)
        except OSError as exc:
            record.status, record.error = "failed", f"could not start: {exc}"
            self._finish(record)
            record.reported = True  # the spawn's own result says so
            return record
        record.watcher = asyncio.ensure_future(self._watch(record))
        if sync:
            await self._await_child(record)
            record.reported = True
        return record

    def _write_child_header(
        self,
        config: ChildConfig,
        admitted: GuardAdmit,
        resolved: ResolvedAgent,
        plan: WorkspacePlan,
    ) -> None:
        header = TraceHeader(
            run_id=config.run_id,
            root_run_id=config.root_run_id,
            parent_id=config.parent_id,
            agent_id=config.agent_id,
            depth=config.depth,
            mode=config.mode,
            route=Route.HEADLESS,
            headless_default=config.gate.headless_default,
            tools=config.tools,
            hooks=header_hooks(config.hooks),
            producer=PRODUCER,
            meta={
                "agent": config.agent.name,
                "task": config.task,
                "task_hash": admitted.task_hash,
                "forced": admitted.forced,
                "guard": self.limits.to_json(),
                "workspace": config.workspace,
                "worktree": plan.describe(),
                "definition": config.agent.path or config.agent.origin,
                "provider": {
                    "kind": config.provider.kind,
                    "model": config.provider.model,
                    "base_url": config.provider.base_url,
                    "thinking": config.provider.thinking,
                    "headers": sorted(config.provider.headers),
                    "routing": config.provider.routing,
                    "sources": dict(resolved.sources),
                },
                **({"notes": list(resolved.notes)} if resolved.notes else {}),
                **({"mode_note": resolved.mode_note} if resolved.mode_note else {}),
                **_gate_meta(config),
            },
        )
        TraceWriter(config.trace_path, header).close()

    async def _start(self, record: ChildRecord, config: ChildConfig) -> None:
        env = sanitized_env(self.env, config.agent.env)
        log = open_private(record.agent_dir / "stderr.log", os.O_WRONLY | os.O_APPEND)
        try:
            proc = await asyncio.create_subprocess_exec(
                self.python,
                "-m",
                CHILD_MODULE,
                str(record.agent_dir / "config.json"),
                cwd=str(record.workspace.path),
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,  # its own process group: pgid == pid
                preexec_fn=die_with_parent,  # dies with us, even on SIGKILL
            )
        finally:
            os.close(log)
        record.process = proc
        record.pid = proc.pid
        record.status = "running"
        register_group(proc.pid)
        await asyncio.to_thread(self.ledger.started, record.agent_id, proc.pid)

    def _start_inline(self, record: ChildRecord, config: ChildConfig) -> None:
        assert self.inline is not None
        record.inline = asyncio.ensure_future(self.inline(config, env=self.env))
        record.status = "running"
        self.ledger.started(record.agent_id, os.getpid())

    async def _exited(self, record: ChildRecord) -> None:
        if record.process is not None:
            await record.process.wait()
        elif record.inline is not None:
            await asyncio.wait({record.inline})  # never raises: the task's outcome stays in it

    def _returncode(self, record: ChildRecord) -> int | None:
        if record.process is not None:
            return record.process.returncode
        task = record.inline
        if task is None or not task.done() or task.cancelled():
            return None
        if task.exception() is not None:
            record.error = record.error or f"{type(task.exception()).__name__}: {task.exception()}"
            return 1
        return 0 if task.result().status.value == "completed" else 1

    async def _watch(self, record: ChildRecord) -> None:
        remaining = self.limits.timeout_s - (time.monotonic() - record.started)
        try:
            await asyncio.wait_for(self._exited(record), timeout=max(remaining, 0.01))
        except TimeoutError:
            record.kill_reason = record.kill_reason or "timed_out"
            await self._terminate(record)
        except asyncio.CancelledError:
            record.kill_reason = record.kill_reason or "cancelled"
            await self._terminate(record)
            self._collect(record, self._returncode(record))
            self._finish(record)
            raise
        self._collect(record, self._returncode(record))
        self._finish(record)

    async def _terminate(self, record: ChildRecord) -> None:
        if record.inline is not None:
            record.inline.cancel()
            await asyncio.wait({record.inline}, timeout=KILL_GRACE_S)
            return
        proc = record.process
        if proc is None or proc.returncode is not None:
            return
        signal_group(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), KILL_GRACE_S)
        except TimeoutError:
            signal_group(proc.pid, signal.SIGKILL)
            await proc.wait()
        # Whatever of its group outlived it goes too.
        signal_group(proc.pid, signal.SIGKILL)

    def _collect(self, record: ChildRecord, returncode: int | None) -> None:
        data: dict[str, Any] = {}
        with contextlib.suppress(InputError):  # no result (or a bad one): the status says why
            loaded = read_input_json(record.agent_dir / "result.json")
            if isinstance(loaded, dict):
                data = loaded
        record.text = str(data.get("text", ""))
        turns = data.get("turns", 0)
        record.turns = turns if type(turns) is int and turns >= 0 else 0
        status = str(data.get("status", ""))
        if record.kill_reason is not None:
            record.status = record.kill_reason
            record.error = record.error or {
                "timed_out": f"killed after the {self.limits.timeout_s:g} s timeout",
                "cancelled": "cancelled with its parent's call",
                "killed": "killed by its parent",
            }.get(record.kill_reason, record.kill_reason)
        elif status == "completed" and returncode == 0:
            record.status = "completed"
        else:
            # A child that ended any other way (interrupted, crashed) failed.
            record.status = "cancelled" if status == "cancelled" else "failed"
            record.error = str(data.get("error") or "") or self._stderr_tail(record, returncode)

    @staticmethod
    def _stderr_tail(record: ChildRecord, returncode: int | None) -> str:
        try:
            with open(record.agent_dir / "stderr.log", "rb") as fh:
                fh.seek(max(0, os.fstat(fh.fileno()).st_size - _STDERR_WINDOW))
                tail = fh.read().decode("utf-8", "replace")
        except OSError:
            tail = ""
        # Redacted before it is cut, so the cut never shows a credential's tail.
        last = " ".join(default_redactor().text(tail).split())[-200:]
        return f"exit status {returncode}" + (f": {last}" if last else "")

    def _finish(self, record: ChildRecord) -> None:
        record.ended = time.monotonic()
        if record.process is not None:
            unregister_group(record.process.pid)
        self.ledger.finished(record.agent_id)
        if record.status == "completed":
            with contextlib.suppress(WorkspaceError, OSError):
                record.changed = tuple(printable(p) for p in changed_files(record.workspace))
            self.workspaces.keep(record.agent_id, record.workspace)
        else:
            with contextlib.suppress(WorkspaceError, OSError):
                self.workspaces.drop(record.workspace)
        record.done.set()

    async def _await_child(self, record: ChildRecord) -> None:
        try:
            await record.done.wait()
        except asyncio.CancelledError:
            # The parent's call was cancelled: the child goes with it.
            record.kill_reason = "cancelled"
            if record.watcher is not None:
                record.watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await record.watcher
            raise

    # --- the other tools --------------------------------------------------------

    def find(self, agent_id: str) -> ChildRecord | None:
        return self.children.get(agent_id)

    def listing(self) -> list[dict[str, Any]]:
        return [r.summary() for r in self.children.values()]

    async def wait(
        self, agent_ids: Sequence[str] = (), timeout_s: float | None = None
    ) -> tuple[list[ChildRecord], list[str]]:
        """Wait for these children (default: every one whose answer this agent
        has not had yet: running ones, and async ones that ended before the
        wait). Returns the records and the ids that are not this agent's children."""
        unknown = [a for a in agent_ids if a not in self.children]
        chosen = [self.children[a] for a in agent_ids if a in self.children]
        if not agent_ids:
            chosen = [r for r in self.children.values() if not r.finished or not r.reported]
        pending = [asyncio.ensure_future(r.done.wait()) for r in chosen if not r.finished]
        if pending:
            _, still = await asyncio.wait(pending, timeout=timeout_s)
            for task in still:
                task.cancel()
        for record in chosen:
            record.reported = record.reported or record.finished
        return chosen, unknown

    async def kill(self, agent_id: str, *, cascade: bool = True) -> ChildRecord | None:
        record = self.children.get(agent_id)
        if record is None:
            return None
        if record.finished:
            return record
        record.kill_reason = "killed"
        proc = record.process
        if record.inline is not None:
            await self._terminate(record)
        elif proc is not None and proc.returncode is None:
            if cascade:
                await self._terminate(record)
            else:
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)
        await record.done.wait()
        return record

    def message(self, agent_id: str, text: str) -> str | None:
        """Queue guidance for a running child (read before its next request);
        None if it was delivered, else why not."""
        record = self.children.get(agent_id)
        if record is None:
            return f"{agent_id} is not a child of this agent"
        if record.finished:
            return f"{agent_id} has already {record.status}"
        append_private_jsonl(
            record.agent_dir / "inbox.jsonl", {"from": self.identity.agent_id, "text": text}
        )
        return None

    def _integrable(self, agent_id: str) -> ChildRecord:
        """The child whose retained workspace may be integrated; WorkspaceError
        (one line, saying why) if there is none."""
        record = self.children.get(agent_id)
        if record is None:
            raise WorkspaceError(f"{agent_id} is not a child of this agent")
        if not record.finished:
            raise WorkspaceError(
                f"agent {agent_id} is still running; wait for it with wait_agent first"
            )
        if record.workspace.kind is WorkspaceKind.INHERIT:
            raise WorkspaceError(
                f"agent {agent_id} worked in your own directory (worktree inherit): "
                "its changes are already there"
            )
        if record.integrated:
            raise WorkspaceError(f"agent {agent_id}: its workspace was already integrated")
        if record.status != "completed":
            raise WorkspaceError(
                f"agent {agent_id} {record.status}: its workspace was removed, nothing to integrate"
            )
        if agent_id not in self.workspaces.retained:
            raise WorkspaceError(f"agent {agent_id}: no workspace of it is retained")
        return record

    def integration_plan(self, agent_id: str) -> IntegrationPlan:
        """What integrating this child's workspace would change, before anything
        changes (WorkspaceError: unknown, running, nothing retained, or the
        changes cannot be listed)."""
        self._integrable(agent_id)
        return self.workspaces.plan(agent_id)

    def integrate(self, agent_id: str, expect: IntegrationPlan | None = None) -> list[str]:
        """Apply a completed child's retained workspace to this agent's
        workspace (the plan `expect`, if given), then remove it; returns the
        changed paths. WorkspaceError, and nothing changed, on a refusal, a
        conflict, or a workspace that no longer matches `expect`."""
        record = self._integrable(agent_id)
        changed = self.workspaces.integrate(agent_id, expect)
        record.integrated = True
        return changed

    async def close(self) -> None:
        """Kill every running child, then remove the retained workspaces."""
        for record in list(self.children.values()):
            if not record.finished and (record.process is not None or record.inline is not None):
                record.kill_reason = record.kill_reason or "cancelled"
                await self._terminate(record)
        watchers = [r.watcher for r in self.children.values() if r.watcher is not None]
        if watchers:
            await asyncio.gather(*watchers, return_exceptions=True)
        self.workspaces.close()


def new_tree(
    run_dir: str | os.PathLike[str],
    limits: Any = None,
    *,
    root_run_id: str | None = None,
    agent_id: str = "root",
) -> tuple[AgentIdentity, SpawnLedger]:
    """The identity of a root agent and a fresh ledger for its tree."""
    from ._guard import GuardLimits

    run = private_dirs(run_dir)
    if limits is None:
        limits = GuardLimits()
    if not isinstance(limits, GuardLimits):
        raise ConfigError("limits: expected GuardLimits")
    ledger = SpawnLedger.create(run / "guard.json", limits)
    return AgentIdentity(root_run_id or uuid.uuid4().hex, agent_id, 0, run), ledger


def _gate_meta(config: ChildConfig) -> dict[str, Any]:
    """The child's gate as its header records it (`meta.permissions`, AUTH-4
    and CHILD-2): the gate the child builds from the same config."""
    gate = build_gate(config.gate, Path(config.workspace))
    describe = getattr(gate, "header_meta", None)
    return {"permissions": describe()} if callable(describe) else {}
