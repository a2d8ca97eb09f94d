"""Write a pydantic-ai message history with the real library, offline (FunctionModel).

Run: python tests/data/transcripts/pydantic-ai/generate.py > weather-tools.json
"""

import json
import sys

from pydantic_ai import Agent
from pydantic_ai import ModelRetry
from pydantic_ai.messages import ModelMessage
from pydantic_ai.messages import ModelResponse
from pydantic_ai.messages import TextPart
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.models.function import AgentInfo
from pydantic_ai.models.function import FunctionModel


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    calls = sum(1 for m in messages if isinstance(m, ModelResponse))
    if calls == 0:  # two parallel calls
        return ModelResponse(
            parts=[
                ToolCallPart("get_weather", {"city": "Paris"}, tool_call_id="call_w1"),
                ToolCallPart("get_time", {"tz": "CET"}, tool_call_id="call_t1"),
            ]
        )
    if calls == 1:  # a call that the tool asks to retry
        return ModelResponse(
            parts=[ToolCallPart("get_weather", {"city": ""}, tool_call_id="call_w2")]
        )
    if calls == 2:
        return ModelResponse(
            parts=[ToolCallPart("get_weather", {"city": "Lyon"}, tool_call_id="call_w3")]
        )
    return ModelResponse(parts=[TextPart("Paris 21C, Lyon 19C, 14:05 CET.")])


agent = Agent(FunctionModel(model))


@agent.tool_plain
def get_weather(city: str) -> str:
    if not city:
        raise ModelRetry("city must not be empty")
    return f"{city}: 21C"


@agent.tool_plain
def get_time(tz: str) -> str:
    return f"14:05 {tz}"


result = agent.run_sync("Weather in Paris and Lyon, and the time?")
sys.stdout.write(json.dumps(json.loads(result.all_messages_json()), indent=2) + "\n")
