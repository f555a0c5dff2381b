"""The Bedrock Converse adapter through real boto3/botocore against the loopback emulator.

ConverseStream replies use the AWS event-stream binary framing, decoded by botocore itself.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from adapter_fixtures import SCHEMA, WEATHER, bedrock_client

from chainform.clients.bedrock import KNOWN_MODELS, BedrockClient, create_client
from chainform.errors import ProviderError, UnsupportedOptionError
from chainform.testing import tool_call
from chainform.testing.emulator import Emulator, Fault, Reply, Usage
from chainform.testing.emulator._bedrock import frame, signature
from chainform.types import (
    ChatOptions,
    ChatResponse,
    DataContent,
    FinishReason,
    FunctionCallContent,
    FunctionResultContent,
    FunctionSpec,
    Message,
    ResponseFormat,
    ServerToolContent,
    TextContent,
    TextReasoningContent,
    ToolMode,
)

CLAUDE = "anthropic.claude-sonnet-4-5-20250929-v1:0"
LLAMA = "meta.llama3-3-70b-instruct-v1:0"


@pytest.fixture(autouse=True)
def no_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """botocore's standard retry mode sleeps up to a second; tests need not wait."""
    from botocore.retries import standard

    monkeypatch.setattr(standard.ExponentialBackoff, "delay_amount", lambda self, context: 0.0)


def client(emu: Emulator, model: str = CLAUDE, **kwargs: Any) -> BedrockClient:
    made: BedrockClient = bedrock_client(emu, model, **kwargs)
    return made


async def test_bedrock_converse_text_request_shape_and_usage(emu: Emulator) -> None:
    emu.add(Reply(["Hello there!"], usage=Usage(30, 3, cached_input_tokens=10)))
    options = ChatOptions(temperature=0.2, top_p=0.9, top_k=40, stop_sequences=["END"], max_output_tokens=100)
    response = await client(emu).get_response([Message.system("Be brief."), Message.user("Hi")], options)

    assert response.text == "Hello there!"
    assert response.finish_reason == FinishReason.STOP
    usage = response.usage_details
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (30, 3, 33)
    assert usage.additional_counts == {"cache_read_input_tokens": 10}
    request = emu.requests[0]
    assert request.path == "/model/anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"
    assert request.headers["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDTEST/")
    assert request.body["system"] == [{"text": "Be brief."}]
    assert request.body["messages"] == [{"role": "user", "content": [{"text": "Hi"}]}]
    assert request.body["inferenceConfig"] == {
        "maxTokens": 100,
        "temperature": 0.2,
        "topP": 0.9,
        "stopSequences": ["END"],
    }
    assert request.body["additionalModelRequestFields"] == {"top_k": 40}


async def test_bedrock_stream_parallel_tool_calls_with_fragments(emu: Emulator) -> None:
    emu.add(
        [
            TextReasoningContent("Two cities."),
            tool_call("get_weather", city="Paris"),
            tool_call("get_weather", city="Rome"),
        ]
    )
    updates = [
        u async for u in client(emu).get_streaming_response([Message.user("?")], ChatOptions(tools=[WEATHER]))
    ]
    fragments = [c for u in updates for c in u.contents if isinstance(c, FunctionCallContent)]
    assert len(fragments) > 4  # ids/names first, then argument pieces
    response = ChatResponse.from_updates(updates)
    assert [c.arguments for c in response.function_calls] == [{"city": "Paris"}, {"city": "Rome"}]
    assert response.finish_reason == FinishReason.TOOL_CALLS
    reasoning = response.messages[0].contents[0]
    assert isinstance(reasoning, TextReasoningContent)
    assert (reasoning.text, reasoning.protected_data) == ("Two cities.", signature("Two cities."))
    assert emu.requests[0].body["toolConfig"]["toolChoice"] == {"auto": {}}
    spec = emu.requests[0].body["toolConfig"]["tools"][0]["toolSpec"]
    assert (
        spec["name"] == "get_weather"
        and spec["inputSchema"]["json"]["properties"] == WEATHER.parameters["properties"]
    )


async def test_bedrock_converse_tool_calls_whole(emu: Emulator) -> None:
    emu.add([TextReasoningContent("hmm"), "Checking.", tool_call("get_weather", city="Oslo")])
    response = await client(emu).get_response([Message.user("?")], ChatOptions(tools=[WEATHER]))
    assert response.text == "Checking."
    assert response.reasoning == "hmm"
    assert [(c.name, c.arguments) for c in response.function_calls] == [("get_weather", {"city": "Oslo"})]
    assert response.finish_reason == FinishReason.TOOL_CALLS


HISTORY = [
    Message.user([TextContent("Look:"), DataContent(b"\x89PNG", "image/png")]),
    Message.assistant(
        [
            TextReasoningContent("thinking", protected_data="sig"),
            FunctionCallContent("tu_1", "get_weather", {"city": "Paris"}),
        ]
    ),
    Message("tool", [FunctionResultContent("tu_1", error="service down", name="get_weather")]),
]


async def test_bedrock_tool_history_round_trip(emu: Emulator) -> None:
    emu.add("ok", "ok")
    await client(emu).get_response(HISTORY, ChatOptions(tools=[WEATHER]))
    messages = emu.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[0]["content"][1]["image"]["format"] == "png"
    assert messages[1]["content"][0] == {
        "reasoningContent": {"reasoningText": {"text": "thinking", "signature": "sig"}}
    }
    assert messages[1]["content"][1] == {
        "toolUse": {"toolUseId": "tu_1", "name": "get_weather", "input": {"city": "Paris"}}
    }
    result = messages[2]["content"][0]["toolResult"]
    assert result["status"] == "error" and "service down" in result["content"][0]["text"]

    await client(emu, LLAMA).get_response(HISTORY[1:], ChatOptions(tools=[WEATHER]))
    assert "status" not in emu.requests[1].body["messages"][1]["content"][0]["toolResult"]


async def test_bedrock_tool_mode_none_tells_history_as_text(emu: Emulator) -> None:
    emu.add("Paris it is.")
    await client(emu).get_response(HISTORY, ChatOptions(tools=[WEATHER], tool_mode=ToolMode.NONE))
    body = emu.requests[0].body
    assert "toolConfig" not in body
    texts = [b.get("text", "") for m in body["messages"] for b in m["content"]]
    assert any("called tool get_weather" in t for t in texts)
    assert any("get_weather returned: Error: service down" in t for t in texts)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        (ToolMode.REQUIRED_ANY, {"any": {}}),
        (ToolMode.required("get_weather"), {"tool": {"name": "get_weather"}}),
    ],
)
async def test_bedrock_tool_choice(emu: Emulator, mode: ToolMode, expected: dict[str, Any]) -> None:
    emu.add("ok")
    await client(emu).get_response([Message.user("?")], ChatOptions(tools=[WEATHER], tool_mode=mode))
    assert emu.requests[0].body["toolConfig"]["toolChoice"] == expected


async def test_bedrock_option_errors(emu: Emulator) -> None:
    required = ChatOptions(tools=[WEATHER], tool_mode=ToolMode.REQUIRED_ANY)
    with pytest.raises(UnsupportedOptionError, match="cannot be made to call a tool"):
        await client(emu, LLAMA).get_response([Message.user("?")], required)
    with pytest.raises(UnsupportedOptionError, match="no native JSON output"):
        schema = ChatOptions(response_format=ResponseFormat.json_schema(SCHEMA))
        await client(emu, "anthropic.claude-3-5-sonnet-20241022-v2:0").get_response(
            [Message.user("?")], schema
        )
    assert emu.requests == []


async def test_bedrock_structured_output_and_nova_top_k(emu: Emulator) -> None:
    emu.add('{"city": "Paris"}', "ok")
    options = ChatOptions(
        response_format=ResponseFormat.json_schema(SCHEMA, name="answer", description="The city.")
    )
    response = await client(emu).get_response([Message.user("Warmest?")], options)
    assert json.loads(response.text) == {"city": "Paris"}
    fmt = emu.requests[0].body["outputConfig"]["textFormat"]
    assert fmt["type"] == "json_schema"
    definition = fmt["structure"]["jsonSchema"]
    assert (definition["name"], definition["description"]) == ("answer", "The city.")
    assert json.loads(definition["schema"])["properties"] == SCHEMA["properties"]

    await client(emu, "us.amazon.nova-pro-v1:0").get_response([Message.user("?")], ChatOptions(top_k=3))
    assert emu.requests[1].body["additionalModelRequestFields"] == {"inferenceConfig": {"topK": 3}}


async def test_bedrock_converse_500_after_retries_is_provider_error(emu: Emulator) -> None:
    """Non-streamed Converse (the conformance suite covers ConverseStream)."""
    emu.add(Fault(500, message="boom"), Fault(500, message="boom again"))
    with pytest.raises(ProviderError) as info:
        await client(emu).get_response([Message.user("?")])
    err = info.value
    assert (err.status, err.provider) == (500, "bedrock")
    assert err.provider_message == "InternalServerException: boom again"
    assert err.request_id == emu.requests[-1].request_id and len(emu.requests) == 2


def test_bedrock_event_frame_decodes_with_botocore() -> None:
    from botocore.eventstream import ChecksumMismatch, EventStreamBuffer

    buffer = EventStreamBuffer()
    buffer.add_data(frame({":event-type": "messageStart"}, b'{"role": "assistant"}'))
    message = next(iter(buffer))
    assert message.headers[":event-type"] == "messageStart" and message.payload == b'{"role": "assistant"}'
    broken = EventStreamBuffer()
    broken.add_data(frame({":event-type": "x"}, b"{}", corrupt=True))
    with pytest.raises(ChecksumMismatch):
        next(iter(broken))


def test_bedrock_profiles_by_family() -> None:
    profile = create_client("global.anthropic.claude-haiku-4-5-20251001-v1:0", region="us-east-1").profile
    assert profile.supports_json_schema and profile.name.startswith("global.")
    assert not KNOWN_MODELS[LLAMA].supports_tool_choice_required
    assert "top_k" not in KNOWN_MODELS["mistral.mistral-large-2407-v1:0"].unsupported_options
    unknown = create_client("cohere.command-r-v1:0", region="us-east-1").profile
    assert not unknown.supports_json_schema and unknown.provider == "bedrock"
    with pytest.raises(Exception, match="ACCESS_KEY_ID:SECRET_ACCESS_KEY"):
        create_client(CLAUDE, key="just-one-part")


# Recorded from Bedrock (Nova with its `nova_code_interpreter` system tool): the code interpreter's
# use and result arrive in the assistant turn beside the call of the model's own tool.
NOVA_CODE_TURN = {
    "output": {
        "message": {
            "role": "assistant",
            "content": [
                {
                    "toolUse": {
                        "input": {"snippet": "1234 * 5678"},
                        "name": "nova_code_interpreter",
                        "toolUseId": "tooluse_dV5ehBNfl1hUE-UTM9cIww",
                        "type": "server_tool_use",
                    }
                },
                {
                    "toolResult": {
                        "content": [
                            {"json": {"exitCode": 0, "isError": False, "stdErr": "", "stdOut": "7006652"}}
                        ],
                        "status": "success",
                        "toolUseId": "tooluse_dV5ehBNfl1hUE-UTM9cIww",
                        "type": "nova_code_interpreter_result",
                    }
                },
                {
                    "toolUse": {
                        "input": {"result": 7006652.0},
                        "name": "final_result",
                        "toolUseId": "tooluse_DaRsVjwcShCI_3pOsIsWqg",
                        "type": "tool_use",
                    }
                },
            ],
        }
    },
    "stopReason": "tool_use",
    "usage": {"inputTokens": 1002, "outputTokens": 59, "serverToolUsage": {}, "totalTokens": 1061},
}


def test_bedrock_nova_code_interpreter_is_server_tool_content_not_a_call() -> None:
    """A `toolUse` of type server_tool_use ran at Bedrock: it and its `toolResult` are kept as
    server-tool content (and sent back as they came), and only the model's own tool is a call."""
    from chainform.clients.bedrock import ConverseWire
    from chainform.clients.registry import PROVIDERS

    made = create_client(
        "us.amazon.nova-pro-v1:0",
        region="us-east-1",
        base_url="http://127.0.0.1:9",
        aws_access_key_id="AKIDTEST",
        aws_secret_access_key="secret",
    )
    assert PROVIDERS["bedrock"].factory.endswith(":create_client") and isinstance(made.wire, ConverseWire)
    request = {"modelId": "us.amazon.nova-pro-v1:0"}
    answer = ChatResponse.from_updates(made.wire.read_answer(NOVA_CODE_TURN, request, made.guard()))
    assert [c.name for c in answer.function_calls] == ["final_result"]
    server = [c for c in answer.messages[0].contents if isinstance(c, ServerToolContent)]
    assert [s.kind for s in server] == ["server_tool_use", "nova_code_interpreter_result"]
    assert server[1].block["toolResult"]["content"][0]["json"]["stdOut"] == "7006652"
    tool = FunctionSpec("final_result", "The answer.", {"type": "object", "properties": {}})
    again = made.build_request([Message.user("?"), *answer.messages], ChatOptions(tools=[tool]))
    blocks = again["messages"][1]["content"]
    assert blocks[:2] == NOVA_CODE_TURN["output"]["message"]["content"][:2]  # sent back as they came
