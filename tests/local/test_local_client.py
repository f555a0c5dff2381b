"""LocalChatClient behaviour on a tiny random model: tool modes, seeds, stops, streaming, usage."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import jsonschema
import pytest

from chainform.errors import ModelNotFoundError, ProviderError, UnknownToolError
from chainform.local import LocalChatClient, _engine, create_client
from chainform.types import (
    ChatOptions,
    ChatResponse,
    FinishReason,
    FunctionResultContent,
    FunctionSpec,
    Message,
    ResponseFormat,
    ToolMode,
)

WEATHER = FunctionSpec(
    "get_weather",
    "Current weather for a city.",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
        "required": ["city", "days"],
    },
)
ADD = FunctionSpec(
    "add",
    "Add two numbers.",
    {
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"],
    },
)
ANSWER = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "temp_c": {"type": "number"}},
    "required": ["city", "temp_c"],
}
SPECS = {t.name: t for t in (WEATHER, ADD)}
ASK = [Message.user("What is the weather in Paris?")]


def _check_calls(response: ChatResponse, allowed: set[str]) -> None:
    assert response.finish_reason == FinishReason.TOOL_CALLS
    assert len(response.function_calls) == 1
    for call in response.function_calls:
        assert call.name in allowed
        assert call.call_id.startswith("call_")
        # The grammar's promise is about the text: schema-valid JSON. A random model may write a
        # literal past a double's range (`7.6e1661`); Python reads that as inf, which chainform
        # refuses as a tool's argument (not a finite number), so the call's `arguments` is None
        # and the chain re-asks. The text is what is checked here.
        jsonschema.validate(json.loads(call.raw_arguments), SPECS[call.name].parameters)


async def test_required_mode_always_calls_with_valid_arguments(tiny_client: LocalChatClient) -> None:
    for seed in range(4):
        options = ChatOptions(
            tools=[WEATHER, ADD], tool_mode=ToolMode.REQUIRED_ANY, temperature=1.0, seed=seed
        )
        _check_calls(await tiny_client.get_response(ASK, options), {"get_weather", "add"})


async def test_required_named_tool(tiny_client: LocalChatClient) -> None:
    options = ChatOptions(tools=[WEATHER, ADD], tool_mode=ToolMode.required("add"), temperature=1.0, seed=3)
    _check_calls(await tiny_client.get_response(ASK, options), {"add"})
    with pytest.raises(UnknownToolError):
        await tiny_client.get_response(ASK, ChatOptions(tools=[ADD], tool_mode=ToolMode.required("nope")))


async def test_auto_mode_is_a_valid_call_or_text(tiny_client: LocalChatClient) -> None:
    kinds = set()
    for seed in range(6):
        options = ChatOptions(tools=[WEATHER, ADD], temperature=1.0, seed=seed, max_output_tokens=40)
        response = await tiny_client.get_response(ASK, options)
        if response.function_calls:
            _check_calls(response, {"get_weather", "add"})
            kinds.add("call")
        else:
            assert response.text and not response.text.lstrip().startswith("<tool_call>")
            usage = response.usage_details
            assert usage is not None and usage.output_tokens == 40  # free text is never made to "land"
            kinds.add("text")
    assert kinds  # which branch a random model takes is its own business; each must be well formed


async def test_none_mode_never_calls(tiny_client: LocalChatClient) -> None:
    options = ChatOptions(
        tools=[WEATHER], tool_mode=ToolMode.NONE, temperature=1.0, seed=1, max_output_tokens=30
    )
    response = await tiny_client.get_response(ASK, options)
    assert not response.function_calls and response.text


async def test_schema_with_tools_is_a_call_or_a_valid_answer(tiny_client: LocalChatClient) -> None:
    history = [
        *ASK,
        Message.assistant([]),
        Message("tool", [FunctionResultContent("call_1", {"temp_c": 18.5}, name="get_weather")]),
    ]
    for seed in range(6):
        options = ChatOptions(
            tools=[WEATHER], response_format=ResponseFormat.json_schema(ANSWER), temperature=1.0, seed=seed
        )
        response = await tiny_client.get_response(history if seed % 2 else ASK, options)
        if response.function_calls:
            _check_calls(response, {"get_weather"})
        else:
            assert response.finish_reason == FinishReason.STOP
            jsonschema.validate(json.loads(response.text), ANSWER)


async def test_seed_makes_sampling_deterministic(tiny_client: LocalChatClient) -> None:
    def opts(seed: int) -> ChatOptions:
        return ChatOptions(temperature=1.0, top_p=0.95, top_k=500, seed=seed, max_output_tokens=20)

    first = await tiny_client.get_response(ASK, opts(7))
    again = await tiny_client.get_response(ASK, opts(7))
    other = await tiny_client.get_response(ASK, opts(8))
    assert first.text == again.text
    assert first.text != other.text
    greedy = [(await tiny_client.get_response(ASK, ChatOptions(max_output_tokens=10))).text for _ in range(2)]
    assert greedy[0] == greedy[1]


async def test_max_output_tokens_and_usage(tiny_client: LocalChatClient, tokenizer: Any) -> None:
    response = await tiny_client.get_response(ASK, ChatOptions(temperature=1.0, seed=2, max_output_tokens=12))
    assert response.finish_reason == FinishReason.LENGTH
    usage = response.usage_details
    assert usage is not None and usage.output_tokens == 12
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": ASK[0].text}], tokenize=False, add_generation_prompt=True
    )
    assert usage.input_tokens == len(tokenizer.encode(prompt, add_special_tokens=False))


async def test_stop_sequence_cuts_the_text(tiny_client: LocalChatClient) -> None:
    base = ChatOptions(temperature=1.0, seed=5, max_output_tokens=40)
    full = (await tiny_client.get_response(ASK, base)).text
    stop = full[len(full) // 2 : len(full) // 2 + 3]
    cut = await tiny_client.get_response(ASK, base.replace(stop_sequences=[stop]))
    assert cut.finish_reason == FinishReason.STOP
    assert cut.text == full[: full.index(stop)]
    streamed = [
        u.text async for u in tiny_client.get_streaming_response(ASK, base.replace(stop_sequences=[stop]))
    ]
    assert "".join(streamed) == cut.text


async def test_streaming_joins_to_the_non_streamed_response(tiny_client: LocalChatClient) -> None:
    for options in (
        ChatOptions(temperature=1.0, seed=11, max_output_tokens=30),
        ChatOptions(response_format=ResponseFormat.json_schema(ANSWER), temperature=1.0, seed=11),
        ChatOptions(tools=[WEATHER], tool_mode=ToolMode.REQUIRED_ANY, temperature=1.0, seed=11),
    ):
        updates = [u async for u in tiny_client.get_streaming_response(ASK, options)]
        joined = ChatResponse.from_updates(updates)
        whole = await tiny_client.get_response(ASK, options)
        assert len(updates) > 1 or joined.function_calls
        assert joined.text == whole.text
        assert [(c.name, c.arguments) for c in joined.function_calls] == [
            (c.name, c.arguments) for c in whole.function_calls
        ]
        assert joined.finish_reason == whole.finish_reason
        assert joined.usage_details == whole.usage_details


def test_multibyte_text_is_decoded_across_token_boundaries(tiny_loaded: Any) -> None:
    """Streamed pieces never hold half a character, whether the grammar forces the whole string (the
    first token is the random model's pick, the rest fed as forced) or every character is a pick,
    often split across byte tokens."""
    target = "héllo wörld 日本語 🙂 ok"
    chars = "é日本語🙂ö"
    for grammar in ("start: " + json.dumps(target) + "\n", f"start: /[{chars}]{{12}}/\n"):
        for seed in range(5):
            pieces: list[str] = []
            result = _engine.generate(
                tiny_loaded,
                tiny_loaded.tokenizer.encode("hi", add_special_tokens=False),
                max_new_tokens=100,
                sampling=_engine.Sampling(temperature=1.0, seed=seed),
                grammar=grammar,
                emit=pieces.append,
            )
            assert "".join(pieces) == result.text and all("\ufffd" not in p for p in pieces)
            assert result.text == target or (len(result.text) == 12 and set(result.text) <= set(chars))


async def test_prompt_beyond_the_context_window_is_a_clear_error(tiny_client: LocalChatClient) -> None:
    messages = [Message.user("word " * 9000)]
    with pytest.raises(ProviderError, match=r"the prompt is 90\d\d tokens; .* context window is 8192 tokens"):
        await tiny_client.get_response(messages, ChatOptions(max_output_tokens=5))


def test_profile_and_names() -> None:
    client = create_client("local")
    assert client.model == "smollm2" and client.model_id == "local/smollm2"
    profile = client.profile
    assert profile.supports_json_schema and profile.supports_tools_with_schema and profile.supports_seed
    assert profile.schema_dialect == "llguidance" and profile.context_window == 8192
    assert create_client("local/smollm2").model == "smollm2"
    assert create_client("local//tmp/x.gguf").model == "/tmp/x.gguf"
    with pytest.raises(ModelNotFoundError):
        create_client("openai/gpt-4o")


def test_unknown_local_model_is_a_clear_error() -> None:
    with pytest.raises(ModelNotFoundError, match="neither a known name"):
        create_client("local/does-not-exist").load()


def test_import_is_light() -> None:
    code = "import sys, chainform.local; print(sorted(m for m in ('torch', 'transformers', 'llguidance') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


async def test_constrained_output_lands_inside_a_small_budget(tiny_client: LocalChatClient) -> None:
    """Near the end of the budget, closing tokens are preferred, so unbounded values still finish."""
    schema = {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "string"}}, "n": {"type": "integer"}},
        "required": ["items", "n"],
    }
    for seed in range(4):
        options = ChatOptions(
            response_format=ResponseFormat.json_schema(schema),
            temperature=1.0,
            seed=seed,
            max_output_tokens=40,
        )
        response = await tiny_client.get_response(ASK, options)
        assert response.finish_reason == FinishReason.STOP
        assert response.usage_details is not None and response.usage_details.output_tokens <= 40
        jsonschema.validate(json.loads(response.text), schema)
