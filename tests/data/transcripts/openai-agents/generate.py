"""Write OpenAI Agents SDK run items with the real SDK, offline (its ScriptedModel).

A triage agent hands off to a weather agent, which calls a function tool twice
in parallel and answers. `RunResult.to_state().to_json()` is the SDK's own
serialization of the run; its `generated_items` are the run items
(`{"type": "tool_call_item", "raw_item": {...}, "agent": ...}`).

Run: python tests/data/transcripts/openai-agents/generate.py > handoff-weather.json
"""

import json
import sys

from agents import Agent
from agents import Runner
from agents import function_tool
from agents.testing.model import ScriptedModel
from openai.types.responses import ResponseFunctionToolCall
from openai.types.responses import ResponseOutputMessage
from openai.types.responses import ResponseOutputText


def call(call_id: str, name: str, arguments: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        id=f"fc_{call_id}", call_id=call_id, name=name, arguments=arguments, type="function_call"
    )


def text(value: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg_1",
        role="assistant",
        status="completed",
        type="message",
        content=[ResponseOutputText(text=value, type="output_text", annotations=[])],
    )


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: 21C"


weather_model = ScriptedModel(
    [
        [
            call("call_w1", "get_weather", '{"city": "Paris"}'),
            call("call_w2", "get_weather", '{"city": "Lyon"}'),
        ],
        [text("Paris 21C, Lyon 21C.")],
    ]
)
weather = Agent(name="weather", model=weather_model, tools=[get_weather])
triage_model = ScriptedModel([[call("call_h1", "transfer_to_weather", "{}")]])
triage = Agent(name="triage", model=triage_model, handoffs=[weather])

result = Runner.run_sync(triage, "Weather in Paris and Lyon?")
state = result.to_state().to_json()
sys.stdout.write(json.dumps(state, indent=2, default=str) + "\n")
