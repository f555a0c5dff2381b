"""Recorded real answers of issue 46's cases, replayed through a whole chain: a real provider's
"stopped at the limit" is a TruncatedOutputError after one call, never a re-ask."""

from __future__ import annotations

import pytest
from recorded_replay import client_for, sent
from recorded_traffic import chat_calls

import chainform as cf
from chainform.testing.emulator import Emulator, RawResponse
from chainform.types import ChatOptions, Message

pytestmark = pytest.mark.usefixtures("openai_isolated")

CUT_OFF = [
    "test_google/test_google_model_max_tokens.yaml",  # finishReason MAX_TOKENS
    "test_bedrock/test_bedrock_model_max_tokens.yaml",  # stopReason max_tokens
]


@pytest.mark.parametrize("file", CUT_OFF)
def test_a_recorded_cut_answer_is_truncated_after_one_call(file: str, replayer: Emulator) -> None:
    (ex,) = chat_calls(file)
    assert ex.wire is not None
    replayer.add(RawResponse(ex.status, ex.body, ex.content_type, ex.reply_headers))
    before = len(replayer.requests)
    model = cf.Model(client_for(ex.wire, ex.model, replayer))
    chain = model.prompt("Capital of France?", schema="capital", strategy="prompted", stream=ex.streamed)
    with pytest.raises(cf.TruncatedOutputError) as info:
        chain.value
    assert len(replayer.requests) == before + 1
    assert info.value.text and info.value.usage.output_tokens
    assert [c.finish_reason for c in info.value.responses] == ["length"]
    model.close()


HOSTED = [  # (recorded file, the hosted tool, what of the recorded tool must be the same)
    ("test_google/test_google_model_web_search_tool.yaml", cf.WebSearch(), ("googleSearch",)),
    ("test_google/test_google_model_file_search_tool.yaml", cf.FileSearch(["fs"]), ("fileSearch",)),
    ("test_openai_responses/test_openai_responses_model_web_search_tool.yaml", cf.WebSearch(), ("type",)),
    (
        "test_openai_responses/test_openai_responses_thinking_with_code_execution_tool.yaml",
        cf.CodeExecution(),
        ("type", "container"),
    ),
    (
        "test_openai_responses/test_openai_responses_model_file_search_tool.yaml",
        cf.FileSearch(["vs"]),
        ("type",),
    ),
    (
        "test_anthropic/test_anthropic_server_tool_pass_history_to_another_provider.yaml",
        cf.WebSearch(),
        ("type", "name"),
    ),
    ("test_anthropic/test_anthropic_web_fetch_tool.yaml", cf.URLContext(), ("type", "name")),
    ("test_anthropic/test_anthropic_code_execution_tool.yaml", cf.CodeExecution(), ("type~", "name")),
]


@pytest.mark.parametrize(("file", "tool", "same"), HOSTED, ids=[f"{f.split('/')[1]}" for f, _, _ in HOSTED])
async def test_a_hosted_tool_is_sent_in_the_shape_the_real_api_accepted(
    file: str, tool: cf.HostedTool, same: tuple[str, ...], replayer: Emulator
) -> None:
    ex = next(e for e in chat_calls(file) if isinstance(e.request, dict) and _tools(e.request))
    body = await sent(ex, replayer, [Message.user("Go.")], ChatOptions(hosted_tools=(tool,)))
    (recorded,), (ours,) = _tools(ex.request), _tools(body)
    for key in same:
        if key.endswith("~"):  # a versioned type: the same tool, of the version chainform sends
            assert ours[key[:-1]].rsplit("_", 1)[0] == recorded[key[:-1]].rsplit("_", 1)[0]
        else:
            assert (key in ours, ours.get(key)) == (key in recorded, recorded.get(key)) or (
                key in ("googleSearch", "fileSearch") and key in ours
            ), (key, ours, recorded)


def _tools(body: dict) -> list[dict]:
    """The provider-run tools of a request body (those that are not function declarations)."""
    tools = body.get("tools") or (body.get("config") or {}).get("tools") or []
    return [
        t
        for t in tools
        if t.get("type") != "function"
        and "functionDeclarations" not in t
        and "function_declarations" not in t
        and "input_schema" not in t
    ]
