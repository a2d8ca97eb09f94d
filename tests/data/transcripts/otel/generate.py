"""Write OTLP JSON spans of an instrumented pydantic-ai run, offline.

pydantic-ai's OpenTelemetry instrumentation (GenAI semantic conventions) records
the run; the OpenTelemetry SDK collects the spans in memory; the official OTLP
encoder (`opentelemetry-exporter-otlp-proto-common`) turns them into an OTLP
`ExportTraceServiceRequest`, written as OTLP JSON (protobuf's JSON mapping: one
`TracesData` object per line, as the OpenTelemetry file exporter writes).

Run: python tests/data/transcripts/otel/generate.py > pydantic-ai-weather.jsonl
(needs opentelemetry-sdk and opentelemetry-exporter-otlp-proto-common).
"""

import base64
import json
import sys

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage
from pydantic_ai.messages import ModelResponse
from pydantic_ai.messages import TextPart
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.models.function import AgentInfo
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    turns = sum(1 for m in messages if isinstance(m, ModelResponse))
    if turns == 0:
        return ModelResponse(
            parts=[
                ToolCallPart("get_weather", {"city": "Paris"}, tool_call_id="call_w1"),
                ToolCallPart("get_time", {"tz": "CET"}, tool_call_id="call_t1"),
            ]
        )
    return ModelResponse(parts=[TextPart("Paris 21C at 14:05 CET.")])


exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
settings = InstrumentationSettings(tracer_provider=provider, include_content=True)
Agent.instrument_all(settings)
agent = Agent(FunctionModel(model, model_name="function-model"))


@agent.tool_plain
def get_weather(city: str) -> str:
    return f"{city}: 21C"


@agent.tool_plain
def get_time(tz: str) -> str:
    return f"14:05 {tz}"


agent.run_sync("Weather in Paris, and the time?")


def otlp_json(value: object) -> object:
    """protobuf's JSON mapping into OTLP/JSON: trace and span ids hex, not base64
    (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding)."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(item, str):
                item = base64.b64decode(item).hex()
            out[key] = otlp_json(item)
        return out
    if isinstance(value, list):
        return [otlp_json(v) for v in value]
    return value


request = encode_spans(exporter.get_finished_spans())
data = MessageToDict(request, use_integers_for_enums=True)  # enums as integers, as OTLP/JSON wants
sys.stdout.write(json.dumps(otlp_json(data)) + "\n")
