"""The Responses API adapter through the real openai SDK against the loopback emulator."""

from __future__ import annotations

import pytest

from chainform.clients._openai import ClientSettings
from chainform.clients.openai_responses import OpenAIResponsesClient
from chainform.testing import tool_call
from chainform.testing.emulator import Emulator, Reply, Usage
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
)

KEY = "sk-test-responses-0123456789"
LOOKUP = FunctionSpec(
    "lookup", "Look a word up.", {"type": "object", "properties": {"word": {"type": "string"}}}
)


pytestmark = pytest.mark.usefixtures("openai_isolated")


def client(emu: Emulator, model: str = "gpt-4.1-mini", retries: int = 2) -> OpenAIResponsesClient:
    settings = ClientSettings("openai", base_url=emu.base_url + "/v1", key=KEY, max_retries=retries)
    return OpenAIResponsesClient(model, settings=settings, profile="openai")  # the emulator plays OpenAI


async def test_openai_responses_text_usage_and_request(emulator: Emulator) -> None:
    emulator.add(
        Reply(["Bonjour tout le monde"], usage=Usage(20, 5, cached_input_tokens=4, reasoning_tokens=1))
    )
    response = await client(emulator).get_response([Message.system("Be French."), Message.user("Hello")])
    assert response.text == "Bonjour tout le monde"
    assert response.finish_reason == FinishReason.STOP
    assert response.response_id == "resp_emu1"
    usage = response.usage_details
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (20, 5)
    assert usage.additional_counts == {"cache_read_input_tokens": 4, "reasoning_tokens": 1}
    body = emulator.requests[0].body
    assert emulator.requests[0].path == "/v1/responses"
    assert body["stream"] is True and body["store"] is False
    assert body["input"] == [
        {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "Be French."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Hello"}]},
    ]


async def test_openai_responses_parallel_calls_and_reasoning(emulator: Emulator) -> None:
    emulator.add(
        [
            TextReasoningContent("two words to check"),
            tool_call("lookup", word="a"),
            tool_call("lookup", word="b"),
        ]
    )
    options = ChatOptions(
        tools=[LOOKUP], tool_mode=ToolMode.required("lookup"), allow_multiple_tool_calls=True
    )
    response = await client(emulator).get_response([Message.user("look up a and b")], options)
    assert [(c.name, c.arguments) for c in response.function_calls] == [
        ("lookup", {"word": "a"}),
        ("lookup", {"word": "b"}),
    ]
    assert response.reasoning == "two words to check"
    assert response.finish_reason == FinishReason.TOOL_CALLS
    body = emulator.requests[0].body
    assert body["tool_choice"] == {"type": "function", "name": "lookup"}
    assert body["parallel_tool_calls"] is True
    (tool,) = body["tools"]
    assert (tool["type"], tool["name"], tool["strict"]) == ("function", "lookup", True)
    assert tool["parameters"]["additionalProperties"] is False


async def test_openai_responses_structured_output_uses_text_format(emulator: Emulator) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    emulator.add('{"n": 3}')
    options = ChatOptions(
        response_format=ResponseFormat.json_schema(schema, name="Count"), max_output_tokens=30
    )
    response = await client(emulator).get_response([Message.user("three")], options)
    assert response.text == '{"n": 3}'
    body = emulator.requests[0].body
    fmt = body["text"]["format"]
    assert (fmt["type"], fmt["name"], fmt["strict"]) == ("json_schema", "Count", True)
    assert fmt["schema"]["properties"] == {"n": {"type": "integer"}}
    assert body["max_output_tokens"] == 30


async def test_openai_responses_history_items(emulator: Emulator) -> None:
    emulator.add("fine")
    image = DataContent(b"GIF89a", "image/gif")
    history = [
        Message.user([TextContent("see"), image]),
        Message.assistant([TextContent("calling"), FunctionCallContent("c9", "lookup", {"word": "x"})]),
        Message("tool", [FunctionResultContent("c9", "a letter")]),
    ]
    await client(emulator).get_response(history)
    items = emulator.requests[0].body["input"]
    assert items[0]["content"][1] == {"type": "input_image", "image_url": image.uri, "detail": "auto"}
    assert items[1] == {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "calling"}],
    }
    assert items[2] == {
        "type": "function_call",
        "call_id": "c9",
        "name": "lookup",
        "arguments": '{"word": "x"}',
    }
    assert items[3] == {"type": "function_call_output", "call_id": "c9", "output": "a letter"}


def test_openai_responses_stream_without_completed_is_interrupted() -> None:
    """Deltas with no `response.completed` after them are a cut stream, not a short answer."""
    from types import SimpleNamespace

    from chainform.clients.openai_responses import _StreamState
    from chainform.errors import StreamInterruptedError

    client = OpenAIResponsesClient(
        "gpt-4.1-mini", settings=ClientSettings("openai", key="sk-test-0123456789abcdef")
    )
    state, guard = _StreamState(), client.guard()
    for update in state.translate(SimpleNamespace(type="response.output_text.delta", delta="Half")):
        guard.seen(update)
    with pytest.raises(StreamInterruptedError) as caught:
        state.end(guard)
    assert "response.completed" in str(caught.value)
    partial = caught.value.partial_response
    assert partial is not None and partial.text == "Half"


def _refusing_response(**extra: object) -> dict[str, object]:
    refusal = {"type": "refusal", "refusal": "I can't help with that."}
    message = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [refusal],
    }
    usage = {"input_tokens": 9, "output_tokens": 6, "total_tokens": 15}
    return {
        "id": "resp_1",
        "object": "response",
        "model": "gpt-4.1-mini",
        "status": "completed",
        "output": [message],
        "usage": usage,
        **extra,
    }


async def test_openai_responses_refusal_is_told_streamed_and_whole(emulator: Emulator) -> None:
    """A refusal (its own content part, streamed as `response.refusal.delta`) is an ErrorContent
    of code "refusal", as on Chat Completions, whether the answer streamed or came whole."""
    import json

    from chainform.testing.emulator import RawResponse
    from chainform.types import ErrorContent

    whole = _refusing_response()
    started = {**whole, "status": "in_progress", "output": [], "usage": None}
    events = [
        {"type": "response.created", "sequence_number": 0, "response": started},
        {
            "type": "response.refusal.delta",
            "sequence_number": 1,
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": "I can't ",
        },
        {
            "type": "response.refusal.delta",
            "sequence_number": 2,
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": "help with that.",
        },
        {"type": "response.completed", "sequence_number": 3, "response": whole},
    ]
    stream = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
    emulator.add(RawResponse(200, stream, "text/event-stream"), RawResponse(200, json.dumps(whole).encode()))
    for _ in range(2):
        response = await client(emulator).get_response([Message.user("Something forbidden")])
        refusals = [c for m in response.messages for c in m.contents if isinstance(c, ErrorContent)]
        assert [(r.message, r.error_code) for r in refusals] == [("I can't help with that.", "refusal")]
        assert response.text == "" and response.finish_reason == FinishReason.STOP
        assert response.usage_details is not None and response.usage_details.total_tokens == 15


def _responses_read(body: dict[str, object]) -> object:
    from chainform.clients.openai_responses import _StreamState
    from chainform.types import ChatResponse

    client = OpenAIResponsesClient(
        "gpt-4.1-mini", settings=ClientSettings("openai", key="sk-test-0123456789")
    )
    state, guard = _StreamState(), client.guard()
    return ChatResponse.from_updates([*(state.whole(body) or []), *state.end(guard)])


def test_openai_responses_a_queued_response_is_an_error_not_an_empty_answer() -> None:
    """A background response still queued (or in progress) holds no answer: a typed, non-retryable
    error, never an empty success."""
    from chainform.errors import ProviderError

    for status in ("queued", "in_progress"):
        body = {"id": "resp_1", "object": "response", "model": "gpt-4.1-mini", "status": status, "output": []}
        with pytest.raises(ProviderError, match=f"the response is {status}") as caught:
            _responses_read(body)
        assert caught.value.kind == "bad_request" and not caught.value.retryable


def test_openai_responses_server_tool_items_are_kept_as_server_tool_content() -> None:
    """Items of tools OpenAI runs itself (web search, file search, code interpreter, MCP) stay in
    the answer as server-tool content, never calls for chainform."""
    from chainform.types import ServerToolContent

    items = [
        {
            "type": "web_search_call",
            "id": "ws_1",
            "status": "completed",
            "action": {"type": "search", "query": "x"},
        },
        {
            "type": "code_interpreter_call",
            "id": "ci_1",
            "status": "completed",
            "code": "print(2)",
            "container_id": "c",
        },
        {
            "type": "mcp_call",
            "id": "mcp_1",
            "name": "roll",
            "arguments": "{}",
            "server_label": "dice",
            "output": "4",
        },
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
        },
    ]
    body = {"id": "resp_1", "object": "response", "model": "m", "status": "completed", "output": items}
    answer = _responses_read(body)
    server = [c for c in answer.messages[0].contents if isinstance(c, ServerToolContent)]  # type: ignore[attr-defined]
    assert [s.kind for s in server] == ["web_search_call", "code_interpreter_call", "mcp_call"]
    assert server[2].block["output"] == "4" and server[0].block["id"] == "ws_1"
    assert answer.text == "Done." and not answer.function_calls  # type: ignore[attr-defined]
