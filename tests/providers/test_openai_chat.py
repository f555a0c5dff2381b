"""The Chat Completions adapter through the real openai SDK against the loopback emulator."""

from __future__ import annotations

import logging

import openai_fixtures
import pytest

from chainform.clients._openai_base import ClientSettings
from chainform.clients.openai_chat import OpenAIChatClient
from chainform.errors import ProviderError, UnsupportedOptionError
from chainform.testing import tool_call
from chainform.testing.emulator import Emulator, Fault, Reply, Usage
from chainform.types import (
    ChatOptions,
    DataContent,
    FinishReason,
    FunctionCallContent,
    FunctionResultContent,
    FunctionSpec,
    Message,
    ResponseFormat,
    TextContent,
    TextReasoningContent,
    ToolMode,
    UriContent,
)

KEY = "sk-test-0123456789abcdef"
WEATHER = FunctionSpec(
    "get_weather",
    "Weather for a city.",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string"}},
        "required": ["city"],
    },
)


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    openai_fixtures.prepare(monkeypatch)


def client(emu: Emulator, model: str = "gpt-4.1-mini", retries: int = 2) -> OpenAIChatClient:
    settings = ClientSettings("openai", base_url=emu.base_url + "/v1", key=KEY, max_retries=retries)
    return OpenAIChatClient(model, settings=settings)


async def test_openai_chat_text_reply_and_usage(emulator: Emulator) -> None:
    emulator.add(
        Reply(["Hello from the emulator"], usage=Usage(12, 4, cached_input_tokens=8, reasoning_tokens=2))
    )
    response = await client(emulator).get_response([Message.system("Be brief."), Message.user("Hi")])
    assert response.text == "Hello from the emulator"
    assert response.finish_reason == FinishReason.STOP
    usage = response.usage_details
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (12, 4, 16)
    assert usage.additional_counts == {"cache_read_input_tokens": 8, "reasoning_tokens": 2}
    body = emulator.requests[0].body
    assert body["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    assert body["stream"] is False and "stream_options" not in body  # unstreamed: sent whole
    assert emulator.requests[0].headers["authorization"] == f"Bearer {KEY}"


async def test_openai_chat_parallel_tool_calls_from_fragments(emulator: Emulator) -> None:
    emulator.add([tool_call("get_weather", city="Paris"), tool_call("get_weather", city="Rome", unit="C")])
    options = ChatOptions(tools=[WEATHER], allow_multiple_tool_calls=True, tool_mode=ToolMode.AUTO)
    response = await client(emulator).get_response([Message.user("Paris and Rome?")], options)
    calls = response.function_calls
    assert [(c.name, c.arguments) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome", "unit": "C"}),
    ]
    assert calls[0].call_id != calls[1].call_id
    assert response.finish_reason == FinishReason.TOOL_CALLS
    body = emulator.requests[0].body
    assert body["parallel_tool_calls"] is True and body["tool_choice"] == "auto"
    (tool,) = body["tools"]
    assert tool["function"]["strict"] is True  # gpt-4.1 supports strict: schema converted for it
    params = tool["function"]["parameters"]
    assert params["additionalProperties"] is False
    assert set(params["required"]) == {"city", "unit"}


async def test_openai_chat_structured_output_request(emulator: Emulator) -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    emulator.add('{"name": "Rex"}')
    fmt = ResponseFormat.json_schema(schema, name="Dog", description="A dog")
    response = await client(emulator).get_response([Message.user("A dog")], ChatOptions(response_format=fmt))
    assert response.text == '{"name": "Rex"}'
    sent = emulator.requests[0].body["response_format"]
    assert sent["type"] == "json_schema"
    spec = sent["json_schema"]
    assert (spec["name"], spec["description"], spec["strict"]) == ("Dog", "A dog", True)
    assert spec["schema"]["properties"] == {"name": {"type": "string"}}
    assert spec["schema"]["additionalProperties"] is False


async def test_openai_chat_compatible_profile_sends_plain_schema(emulator: Emulator) -> None:
    from chainform.clients.openai_chat import create_client

    emulator.add('{"a": 1}')
    compat = create_client("llama3.2", provider="ollama", base_url=emulator.base_url + "/v1")
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    options = ChatOptions(response_format=ResponseFormat.json_schema(schema), max_output_tokens=50)
    await compat.get_response([Message.user("x")], options)
    body = emulator.requests[0].body
    assert body["response_format"]["json_schema"] == {"name": "response", "schema": schema, "strict": False}
    assert body["max_tokens"] == 50 and "max_completion_tokens" not in body
    assert emulator.requests[0].headers["authorization"] == "Bearer not-needed"


async def test_openai_chat_options_are_mapped(emulator: Emulator) -> None:
    emulator.add("ok")
    options = ChatOptions(
        seed=7,
        stop_sequences=["END"],
        temperature=0.2,
        top_p=0.9,
        frequency_penalty=0.1,
        presence_penalty=0.3,
        max_output_tokens=64,
        tools=[WEATHER],
        tool_mode=ToolMode.required("get_weather"),
        allow_multiple_tool_calls=False,
        additional_properties={"user": "u-1", "logit_bias": {"50256": -100}},
    )
    await client(emulator).get_response([Message.user("x")], options)
    body = emulator.requests[0].body
    expected = {
        "seed": 7,
        "stop": ["END"],
        "temperature": 0.2,
        "top_p": 0.9,
        "frequency_penalty": 0.1,
        "presence_penalty": 0.3,
        "max_completion_tokens": 64,
        "parallel_tool_calls": False,
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
        "user": "u-1",
        "logit_bias": {"50256": -100},
    }
    assert {k: body.get(k) for k in expected} == expected


async def test_openai_chat_reasoning_models_refuse_sampling(emulator: Emulator) -> None:
    """The o-series profile (no conformance row) refuses what its API has no field for."""
    with pytest.raises(UnsupportedOptionError, match="temperature"):
        await client(emulator, "o4-mini").get_response([Message.user("x")], ChatOptions(temperature=0.5))
    assert emulator.requests == []  # refused before anything was sent


async def test_openai_chat_history_translation(emulator: Emulator) -> None:
    emulator.add("done")
    image = DataContent(b"\x89PNG", "image/png")
    history = [
        Message.user([TextContent("Look:"), image, UriContent("https://x.test/cat.jpg", "image/jpeg")]),
        Message.assistant(
            [TextReasoningContent("hidden"), FunctionCallContent("c1", "get_weather", {"city": "Oslo"})]
        ),
        Message("tool", [FunctionResultContent("c1", {"temp_c": 3})]),
        Message.user("And now?"),
    ]
    await client(emulator).get_response(history)
    sent = emulator.requests[0].body["messages"]
    assert sent[0]["content"] == [
        {"type": "text", "text": "Look:"},
        {"type": "image_url", "image_url": {"url": image.uri}},
        {"type": "image_url", "image_url": {"url": "https://x.test/cat.jpg"}},
    ]
    assert sent[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
            }
        ],
    }
    assert sent[2] == {"role": "tool", "tool_call_id": "c1", "content": '{"temp_c": 3}'}
    assert sent[3] == {"role": "user", "content": "And now?"}


async def test_openai_chat_429_retry_after_is_honoured(
    emulator: Emulator, caplog: pytest.LogCaptureFixture
) -> None:
    emulator.add(Fault(429, retry_after=0.02, message="rate limited"), "after the wait")
    with caplog.at_level(logging.INFO, logger="openai"):
        response = await client(emulator).get_response([Message.user("x")])
    assert response.text == "after the wait"
    assert [r.headers.get("x-stainless-retry-count") for r in emulator.requests] == ["0", "1"]
    assert any("Retrying request in 0.02" in r.getMessage() for r in caplog.records)


async def test_openai_chat_key_never_in_errors_or_logs(
    emulator: Emulator, caplog: pytest.LogCaptureFixture
) -> None:
    emulator.add(Fault(401, message=f"Incorrect API key provided: {KEY}"))
    chat = client(emulator, retries=0)
    with caplog.at_level(logging.DEBUG), pytest.raises(ProviderError) as info:
        await chat.get_response([Message.user("x")])
    assert info.value.status == 401
    texts = [str(info.value), repr(info.value), repr(chat), repr(chat.settings), caplog.text]
    assert all(KEY not in text for text in texts)
    assert "[redacted key]" in str(info.value)
