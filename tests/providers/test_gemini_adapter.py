"""The Gemini adapter through the real google-genai SDK against the loopback emulator."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from adapter_fixtures import SCHEMA, WEATHER, gemini_client

from chainform.clients.gemini import KNOWN_MODELS, GeminiClient, create_client
from chainform.testing import tool_call
from chainform.testing.emulator import Emulator, Reply, Usage
from chainform.testing.emulator._gemini import thought_signature
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


def client(emu: Emulator, model: str = "gemini-2.5-flash", **kwargs: Any) -> GeminiClient:
    made: GeminiClient = gemini_client(emu, model, **kwargs)
    return made


def config(emu: Emulator, n: int = 0) -> dict[str, Any]:
    return dict(emu.requests[n].body.get("generationConfig") or {})


async def test_gemini_text_request_shape_and_usage(emu: Emulator) -> None:
    emu.add(Reply(["Hello there!"], usage=Usage(40, 10, cached_input_tokens=8, reasoning_tokens=6)))
    options = ChatOptions(
        temperature=0.3,
        top_p=0.8,
        top_k=20,
        seed=7,
        presence_penalty=0.1,
        frequency_penalty=0.2,
        stop_sequences=["END"],
        max_output_tokens=64,
    )
    response = await client(emu).get_response([Message.system("Be brief."), Message.user("Hi")], options)

    assert response.text == "Hello there!"
    assert response.finish_reason == FinishReason.STOP
    usage = response.usage_details
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (40, 10, 50)
    assert usage.additional_counts == {"reasoning_tokens": 6, "cache_read_input_tokens": 8}
    request = emu.requests[0]
    assert request.path_params["model"] == "gemini-2.5-flash"
    assert request.path.endswith(":streamGenerateContent") and request.query.get("alt") == "sse"
    assert request.headers["x-goog-api-key"] == "gemini-test-key"
    assert request.body["contents"] == [{"role": "user", "parts": [{"text": "Hi"}]}]
    assert request.body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    cfg = config(emu)
    assert (cfg["temperature"], cfg["topP"], cfg["topK"], cfg["seed"]) == (0.3, 0.8, 20, 7)
    assert (cfg["presencePenalty"], cfg["frequencyPenalty"]) == (0.1, 0.2)
    assert (cfg["stopSequences"], cfg["maxOutputTokens"]) == (["END"], 64)


async def test_gemini_parallel_calls_and_thought_signature_round_trip(emu: Emulator) -> None:
    emu.add(
        [
            TextReasoningContent("Two cities."),
            tool_call("get_weather", city="Paris"),
            tool_call("get_weather", city="Rome"),
        ],
        "Paris is warmer.",
    )
    gemini = client(emu)
    options = ChatOptions(tools=[WEATHER])
    history = [Message.user("Paris and Rome?")]
    first = await gemini.get_response(history, options)
    calls = first.function_calls
    assert [(c.name, c.arguments) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome"}),
    ]
    assert len({c.call_id for c in calls}) == 2
    assert first.finish_reason == FinishReason.TOOL_CALLS
    assert first.reasoning == "Two cities."
    declaration = emu.requests[0].body["tools"][0]["functionDeclarations"][0]
    assert declaration["name"] == "get_weather"
    assert emu.requests[0].body["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}

    results = [FunctionResultContent(c.call_id, {"temp_c": t}) for c, t in zip(calls, (21, 18), strict=True)]
    await gemini.get_response([*history, *first.messages, Message("tool", results)], options)
    contents = emu.requests[1].body["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    model_parts = contents[1]["parts"]
    assert [list(p) for p in model_parts] == [["functionCall", "thoughtSignature"], ["functionCall"]]
    assert model_parts[0]["thoughtSignature"] == thought_signature(emu.requests[0])
    assert "id" not in model_parts[0]["functionCall"]  # ids Gemini never sent are not invented for it
    responses = [p["functionResponse"] for p in contents[2]["parts"]]
    assert [(r["name"], r["response"]) for r in responses] == [
        ("get_weather", {"result": {"temp_c": 21}}),
        ("get_weather", {"result": {"temp_c": 18}}),
    ]


async def test_gemini_tool_error_result_and_media(emu: Emulator) -> None:
    emu.add("ok")
    history = [
        Message.user([TextContent("Look:"), DataContent(b"\x89PNG", "image/png")]),
        Message.assistant([FunctionCallContent("abc", "get_weather", {"city": "Oslo"})]),
        Message("tool", [FunctionResultContent("abc", error="down")]),
    ]
    await client(emu).get_response(history, ChatOptions(tools=[WEATHER]))
    contents = emu.requests[0].body["contents"]
    inline = contents[0]["parts"][1]["inlineData"]  # the SDK writes this one in snake case
    assert inline["data"] == base64.b64encode(b"\x89PNG").decode()
    assert (inline.get("mimeType") or inline.get("mime_type")) == "image/png"
    assert contents[1]["parts"][0]["functionCall"]["id"] == "abc"
    assert contents[2]["parts"][0]["functionResponse"] == {
        "id": "abc",
        "name": "get_weather",
        "response": {"error": "down"},
    }


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (ToolMode.REQUIRED_ANY, {"mode": "ANY"}),
        (ToolMode.required("get_weather"), {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}),
        (ToolMode.NONE, {"mode": "NONE"}),
    ],
)
async def test_gemini_function_calling_modes(emu: Emulator, mode: ToolMode, expected: dict[str, Any]) -> None:
    emu.add("ok")
    await client(emu).get_response([Message.user("?")], ChatOptions(tools=[WEATHER], tool_mode=mode))
    assert emu.requests[0].body["toolConfig"] == {"functionCallingConfig": expected}


async def test_gemini_structured_output_request(emu: Emulator) -> None:
    emu.add('{"city": "Paris"}', '{"city": "Rome"}', "{}")
    options = ChatOptions(response_format=ResponseFormat.json_schema(SCHEMA))
    response = await client(emu).get_response([Message.user("Warmest?")], options)
    assert json.loads(response.text) == {"city": "Paris"}
    cfg = config(emu)
    assert cfg["responseMimeType"] == "application/json"
    assert cfg["responseJsonSchema"]["properties"] == SCHEMA["properties"]

    await client(emu, "gemini-2.0-flash").get_response([Message.user("?")], options)
    legacy = config(emu, 1)
    assert "responseJsonSchema" not in legacy and legacy["responseSchema"]["required"] == ["city"]

    await client(emu).get_response(
        [Message.user("?")], ChatOptions(response_format=ResponseFormat.json_object())
    )
    assert config(emu, 2) == {"candidateCount": 1, "responseMimeType": "application/json"}


async def test_gemini_emulator_whole_json_body(emu: Emulator) -> None:
    """The emulator's non-streamed body parses with the SDK's own types."""
    from google import genai

    emu.add([TextReasoningContent("hmm"), "Hi", tool_call("get_weather", city="Oslo")])
    sdk = genai.Client(api_key="k", http_options={"base_url": emu.base_url})
    result = await sdk.aio.models.generate_content(model="gemini-2.5-pro", contents="x")
    await sdk.aio.aclose()
    assert result.function_calls is not None and result.function_calls[0].args == {"city": "Oslo"}
    parts = result.candidates[0].content.parts  # type: ignore[index,union-attr]
    assert parts is not None and parts[0].thought is True and parts[2].thought_signature
    assert result.usage_metadata is not None and result.usage_metadata.total_token_count


def test_gemini_profiles_by_family() -> None:
    assert create_client("gemini-2.0-flash-001", key="k").profile.max_output_tokens == 8192
    lite = create_client("gemini-2.5-flash-lite-preview-06-17", key="k").profile
    assert lite.name == "gemini-2.5-flash-lite-preview-06-17" and lite.supports_reasoning
    assert KNOWN_MODELS["gemini-3-pro-preview"].supports_tools_with_schema
    assert not KNOWN_MODELS["gemini-2.5-pro"].supports_tools_with_schema
    assert all(p.supports_json_schema and p.schema_dialect == "gemini" for p in KNOWN_MODELS.values())


def test_gemini_thought_signature_in_url_safe_base64_is_sent_back() -> None:
    """google-genai writes signatures into requests URL-safe and unpadded; a history taken from
    such a request (another tool's log) replays with the same bytes, not a binascii crash."""
    raw = bytes(range(250, 256)) + b"\xfb\xff signature"
    url_safe = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    assert "-" in url_safe or "_" in url_safe
    call = FunctionCallContent("c1", "get_weather", {"city": "Paris"})
    history = [Message.user("Weather?"), Message.assistant([TextReasoningContent("", url_safe), call])]
    request = create_client("gemini-2.5-flash", key="k").build_request(history, ChatOptions(tools=[WEATHER]))
    [model_part] = request["contents"][1]["parts"]
    assert model_part["thought_signature"] == raw


def _read_whole(body: dict[str, Any]) -> Any:
    """A whole generateContent answer (its REST JSON) read as the adapter reads a stream's chunks."""
    from chainform.clients._errors import StreamGuard
    from chainform.types import ChatResponse

    made = create_client("gemini-2.5-flash", key="g-test")
    reader, guard = made.wire.reader({}), StreamGuard("gemini")
    return ChatResponse.from_updates([*(reader.whole(body) or []), *reader.end(guard)])


def test_gemini_model_armor_is_a_content_filter() -> None:
    """A Model Armor template that blocks the answer ends it with finishReason MODEL_ARMOR."""
    body = {"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": "MODEL_ARMOR"}]}
    assert _read_whole(body).finish_reason == FinishReason.CONTENT_FILTER


def test_gemini_code_execution_parts_are_server_tool_content() -> None:
    """Code Gemini ran itself (executableCode, codeExecutionResult) stays in the answer as
    server-tool content, and goes back in the next request as it came."""
    from chainform.types import ServerToolContent

    parts = [
        {"executableCode": {"language": "PYTHON", "code": "print(1234 * 5678)"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "7006652\n"}},
        {"text": "It is 7006652."},
    ]
    answer = _read_whole(
        {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]}
    )
    server = [c for c in answer.messages[0].contents if isinstance(c, ServerToolContent)]
    assert [s.kind for s in server] == ["executable_code", "code_execution_result"]
    assert server[0].block == {"executable_code": {"language": "PYTHON", "code": "print(1234 * 5678)"}}
    assert answer.text == "It is 7006652." and not answer.function_calls
    made = create_client("gemini-2.5-flash", key="g-test")
    sent = made.build_request([Message.user("1234*5678?"), *answer.messages], ChatOptions())
    assert sent["contents"][1]["parts"][:2] == [server[0].block, server[1].block]
