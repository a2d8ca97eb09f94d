"""A workload for the real runtime: what the provider says, where, under which policy.

A `Workload` is everything one run needs, and nothing the runtime decides:

- `turns`: the provider's answers, one per request (tool calls, text,
  thinking; `overflow` makes the provider first refuse that request as too
  long, so the loop's overflow retry runs);
- `files`: the workspace it starts from;
- the settings: `mode`, `route` (how asks are answered), `headless_default`,
  permission `rules` (a Claude Code settings file), PreToolUse `hooks`,
  a `context_window`, and child `agents` (a definition and its own turns);
- `answers`: the scripted asker's replies, in the order the asks come;
- a fault schedule: one `fault` (a SIGKILL at a fail point of
  `metis_runtime._failpoints`, then a resume; or a cancel or interrupt when
  a call's effect starts);
- `canaries`: credential-looking values planted in the workspace, which no
  file the run writes may hold (TRACE-2);
- `guard`: spawn guard limits lower than the defaults, so refusals happen;
- `max_turns`: a turn limit the script runs into;
- for the mechanisms' workloads (`_mech.py`): `placed` files outside the
  scenario (relative to the run folder: `ws/.claude/...`, `home/...`,
  `managed/...`, `outside/...`), `hierarchy` (`metis run` reads the settings
  hierarchy, under a HOME and managed folder of the run's own), `detach_jobs`,
  `mcp_servers` (`--mcp-config`), and `probe` (a runner of its own: the plan
  path, the Claude Code hook).

It is a pydantic model so that a workload read back from a file (a
counterexample, a regression) is validated with errors naming the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from typing import Literal

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import model_validator

from metis_trace import Decision
from metis_trace import InputError
from metis_trace import Mode
from metis_trace import Route
from metis_trace import decode_json
from metis_trace import value_strict

# A root's provider wire: Messages SSE (the default) or OpenAI Responses streams.
Wire = Literal["anthropic", "openai-responses"]


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Call(_Frozen):
    """One tool_use block: the provider's call id, the tool, its input."""

    id: str
    tool: str
    input: dict[str, Any] = Field(default_factory=dict)


class Turn(_Frozen):
    """One assistant answer. No calls: the final answer of the run."""

    calls: tuple[Call, ...] = ()
    text: str = ""
    thinking: str = ""
    overflow: bool = False


class Rule(_Frozen):
    behavior: Literal["allow", "ask", "deny"]
    pattern: str


class Hook(_Frozen):
    """A PreToolUse command hook over tools matching `matcher` (a glob):
    `veto` exits 2 (the call is denied), otherwise it exits 0 (passes);
    `fails` exits 1, a guard that failed, which vetoes too (a failing guard
    fails closed: `metis_runtime/agents/_hooks.py`)."""

    id: str
    matcher: str = "*"
    veto: bool = False
    fails: bool = False

    @property
    def exit_status(self) -> int:
        """What its command exits with: 1 fails, 2 vetoes, 0 passes."""
        return 1 if self.fails else 2 if self.veto else 0


class Child(_Frozen):
    """A sub-agent definition (its name, allowed tools) and its own answers."""

    name: str
    tools: tuple[str, ...] | None = None
    turns: tuple[Turn, ...]


class Fault(_Frozen):
    """`kill`: `point` is a fail point (`journal:commit:1.2`); the process is
    killed there and the run resumed. `cancel` / `interrupt`: `point` is an
    occurrence; when its effect starts the batch is cancelled (the user's
    stop) or the run's task is cancelled (Ctrl-C), then resumed. `fail`:
    `point` is an occurrence; when its result is recorded the embedder's
    observer raises (a runtime failure mid-batch): the run ends interrupted,
    the batch's other calls open, left for a repair (CLOSE-2); a run whose end
    is recorded is not resumed.
    `again` (a kill only): a second fail point, armed in the first resume,
    so the recovery itself is killed (after its repair) and resumed once more."""

    kind: Literal["kill", "cancel", "interrupt", "fail"]
    point: str
    again: str | None = None


# The kill situations (`_coverage.py`): a kill at each kind of fail point
# (`kill:<where>:<kind>`), then the recovery killed too. One list, as the sweep
# aims at each and CI must reach each; the point kills are the journal's.
POINT_KILLS: tuple[str, ...] = tuple(
    f"kill:{p}"
    for p in (
        "journal:admit",
        "journal:commit",
        "trace:result",
        "journal:message",
        "trace:results_sent",
    )
)
KILLS: tuple[str, ...] = (*POINT_KILLS, "kill:recovery")


class Workload(_Frozen):
    name: str
    aims: tuple[str, ...] = ()
    prompt: str = "Work on the files of this workspace."
    files: dict[str, str] = Field(default_factory=dict)
    turns: tuple[Turn, ...]
    mode: Mode = Mode.DEFAULT
    route: Route = Route.HEADLESS
    headless_default: Decision = Decision.DENY
    rules: tuple[Rule, ...] = ()
    answers: tuple[bool, ...] = ()
    hooks: tuple[Hook, ...] = ()
    context_window: int | None = None
    context_recent: int = 4
    agents: tuple[Child, ...] = ()
    fault: Fault | None = None
    canaries: tuple[str, ...] = ()
    dispatcher: Literal["four-class", "serial"] = "four-class"
    guard: dict[Literal["max_depth", "max_total", "max_per_parent", "max_concurrent"], int] = Field(
        default_factory=dict
    )
    max_turns: int | None = None  # below the script's length: the run stops at the limit
    placed: dict[str, str] = Field(default_factory=dict)
    hierarchy: bool = False
    detach_jobs: bool = False
    mcp_servers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    probe: str | None = None
    # The root's provider wire (its children speak Anthropic): what the runtime
    # posts back is checked against that wire's provider rules.
    wire: Wire = "anthropic"

    @model_validator(mode="after")
    def _shape(self) -> Workload:
        if not self.turns or self.turns[-1].calls:
            raise ValueError("turns: the last turn must be an answer without calls")
        if self.wire != "anthropic" and any(t.overflow for t in self.turns):
            raise ValueError("turns: an overflow is written on the anthropic wire only")
        if self.route not in (Route.HEADLESS, Route.INTERACTIVE, Route.PROTOCOL):
            raise ValueError(
                f"route: a root agent runs headless, interactive or protocol, "
                f"not {self.route.value}"
            )
        if self.headless_default not in (Decision.ALLOW, Decision.DENY):
            raise ValueError("headless_default: allow or deny")
        if self.context_window is not None and self.context_window < 1:
            raise ValueError("context_window: must be positive")
        if self.max_turns is not None and self.max_turns < 1:
            raise ValueError("max_turns: must be at least 1")
        for name in self.placed:
            parts = Path(name).parts
            if Path(name).is_absolute() or ".." in parts or not parts:
                raise ValueError(f"placed: {name!r} must be a relative path inside the run")
        if any(v < 0 for v in self.guard.values()):
            raise ValueError("guard: limits must be 0 or more")
        names = [c.name for c in self.agents]
        if len(set(names)) != len(names):
            raise ValueError(f"agents: names must be unique, got {names}")
        return self

    @property
    def calls(self) -> tuple[tuple[str, Call], ...]:
        """Every call of the root's script with its occurrence `<turn>.<index>`."""
        return tuple(
            (f"{t}.{i}", c)
            for t, turn in enumerate(self.turns, 1)
            for i, c in enumerate(turn.calls)
        )

    @property
    def size(self) -> int:
        """What shrinking makes smaller: calls, turns, files, agents, settings."""
        child_calls = sum(len(t.calls) for c in self.agents for t in c.turns)
        return (
            len(self.calls) * 4
            + len(self.turns)
            + len(self.files)
            + child_calls * 4
            + len(self.rules)
            + len(self.hooks)
            + (self.fault is not None)
        )

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_defaults=True)


class WorkloadError(ValueError):
    """A workload file that cannot be read; the message names file and field."""


def workload_from_json(data: Any, where: str = "workload") -> Workload:
    """A decoded workload, validated with JSON's strictness (no coercion:
    `"overflow": "yes"` is no boolean); errors name the field."""
    try:
        return value_strict(Workload, data, source=where)
    except InputError as exc:
        raise WorkloadError(str(exc)) from None


def parse_workload(text: str, source: str, *, scenario: bool) -> Workload:
    """A workload from its text: JSON, or (`scenario`) the `explore:` section of
    a scenario YAML. Strict JSON / YAML with nesting and number limits; every
    failure one `WorkloadError` line naming `source`."""
    from metis_runtime import input_json_limits
    from metis_runtime import load_yaml

    try:
        if scenario:
            data = load_yaml(text, source=source)
            if not isinstance(data, dict) or "explore" not in data:
                raise WorkloadError(
                    f"{source}: explore: missing (not a scenario written by explore)"
                )
            return workload_from_json(data["explore"], source)
        return workload_from_json(
            decode_json(text, source=source, limits=input_json_limits()), source
        )
    except InputError as exc:
        raise WorkloadError(str(exc)) from None


def read_workload(path: Path) -> Workload:
    """A workload saved as JSON (or a scenario YAML, by its suffix), read as
    every metis reader reads (`metis_runtime.read_input_text`): a regular file
    only, bounded, strict UTF-8."""
    from metis_runtime import read_input_text

    try:
        text = read_input_text(path)
    except InputError as exc:
        raise WorkloadError(str(exc)) from None
    return parse_workload(text, str(path), scenario=path.suffix in (".yaml", ".yml"))
