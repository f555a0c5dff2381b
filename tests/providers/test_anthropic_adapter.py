"""The Anthropic adapter through the real `anthropic` SDK against the loopback emulator."""

from __future__ import annotations

import json
from typing import Any

import pytest
from adapter_fixtures import SCHEMA, WEATHER, opened

from chainform.clients.anthropic import KNOWN_MODELS, AnthropicClient, create_client
from chainform.errors import UnsupportedOptionError
from chainform.testing import tool_call
from chainform.testing.emulator import Emulator, Reply, Usage
from chainform.types import (
    ChatOptions,
    DataContent,
    FinishReason,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    ResponseFormat,
    TextContent,
    TextReasoningContent,
    ToolMode,
)


def client(emu: Emulator, model: str = "claude-haiku-4-5", **kwargs: Any) -> AnthropicClient:
    made = create_client(model, key="sk-ant-test-key", base_url=emu.base_url, max_retries=1, **kwargs)
    return opened(made)


async def test_anthropic_text_request_shape_and_usage(emu: Emulator) -> None:
    emu.add(Reply(["Hello there!"], usage=Usage(input_tokens=30, output_tokens=3, cached_input_tokens=10)))
    options = ChatOptions(temperature=0.2, top_p=0.9, top_k=40, stop_sequences=["END"], max_output_tokens=100)
    response = await client(emu).get_response([Message.system("Be brief."), Message.user("Hi")], options)

    assert response.text == "Hello there!"
    assert response.finish_reason == FinishReason.STOP
    assert response.model_id == "claude-haiku-4-5"
    usage = response.usage_details
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (30, 3, 33)
    assert usage.additional_counts == {"cache_read_input_tokens": 10}
    body = emu.requests[0].body
    assert body["system"] == "Be brief."
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
    assert (body["temperature"], body["top_p"], body["top_k"]) == (0.2, 0.9, 40)
    assert body["stop_sequences"] == ["END"]
    assert body["max_tokens"] == 100
    assert body["stream"] is True
    headers = emu.requests[0].headers
    assert "sk-ant-test-key" in (headers.get("x-api-key") or headers.get("authorization", ""))


async def test_anthropic_default_max_tokens_respects_profile(emu: Emulator) -> None:
    emu.add("ok", "ok")
    await client(emu, "claude-3-5-sonnet-20241022").get_response([Message.user("Hi")])
    await client(emu, "claude-opus-4-5").get_response([Message.user("Hi")])
    assert emu.requests[0].body["max_tokens"] == 8192
    assert emu.requests[1].body["max_tokens"] == 8192
    made = create_client("claude-3-5-haiku-latest", key="k", default_max_tokens=123)
    assert made.build_request([Message.user("Hi")], ChatOptions())["max_tokens"] == 123


async def test_anthropic_parallel_tool_calls_and_thinking(emu: Emulator) -> None:
    emu.add(
        [
            TextReasoningContent("Two cities, two calls."),
            tool_call("get_weather", city="Paris"),
            tool_call("get_weather", city="Rome"),
        ]
    )
    options = ChatOptions(tools=[WEATHER])
    response = await client(emu).get_response([Message.user("Paris and Rome?")], options)

    calls = response.function_calls
    assert [c.arguments for c in calls] == [{"city": "Paris"}, {"city": "Rome"}]
    assert all(c.name == "get_weather" and c.call_id for c in calls)
    assert response.finish_reason == FinishReason.TOOL_CALLS
    assert response.reasoning == "Two cities, two calls."
    reasoning = response.messages[0].contents[0]
    assert isinstance(reasoning, TextReasoningContent) and reasoning.protected_data
    body = emu.requests[0].body
    assert body["tool_choice"] == {"type": "auto"}
    assert body["tools"][0]["name"] == "get_weather"
    assert body["tools"][0]["input_schema"]["properties"] == WEATHER.parameters["properties"]


async def test_anthropic_tool_history_round_trip(emu: Emulator) -> None:
    emu.add("Paris is warmer.")
    history = [
        Message.user("Paris and Rome?"),
        Message.assistant(
            [
                TextReasoningContent("thinking", protected_data="sig=="),
                TextReasoningContent("unsigned, dropped"),
                FunctionCallContent("toolu_1", "get_weather", {"city": "Paris"}),
                FunctionCallContent("toolu_2", "get_weather", {"city": "Rome"}),
            ]
        ),
        Message("tool", [FunctionResultContent("toolu_1", {"temp_c": 21})]),
        Message("tool", [FunctionResultContent("toolu_2", error="service down")]),
    ]
    await client(emu).get_response(history, ChatOptions(tools=[WEATHER]))
    messages = emu.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assistant = messages[1]["content"]
    assert assistant[0] == {"type": "thinking", "thinking": "thinking", "signature": "sig=="}
    assert [b["type"] for b in assistant] == ["thinking", "tool_use", "tool_use"]
    assert assistant[1] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "get_weather",
        "input": {"city": "Paris"},
    }
    results = messages[2]["content"]
    assert results[0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": json.dumps({"temp_c": 21}),
    }
    assert results[1]["is_error"] is True and "service down" in results[1]["content"]


@pytest.mark.parametrize(
    ("mode", "multiple", "expected"),
    [
        (ToolMode.REQUIRED_ANY, None, {"type": "any"}),
        (ToolMode.required("get_weather"), None, {"type": "tool", "name": "get_weather"}),
        (ToolMode.NONE, None, {"type": "none"}),
        (ToolMode.AUTO, False, {"type": "auto", "disable_parallel_tool_use": True}),
        (ToolMode.REQUIRED_ANY, False, {"type": "any", "disable_parallel_tool_use": True}),
    ],
)
async def test_anthropic_tool_choice(
    emu: Emulator, mode: ToolMode, multiple: bool | None, expected: dict[str, Any]
) -> None:
    emu.add("ok")
    options = ChatOptions(tools=[WEATHER], tool_mode=mode, allow_multiple_tool_calls=multiple)
    await client(emu).get_response([Message.user("?")], options)
    assert emu.requests[0].body["tool_choice"] == expected


async def test_anthropic_structured_output_request(emu: Emulator) -> None:
    emu.add('{"city": "Paris"}')
    options = ChatOptions(response_format=ResponseFormat.json_schema(SCHEMA))
    response = await client(emu).get_response([Message.user("Warmest?")], options)
    assert json.loads(response.text) == {"city": "Paris"}
    fmt = emu.requests[0].body["output_config"]["format"]
    assert fmt["type"] == "json_schema"
    assert fmt["schema"]["properties"] == SCHEMA["properties"]
    assert KNOWN_MODELS["claude-sonnet-4-5"].supports_json_schema


async def test_anthropic_structured_output_refused_where_unsupported(emu: Emulator) -> None:
    schema_options = ChatOptions(response_format=ResponseFormat.json_schema(SCHEMA))
    with pytest.raises(UnsupportedOptionError, match="no native structured output"):
        await client(emu, "claude-3-5-sonnet-latest").get_response([Message.user("?")], schema_options)
    with pytest.raises(UnsupportedOptionError, match="JSON mode"):
        await client(emu).get_response(
            [Message.user("?")], ChatOptions(response_format=ResponseFormat.json_object())
        )
    assert emu.requests == []


async def test_anthropic_image_and_extra_body(emu: Emulator) -> None:
    emu.add("a red pixel")
    image = DataContent(b"\x89PNG...", "image/png")
    options = ChatOptions(additional_properties={"anthropic": {"metadata": {"user_id": "u1"}}})
    await client(emu).get_response([Message.user([TextContent("What is it?"), image])], options)
    body = emu.requests[0].body
    block = body["messages"][0]["content"][1]
    assert block == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": image.base64},
    }
    assert body["metadata"] == {"user_id": "u1"}


async def test_anthropic_emulator_whole_json_body(emu: Emulator) -> None:
    """The emulator's non-streamed body parses with the SDK's own types."""
    import anthropic

    emu.add([TextReasoningContent("hmm"), "Hi", tool_call("get_weather", city="Oslo")])
    sdk = anthropic.Anthropic(api_key="k", base_url=emu.base_url, max_retries=0)
    message = sdk.messages.create(
        model="claude-haiku-4-5", max_tokens=10, messages=[{"role": "user", "content": "x"}]
    )
    assert [b.type for b in message.content] == ["thinking", "text", "tool_use"]
    assert message.stop_reason == "tool_use"
    assert message.content[2].input == {"city": "Oslo"}  # type: ignore[union-attr]


def test_anthropic_profiles_by_family() -> None:
    dated = create_client("claude-sonnet-4-5-20250929", key="k").profile
    assert dated.name == "claude-sonnet-4-5-20250929" and dated.supports_json_schema
    assert not create_client("claude-3-5-sonnet-20241022", key="k").profile.supports_json_schema
    assert create_client("claude-sonnet-4-20250514", key="k").profile.max_output_tokens == 64_000
    future = create_client("claude-future-9", key="k").profile
    assert future.supports_json_schema and "temperature" in future.unsupported_options
    assert all(p.unsupported_options >= {"seed"} for p in KNOWN_MODELS.values())


def test_anthropic_server_tool_blocks_are_kept_never_calls_to_run() -> None:
    """Web search run by Anthropic (`server_tool_use` with streamed input, then its result block) is
    kept as ServerToolContent, logged, replayed as it came; it never becomes a call to run."""
    import pydantic
    from anthropic.types import RawMessageStreamEvent

    from chainform.clients.anthropic import _block, _StreamState
    from chainform.store._serialize import message_from_dict, message_to_dict
    from chainform.types import ChatResponse, ServerToolContent

    use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}
    found = {"type": "web_search_result", "url": "https://e.x", "title": "E", "encrypted_content": "z"}
    result = {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [found]}
    raw = [
        {"type": "content_block_start", "index": 0, "content_block": use},
        *[
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": p},
            }
            for p in ('{"query": ', '"weather"}')
        ],
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": result},
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": "Sunny."}},
    ]
    events = pydantic.TypeAdapter(list[RawMessageStreamEvent]).validate_python(raw)
    state = _StreamState()
    response = ChatResponse.from_updates([u for e in events for u in state.translate(e)])
    assert response.function_calls == [] and response.text == "Sunny."
    kept = [c for c in response.messages[0].contents if isinstance(c, ServerToolContent)]
    assert [(c.kind, c.block.get("input")) for c in kept] == [
        ("server_tool_use", {"query": "weather"}),
        ("web_search_tool_result", None),
    ]
    assert kept[1].block["content"][0]["url"] == "https://e.x"
    assert _block(kept[0], "assistant", lambda media: {}) == {**use, "input": {"query": "weather"}}
    assert message_from_dict(message_to_dict(response.messages[0])).contents == response.messages[0].contents
