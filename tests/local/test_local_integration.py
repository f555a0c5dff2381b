"""The real SmolLM2-135M-Instruct: a schema answer on both backends, then a tool call, a tool chain ending
in a schema answer and concurrent calls on the ONNX backend."""

from __future__ import annotations

import json
from collections.abc import Callable

import jsonschema
import pytest

from chainform.local import LocalChatClient, prepare
from chainform.types import (
    ChatOptions,
    FinishReason,
    FunctionResultContent,
    FunctionSpec,
    Message,
    ResponseFormat,
)

pytestmark = pytest.mark.integration

WEATHER = FunctionSpec(
    "get_weather",
    "Current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
ANSWER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "temp_c": {"type": "number"}},
    "required": ["city", "temp_c"],
    "additionalProperties": False,
}
DOG = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
}


@pytest.fixture(scope="module")
def smollm2_on(smollm2_dir: object) -> Callable[[str], LocalChatClient]:
    """The real model loaded on a backend, once per module and backend."""
    loaded: dict[str, LocalChatClient] = {}

    def on(backend: str) -> LocalChatClient:
        if backend not in loaded:
            if backend == "onnx":
                prepare(backend="onnx", quiet=True)  # the conversion, once per cache
            loaded[backend] = LocalChatClient("smollm2", backend=backend)
            assert loaded[backend].load().backend == backend
        return loaded[backend]

    return on


@pytest.fixture(scope="module")
def smollm2(smollm2_on: Callable[[str], LocalChatClient]) -> LocalChatClient:
    """The model on ONNX Runtime GenAI, the backend `-m local` picks once it is prepared (README);
    the torch backend runs the same code on the tiny model (tests/local/conftest.py, `tiny_loaded`)
    and the real model in `test_schema_answer_on_each_backend`."""
    return smollm2_on("onnx")


@pytest.mark.parametrize("backend", ["torch", "onnx"])
async def test_schema_answer_on_each_backend(
    smollm2_on: Callable[[str], LocalChatClient], backend: str
) -> None:
    options = ChatOptions(response_format=ResponseFormat.json_schema(DOG))
    response = await smollm2_on(backend).get_response([Message.user("Invent a dog.")], options)
    assert response.finish_reason == FinishReason.STOP
    jsonschema.validate(json.loads(response.text), DOG)


@pytest.mark.parametrize("backend", ["torch", "onnx"])
async def test_a_plain_answer_ends_at_the_models_end_token_on_each_backend(
    smollm2_on: Callable[[str], LocalChatClient], backend: str
) -> None:
    """Without a schema, the answer ends where the model writes its end token (greedy: the same every run)."""
    options = ChatOptions(max_output_tokens=64)
    response = await smollm2_on(backend).get_response([Message.user("Say hello.")], options)
    assert response.finish_reason == FinishReason.STOP
    assert response.text.strip()


async def test_tool_call(smollm2: LocalChatClient) -> None:
    response = await smollm2.get_response(
        [Message.user("What is the weather in Paris?")], ChatOptions(tools=[WEATHER])
    )
    assert response.finish_reason == FinishReason.TOOL_CALLS
    (call,) = response.function_calls
    # int4 weights (the onnx backend) write the city in lower case; the argument is still the right city
    assert call.name == "get_weather" and call.arguments["city"].lower() == "paris"
    assert list(call.arguments) == ["city"]


async def test_chain_calls_the_tool_then_answers_with_the_schema(smollm2: LocalChatClient) -> None:
    messages = [Message.user("What is the weather in Paris?")]
    options = ChatOptions(tools=[WEATHER], response_format=ResponseFormat.json_schema(ANSWER))
    called = []
    for _ in range(4):
        response = await smollm2.get_response(messages, options)
        messages.extend(response.messages)
        if not response.function_calls:
            break
        called.extend(c.name for c in response.function_calls)
        results = [
            FunctionResultContent(c.call_id, {"temp_c": 18.5, "sky": "cloudy"})
            for c in response.function_calls
        ]
        messages.append(Message("tool", results))
    assert called == ["get_weather"]
    value = json.loads(response.text)
    jsonschema.validate(value, ANSWER)
    assert value["temp_c"] == 18.5


async def test_concurrent_calls_get_their_solo_answers(smollm2: LocalChatClient) -> None:
    """What `map -m local --concurrency N` does: calls at once on one loaded model, mixed schemas and
    one without; each answer is the one the call gets alone, and every schema answer validates."""
    import asyncio

    calls = [("Invent a dog.", DOG), ("Name a city and its temperature.", ANSWER), ("Say hello.", None)]

    def options(schema: dict[str, object] | None) -> ChatOptions:
        fmt = ResponseFormat.json_schema(schema) if schema is not None else None
        return ChatOptions(response_format=fmt, max_output_tokens=32)

    solo = []
    for text, schema in calls:
        smollm2.load().forget()
        solo.append((await smollm2.get_response([Message.user(text)], options(schema))).text)
    together = await asyncio.gather(
        *(smollm2.get_response([Message.user(text)], options(schema)) for text, schema in calls)
    )
    assert [r.text for r in together] == solo
    for (_, schema), response in zip(calls, together, strict=True):
        if schema is not None:
            jsonschema.validate(json.loads(response.text), schema)
