"""The agent tools: spawn_agent, list_agents, wait_agent, kill_agent,
message_agent, integrate_agent.

Each is a `metis_runtime.tools.Tool` bound to one `AgentSupervisor`, so they
plug into a `ToolRegistry` like any other tool. A refused spawn is an error
result whose text starts with `spawn refused: <CODE>:`, never an exception.

Classification: spawning, killing and messaging are `exec` (they start or
stop processes, or steer them); a sync spawn into the parent's own
directory is Exclusive (the child edits the same files), other spawns and
the kill/message tools are Queue calls on `agents:<id>` keys; listing and
waiting are read-only and Safe. Integrating is `edit` and Exclusive: its
classification lists, resolved, every path the integration would change
(planned from the child's retained workspace before anything runs), so the
gate's protected-path and scope checks see each one; a child that cannot be
integrated, or whose changes cannot be listed, is a ToolError there.
"""

from __future__ import annotations

import json

from metis_trace import CallClass
from metis_trace import Mode
from metis_trace import ToolKind

from .._errors import ToolError
from ..tools import Classification
from ..tools import Tool
from ..tools import ToolContext
from ..tools import ToolInput
from ..tools import ToolOutput
from ..tools import ToolSpec
from ..tools._base import object_schema
from ..tools._files import display_path
from ._guard import task_digest
from ._records import SpawnRefused
from ._supervisor import AgentSupervisor
from ._worktree import IntegrationPlan
from ._worktree import WorkspaceError
from ._worktree import printable

_STRINGS = {"type": "array", "items": {"type": "string"}}


class _AgentTool(Tool):
    def __init__(self, supervisor: AgentSupervisor) -> None:
        self.supervisor = supervisor


class _Reading(_AgentTool):
    """A tool that only reads the agents' state (list, wait): read-only and Safe."""

    def kind(self, input: ToolInput) -> ToolKind:
        return ToolKind.READ_ONLY

    def classify(self, input: ToolInput, ctx: ToolContext) -> Classification:
        return Classification(CallClass.SAFE, None, ToolKind.READ_ONLY)


class _Steering(_AgentTool):
    """A tool that acts on the one agent `agent_id` names (kill, message):
    `exec`, queued on `agents:<id>`."""

    def kind(self, input: ToolInput) -> ToolKind:
        return ToolKind.EXEC

    def classify(self, input: ToolInput, ctx: ToolContext) -> Classification:
        self.validate(input)
        return Classification(CallClass.QUEUE, f"agents:{input['agent_id']}", ToolKind.EXEC)


class SpawnAgentTool(_AgentTool):
    spec = ToolSpec(
        "spawn_agent",
        "Start a sub-agent on a task. `agent`: a definition name (list_agents shows "
        "them). `mode`: sync waits for its answer, async returns its id at once "
        "(collect it with wait_agent); default: sync, unless the definition runs in the "
        "background. `worktree`: inherit (work in this directory), branch (a git "
        "worktree from a snapshot of this workspace), branch:<name> (the same, on a "
        "new branch of that name), temp (a copy), auto (branch in a git repository, "
        "else temp); default: the definition's, else inherit. "
        "`tools` narrows its tools; `permission_mode` may only be as strict as yours "
        "or stricter. The same task for the same agent is refused unless you pass "
        "`force: true` or a `rationale`.",
        object_schema(
            {
                "agent": {"type": "string", "minLength": 1},
                "task": {"type": "string", "minLength": 1},
                "mode": {"type": "string", "enum": ["sync", "async"]},
                "worktree": {
                    "type": "string",
                    "pattern": "^(inherit|branch|temp|auto|branch:.+)$",
                },
                "tools": _STRINGS,
                "disallowed_tools": _STRINGS,
                "permission_mode": {"type": "string", "enum": [m.value for m in Mode]},
                "context": {"type": "string"},
                "force": {"type": "boolean"},
                "rationale": {"type": "string"},
            },
            ("agent", "task"),
        ),
    )

    def kind(self, input: ToolInput) -> ToolKind:
        return ToolKind.EXEC

    def classify(self, input: ToolInput, ctx: ToolContext) -> Classification:
        self.validate(input)
        mode, worktree = input.get("mode"), input.get("worktree")
        if self.supervisor.runs_in_place(str(input["agent"]), mode, worktree):
            return Classification(CallClass.EXCLUSIVE, None, ToolKind.EXEC)
        key = f"agents:spawn:{input['agent']}:{task_digest(str(input['task']))}"
        return Classification(CallClass.QUEUE, key, ToolKind.EXEC)

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        self.validate(input)
        mode = input.get("permission_mode")
        tools = input.get("tools")
        got = await self.supervisor.spawn(
            str(input["agent"]),
            str(input["task"]),
            sync=input["mode"] == "sync" if "mode" in input else None,
            worktree=str(input["worktree"]) if "worktree" in input else None,
            tools=[str(t) for t in tools] if tools is not None else None,
            disallowed_tools=[str(t) for t in input.get("disallowed_tools", ())],
            permission_mode=Mode(mode) if mode is not None else None,
            context=str(input.get("context", "")),
            force=bool(input.get("force", False)),
            rationale=str(input.get("rationale", "")),
        )
        if isinstance(got, SpawnRefused):
            return ToolOutput(got.text(), is_error=True)
        record = got
        if not record.finished:
            return ToolOutput(
                f"started agent {record.agent_id} ({record.agent}) at depth {record.depth}; "
                "collect its answer with wait_agent"
            )
        return ToolOutput(record.report(), is_error=record.status != "completed")


class ListAgentsTool(_Reading):
    spec = ToolSpec(
        "list_agents",
        "List your sub-agents (status, depth, workspace) and the agent definitions you can spawn.",
        object_schema({}, ()),
    )

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        sup = self.supervisor
        definitions = [
            {"name": d.name, "description": d.description, "origin": d.origin}
            for d in sorted(sup.catalog.agents.values(), key=lambda d: d.name)
        ]
        snapshot = sup.ledger.snapshot()
        body = {
            "children": sup.listing(),
            "definitions": definitions,
            "tree": {
                "spawned": snapshot.total,
                "running": len(snapshot.running),
                "limits": snapshot.limits.to_json(),
            },
        }
        return ToolOutput(json.dumps(body, indent=1))


class WaitAgentTool(_Reading):
    spec = ToolSpec(
        "wait_agent",
        "Wait for sub-agents to finish (default: every one whose answer you have not "
        "had yet), at most `timeout_s` seconds; returns each one's status and answer.",
        object_schema(
            {
                "agent_ids": _STRINGS,
                "timeout_s": {"type": "number", "exclusiveMinimum": 0},
            },
            (),
        ),
    )

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        self.validate(input)
        ids = [str(a) for a in input.get("agent_ids", ())]
        timeout = input.get("timeout_s")
        records, unknown = await self.supervisor.wait(
            ids, float(timeout) if timeout is not None else None
        )
        parts = [
            r.report() if r.finished else f"agent {r.agent_id}: still running" for r in records
        ]
        if unknown:
            parts.append(f"not your agents: {', '.join(unknown)}")
        if not parts:
            parts.append("no running sub-agents")
        failed = bool(unknown) or any(r.finished and r.status != "completed" for r in records)
        return ToolOutput("\n\n".join(parts), is_error=failed)


class KillAgentTool(_Steering):
    spec = ToolSpec(
        "kill_agent",
        "Terminate a sub-agent. With `cascade` (default) its whole process group goes, "
        "and every agent it started with it.",
        object_schema(
            {"agent_id": {"type": "string"}, "cascade": {"type": "boolean"}}, ("agent_id",)
        ),
    )

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        self.validate(input)
        agent_id = str(input["agent_id"])
        record = await self.supervisor.kill(agent_id, cascade=bool(input.get("cascade", True)))
        if record is None:
            return ToolOutput(f"{agent_id} is not a child of this agent", is_error=True)
        return ToolOutput(f"agent {agent_id}: {record.status}")


class MessageAgentTool(_Steering):
    spec = ToolSpec(
        "message_agent",
        "Send guidance to a running sub-agent; it reads it before its next model request.",
        object_schema(
            {"agent_id": {"type": "string"}, "message": {"type": "string", "minLength": 1}},
            ("agent_id", "message"),
        ),
    )

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        self.validate(input)
        problem = self.supervisor.message(str(input["agent_id"]), str(input["message"]))
        if problem is not None:
            return ToolOutput(problem, is_error=True)
        return ToolOutput(f"message queued for {input['agent_id']}")


def _one_line(exc: Exception) -> str:
    return printable(" ".join(str(exc).split()))


class IntegrateAgentTool(_AgentTool):
    """`integrate_agent`: apply a finished child's retained workspace to this one.

    `classify` plans the integration (the supervisor's `integration_plan`)
    and keeps the plan; `run` applies exactly that plan, and refuses if the
    child's workspace changed since (the gate saw other paths), or if no
    plan was made for the agent (a call that was never classified).
    """

    spec = ToolSpec(
        "integrate_agent",
        "Apply a finished sub-agent's kept workspace (worktree branch or temp) to your "
        "workspace: its new and changed files land here (a branch also brings its "
        "deletions), then its workspace is removed. Returns the changed paths. Wait for "
        "a running agent with wait_agent first. If its changes conflict with yours, "
        "nothing is changed.",
        object_schema({"agent_id": {"type": "string", "minLength": 1}}, ("agent_id",)),
    )

    def __init__(self, supervisor: AgentSupervisor) -> None:
        super().__init__(supervisor)
        self._planned: dict[str, IntegrationPlan] = {}

    def kind(self, input: ToolInput) -> ToolKind:
        return ToolKind.EDIT

    def classify(self, input: ToolInput, ctx: ToolContext) -> Classification:
        self.validate(input)
        agent_id = str(input["agent_id"])
        try:
            plan = self.supervisor.integration_plan(agent_id)
        except WorkspaceError as exc:
            raise ToolError(f"integrate_agent: {_one_line(exc)}") from exc
        self._planned[agent_id] = plan
        return Classification(CallClass.EXCLUSIVE, None, ToolKind.EDIT, plan.targets)

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        self.validate(input)
        agent_id = str(input["agent_id"])
        plan = self._planned.get(agent_id)
        try:
            if plan is None:
                self.supervisor.integration_plan(agent_id)  # says why not, if it cannot be
                raise WorkspaceError(
                    f"the integration of agent {agent_id} was not planned by a permission "
                    "check; call integrate_agent again"
                )
            # Synchronous, like the file tools: a cancellation cannot split it.
            changed = self.supervisor.integrate(agent_id, plan)
        except WorkspaceError as exc:
            return ToolOutput(f"integrate_agent: {_one_line(exc)}", is_error=True)
        self._planned.pop(agent_id, None)
        record = self.supervisor.find(agent_id)
        branch = record.workspace.branch if record is not None else None
        where = f"branch {branch}" if branch else "its copy"
        if not changed:
            return ToolOutput(f"agent {agent_id} changed nothing; its workspace was removed")
        shown = [printable(display_path(ctx.workspace, target)) for target in plan.targets]
        head = f"integrated agent {agent_id} ({where}): {len(shown)} path(s) changed"
        return ToolOutput("\n".join([head, *shown]))


def agent_tools(supervisor: AgentSupervisor) -> tuple[Tool, ...]:
    return (
        SpawnAgentTool(supervisor),
        ListAgentsTool(supervisor),
        WaitAgentTool(supervisor),
        KillAgentTool(supervisor),
        MessageAgentTool(supervisor),
        IntegrateAgentTool(supervisor),
    )
