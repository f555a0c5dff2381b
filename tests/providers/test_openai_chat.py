"""The Chat Completions adapter through the real openai SDK against the loopback emulator."""

from __future__ import annotations

import logging

import pytest

from chainform.clients._openai import ClientSettings
from chainform.clients.openai_chat import OpenAIChatClient
from chainform.clients.profiles.openai import openai_profile
from chainform.errors import ProviderError, UnsupportedOptionError
from chainform.testing import tool_call
from chainform.testing.emulator import Emulator, Fault, Reply, Usage
from chainform.types import (
    ChatOptions,
    ChatResponse,
    DataContent,
    ErrorContent,
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


pytestmark = pytest.mark.usefixtures("openai_isolated")


def client(emu: Emulator, model: str = "gpt-4.1-mini", retries: int = 2) -> OpenAIChatClient:
    """OpenAI's own API, played by the emulator (its profile given: the base URL is not OpenAI's)."""
    settings = ClientSettings("openai", base_url=emu.base_url + "/v1", key=KEY, max_retries=retries)
    return OpenAIChatClient(model, settings=settings, profile=openai_profile(model))


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


def test_openai_at_a_foreign_base_url_sends_an_empty_tool_call_turn() -> None:
    """Compatible servers may type content as a string (llama-cpp-python: null is a 500)."""
    turn = [Message.assistant([FunctionCallContent("c1", "f", {})])]
    foreign = OpenAIChatClient("gpt-4.1-mini", settings=ClientSettings("openai", "http://127.0.0.1:1/v1"))
    own = OpenAIChatClient("gpt-4.1-mini", settings=ClientSettings("openai", "https://api.openai.com/v1"))
    assert foreign.build_request(turn, ChatOptions())["messages"][0]["content"] == ""
    assert own.build_request(turn, ChatOptions())["messages"][0]["content"] is None


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


CALLS = [("a1", "get_weather", '{"city": "Oslo"}'), ("b2", "get_weather", '{"city": "Rome"}')]
COMPLETION = {
    "id": "chatcmpl-9",
    "model": "gpt-4.1-mini-2025",
    "created": 1_700_000_000,
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": "Checking.",
                "refusal": "Not that.",
                "reasoning_content": "two cities",
                "tool_calls": [
                    {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                    for i, n, a in CALLS
                ],
            },
        },
        {"index": 1, "finish_reason": "stop", "message": {"content": "another choice"}},
    ],
    "usage": {
        "prompt_tokens": 20,
        "completion_tokens": 9,
        "total_tokens": 29,
        "prompt_tokens_details": {"cached_tokens": 16},
        "completion_tokens_details": {"reasoning_tokens": 4},
    },
}


def _chunk(choices: list[object], **extra: object) -> dict[str, object]:
    return {
        "id": "chatcmpl-9",
        "model": "gpt-4.1-mini-2025",
        "created": 1_700_000_000,
        "choices": choices,
        **extra,
    }


CHUNKS = [
    _chunk([{"index": 0, "delta": {"role": "assistant", "reasoning": "two cities"}}]),
    _chunk([{"index": 1, "delta": {"content": "another choice"}}]),
    _chunk([{"index": 0, "delta": {"content": "Check"}}]),
    _chunk([{"index": 0, "delta": {"content": "ing.", "refusal": "Not that."}}]),
    *[
        _chunk([{"index": 0, "delta": {"tool_calls": [{"index": k, "id": i, "function": {"name": n}}]}}])
        for k, (i, n, _) in enumerate(CALLS)
    ],
    *[
        _chunk([{"index": 0, "delta": {"tool_calls": [{"index": k, "function": {"arguments": part}}]}}])
        for k, (_, _, a) in enumerate(CALLS)
        for part in (a[:5], a[5:])
    ],
    _chunk([{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]),
    _chunk([], usage=COMPLETION["usage"]),
]


def _joined(chat: OpenAIChatClient, events: list[dict[str, object]]) -> ChatResponse:
    state, guard = chat.wire.reader({}), chat.guard()
    return ChatResponse.from_updates([u for e in events for u in state.translate(e)] + state.end(guard))


def test_openai_chat_one_translation_for_a_completion_and_its_chunks() -> None:
    """A whole completion and the stream of the same answer, as the JSON's dicts, join alike."""
    chat = OpenAIChatClient("gpt-4.1-mini", settings=ClientSettings("openai", key=KEY))
    for response in (_joined(chat, [COMPLETION]), _joined(chat, CHUNKS)):
        assert (response.text, response.reasoning) == ("Checking.", "two cities")
        assert [(c.call_id, c.name, c.arguments) for c in response.function_calls] == [
            ("a1", "get_weather", {"city": "Oslo"}),
            ("b2", "get_weather", {"city": "Rome"}),
        ]
        assert response.finish_reason == FinishReason.TOOL_CALLS
        assert (response.response_id, response.model_id, response.created_at) == (
            "chatcmpl-9",
            "gpt-4.1-mini-2025",
            1_700_000_000.0,
        )
        usage = response.usage_details
        assert usage is not None and (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (
            20,
            9,
            29,
        )
        assert usage.additional_counts == {"cache_read_input_tokens": 16, "reasoning_tokens": 4}
        errors = [c for m in response.messages for c in m.contents if isinstance(c, ErrorContent)]
        assert [(e.message, e.error_code) for e in errors] == [("Not that.", "refusal")]


def test_openai_chat_content_part_lists_are_read_part_by_part() -> None:
    """Mistral answers `content` as parts (`thinking` + `text`), whole and streamed: both kept."""
    chat = OpenAIChatClient("mistral-medium", settings=ClientSettings("openai", key=KEY))
    thinking = {"type": "thinking", "thinking": [{"type": "text", "text": "Cross "}]}
    whole = _chunk(
        [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"content": [thinking, {"type": "text", "text": "Look both ways."}]},
            }
        ]
    )
    streamed = [
        _chunk([{"index": 0, "delta": {"content": [thinking]}}]),
        _chunk(
            [
                {
                    "index": 0,
                    "delta": {
                        "content": [{"type": "thinking", "thinking": [{"type": "text", "text": "safely"}]}]
                    },
                }
            ]
        ),
        _chunk([{"index": 0, "delta": {"content": [{"type": "text", "text": "Look "}]}}]),
        _chunk([{"index": 0, "delta": {"content": "both ways."}, "finish_reason": "stop"}]),
    ]
    assert (_joined(chat, [whole]).text, _joined(chat, [whole]).reasoning) == ("Look both ways.", "Cross ")
    response = _joined(chat, streamed)
    assert (response.text, response.reasoning) == ("Look both ways.", "Cross safely")


def test_openai_chat_odd_fields_are_dropped_not_a_crash() -> None:
    """A hostile server's fields of the wrong type are left out; what is well formed is kept."""
    chat = OpenAIChatClient("gpt-4.1-mini", settings=ClientSettings("openai", key=KEY))
    odd = {
        "id": 7,
        "created": "yesterday",
        "choices": [
            "junk",
            {"index": 0, "finish_reason": 3, "message": {"content": "kept", "refusal": 1, "tool_calls": "x"}},
            {"index": 0, "message": {"tool_calls": [5, {"function": "f", "index": "0"}]}},
        ],
        "usage": {"prompt_tokens": "many", "completion_tokens": 2, "prompt_tokens_details": []},
    }
    end = {"choices": [{"index": 0, "finish_reason": "stop"}]}
    response = _joined(chat, [odd, 42, ["not", "a", "chunk"], end])  # type: ignore[list-item]
    assert response.text == "kept" and response.response_id is None
    assert [(c.call_id, c.name) for c in response.function_calls] == [("", ""), ("", "")]
    usage = response.usage_details
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (None, 2)


def test_each_request_gets_its_own_copy_of_the_tool_schemas() -> None:
    """A request's tool schemas are its own: changing one request never reaches the tool or the next."""
    made = OpenAIChatClient(
        "gpt-4.1-mini", settings=ClientSettings("openai", base_url="http://x/v1", key=KEY), profile="openai"
    )
    options = ChatOptions(tools=[WEATHER])
    first = made.build_request([Message.user("?")], options)
    first["tools"][0]["function"]["parameters"]["properties"]["city"]["type"] = "integer"
    second = made.build_request([Message.user("?")], options)
    assert second["tools"][0]["function"]["parameters"]["properties"]["city"]["type"] == "string"
    assert second["tools"][0]["function"]["strict"] is True
    assert WEATHER.parameters["properties"]["city"]["type"] == "string"


def test_openai_chat_stream_without_finish_reason_is_interrupted() -> None:
    """A stream that closes cleanly before any finish reason is no answer: the typed
    StreamInterruptedError holding the partial text, never a success."""
    from chainform.errors import StreamInterruptedError

    chat = OpenAIChatClient("gpt-4.1-mini", settings=ClientSettings("openai", key=KEY))
    state, guard = chat.wire.reader({}), chat.guard()
    for update in [u for e in CHUNKS[:3] for u in state.translate(e)]:
        guard.seen(update)
    with pytest.raises(StreamInterruptedError) as caught:
        state.end(guard)
    assert "finish reason" in str(caught.value)
    partial = caught.value.partial_response
    assert partial is not None and partial.text == "Check"
