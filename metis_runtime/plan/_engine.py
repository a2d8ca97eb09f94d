"""The full engine's proposer: the provider proposes a Framework as structured output.

The request goes to the provider with the catalog described in the system
prompt and one tool, `propose_framework`, whose input schema is the
framework's; the provider is asked to call exactly that tool (`tool_choice`,
Anthropic's `{"type": "tool", "name": ...}`, OpenAI's function choice). The
call's input is the framework. No framework (a text answer, a malformed one)
is a structural failure of the proposal (`wrong_args`); a provider failure is
operational. Fillers with no value and no default may be asked of the
provider (their model role names the intent; the replay provider has no
answers to spare for them, so there they become `needs_inputs`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from collections.abc import Sequence

from metis_trace import TERMINAL_TOOL
from metis_trace import ErrorClass
from metis_trace import ExecutorInfo
from metis_trace import Filler
from metis_trace import Framework
from metis_trace import parse_framework

from .._errors import ProviderError
from ..providers import Message
from ..providers import ModelRequest
from ..providers import Provider
from ..providers import ToolSpec
from ..providers import complete

PROPOSE_TOOL = "propose_framework"
FRAMEWORK_SCHEMA = {
    "type": "object",
    "properties": {
        "steps": {
            "type": "array",
            "description": f"The steps in order; the last one is {{'tool': '{TERMINAL_TOOL}'}}.",
            "items": {
                "type": "object",
                "properties": {
                    "tool": {"type": "string"},
                    "args": {"type": "object"},
                    "when": {
                        "type": "object",
                        "description": '{"nonempty": N} or {"empty": N}',
                    },
                },
                "required": ["tool"],
            },
        },
        "fillers": {
            "type": "object",
            "description": "name -> {prompt, default, role}: short values left open",
        },
    },
    "required": ["steps"],
}
SYSTEM = """You plan for the metis plan runtime. Answer only by calling propose_framework.
A framework is a finite list of steps; each step names one executor of the catalog
below and gives arguments that fit its schema. The last step is {"tool": "final_answer"}.
Pass data between steps with references, never by copying it:
  "from_step": N        the collection step N produced (into the executor's collection argument)
  "${stepN.field}"      one field of step N's output (dot paths; numbers index lists)
  "${RUNTIME:key}"      turn_id, owner, channel, conversation, now, date, target.<name>
  "${FILLER:name}"      a short value you declare under "fillers" instead of inventing it
A step may carry "when": {"nonempty": N} to run only if step N's collection is not empty.
Use only executors of the catalog, at most %(cap)d steps before the terminal.

Catalog:
%(catalog)s"""


class ProposalError(Exception):
    """No usable framework: `cls` says whether it is structural or operational."""

    def __init__(self, cls: ErrorClass, message: str) -> None:
        super().__init__(message)
        self.cls = cls


def describe_catalog(executors: Sequence[ExecutorInfo], descriptions: Mapping[str, str]) -> str:
    lines = []
    for e in executors:
        extra = []
        if e.consumes:
            extra.append(f"from_step goes into '{e.consumes}'")
        if e.produces == "collection":
            extra.append("produces a collection")
        lines.append(
            f"- {e.name} ({e.effect.value}): {descriptions.get(e.name, '')}"
            f"{' [' + '; '.join(extra) + ']' if extra else ''}\n"
            f"  args: {json.dumps(e.args_schema, sort_keys=True)}"
        )
    return "\n".join(lines)


class Proposer:
    def __init__(
        self,
        provider: Provider,
        executors: Sequence[ExecutorInfo],
        descriptions: Mapping[str, str],
        cap: int,
    ):
        self.provider = provider
        self.system = SYSTEM % {"cap": cap, "catalog": describe_catalog(executors, descriptions)}

    async def propose(self, request: str, feedback: str = "") -> Framework:
        """A framework for `request` (with `feedback` about a failed one)."""
        text = request if not feedback else f"{request}\n\nThe previous plan failed: {feedback}"
        ask = ModelRequest(
            system=self.system,
            messages=(Message.user(text),),
            tools=(ToolSpec(PROPOSE_TOOL, "Propose the framework.", FRAMEWORK_SCHEMA),),
            max_tokens=4096,
            tool_choice=PROPOSE_TOOL,
        )
        try:
            answer = await complete(self.provider, ask)
        except ProviderError as exc:
            raise ProposalError(ErrorClass.OPERATIONAL, f"the proposer failed: {exc}") from exc
        calls = [b for b in answer.tool_uses if b.name == PROPOSE_TOOL]
        if not calls:
            raise ProposalError(ErrorClass.WRONG_ARGS, "the proposer answered without a framework")
        if calls[0].input_error is not None:
            raise ProposalError(
                ErrorClass.WRONG_ARGS, f"the framework is not JSON ({calls[0].input_error})"
            )
        try:
            return parse_framework(calls[0].input)
        except ValueError as exc:
            raise ProposalError(
                ErrorClass.WRONG_ARGS, f"the framework is malformed: {exc}"
            ) from exc

    async def fill(self, name: str, filler: Filler, request: str) -> str | None:
        """A short value for a filler, from the provider (None if it gives none)."""
        ask = ModelRequest(
            system=f"Answer with the value only, on one line. Role: {filler.role.value}.",
            messages=(Message.user(f"Request: {request}\n{filler.prompt}"),),
            max_tokens=200,
        )
        try:
            answer = await complete(self.provider, ask)
        except ProviderError:
            return None
        value = " ".join(answer.text.split())[:200]
        return value or None
