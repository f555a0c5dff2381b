"""Brought models call tools in their own format: recognised from the chat template, enforced by the
grammar, parsed back, and written back into the history. Checked on the tiny random model (so every
call's shape comes from the grammar) with made-up chat templates; no real Qwen or Phi model is run here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import llguidance
import llguidance.hf
import pytest

from chainform.local import ONNXRuntimeClient, _grammar, _toolformat
from chainform.local.client import _chat
from chainform.types import ChatOptions, FunctionCallContent, FunctionSpec, Message, ToolMode

WEATHER = FunctionSpec(
    "get_weather",
    "Current weather for a city.",
    {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)
FORMATS = [_toolformat.SMOLLM2, *_toolformat.FORMATS]
QWEN_LIKE = (  # the parts of a Qwen2.5-style template that matter here: ChatML, tools, <tool_call>
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    '{# <tools></tools> <tool_call>\\n{"name": <function-name>, "arguments": <args-json-object>}\\n</tool_call> #}'
)


@pytest.fixture(scope="module")
def lltokenizer(tokenizer: Any) -> Any:
    return llguidance.hf.from_tokenizer(tokenizer)


def test_formats_are_recognised_from_the_chat_template() -> None:
    assert _toolformat.detect(None) is _toolformat.SMOLLM2
    assert _toolformat.detect("<|im_start|>{{ message['content'] }}") is _toolformat.SMOLLM2
    assert _toolformat.detect(QWEN_LIKE) is _toolformat.HERMES
    assert (
        _toolformat.detect("{{ '<|system|>' + m['content'] + '<|tool|>' + m['tools'] + '<|/tool|>' }}").name
        == "phi4-mini"
    )
    assert _toolformat.detect("{{ '[TOOL_CALLS]' + calls }}") is _toolformat.MISTRAL


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("multiple", [False, True])
def test_each_format_is_enforced_and_parsed(fmt: Any, multiple: bool, lltokenizer: Any) -> None:
    auto = _grammar.plan(ChatOptions(tools=[WEATHER], allow_multiple_tool_calls=multiple), 32, fmt)
    required = _grammar.plan(
        ChatOptions(tools=[WEATHER], allow_multiple_tool_calls=multiple, tool_mode=ToolMode.required()),
        32,
        fmt,
    )
    calls = [{"name": "get_weather", "arguments": {"city": c}} for c in ("Paris", "Rome")[: 1 + multiple]]
    text = fmt.render(calls)
    other = next(f for f in FORMATS if f.open != fmt.open)
    for plan, candidate, accepted in (
        (required, text, True),
        (auto, text, True),
        (
            required,
            fmt.render([{"name": "get_weather", "arguments": {"town": "Paris"}}]),
            False,
        ),  # not the schema
        (required, other.render(calls), False),  # another family's format
        (auto, "It is sunny.", True),  # auto: text is an answer too
        (auto, fmt.open + " is what I would write", False),  # but never text that starts like a call
        (auto, '<tool_response>"Bonjour"</tool_response>', False),  # nor like markup
    ):
        matcher = llguidance.LLMatcher(lltokenizer, plan.grammar, log_level=0)
        ids = lltokenizer.tokenize_str(candidate)
        ok = (
            matcher.validate_tokens(ids) == len(ids)
            and matcher.consume_tokens(ids)
            and matcher.is_accepting()
        )
        assert ok is accepted, (fmt.name, plan.mode, candidate)
    parsed = fmt.parse(text)
    assert parsed is not None and [(c.name, c.arguments) for c in parsed] == [
        (c["name"], c["arguments"]) for c in calls
    ]
    assert fmt.parse("It is sunny.") is None and fmt.parse(fmt.open + "[oops") is None
    assert fmt.render([{"name": "tool_name", "arguments": {"arg": "value"}}]) in auto.instructions


async def test_a_brought_qwen_style_folder_calls_in_its_format(tiny_onnx_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "qwen-like"
    shutil.copytree(tiny_onnx_dir, folder)
    (folder / "chat_template.jinja").write_text(QWEN_LIKE)
    client = ONNXRuntimeClient(str(folder), max_string_length=12, max_output_tokens=80)
    assert _toolformat.detect(client.load().tokenizer.chat_template) is _toolformat.HERMES
    for seed in range(3):
        options = ChatOptions(tools=[WEATHER], tool_mode=ToolMode.required(), temperature=1.0, seed=seed)
        response = await client.get_response([Message.user("Weather in Paris?")], options)
        (call,) = response.function_calls
        jsonschema.validate(call.arguments, WEATHER.parameters)
    # the prompt shows the example and earlier calls in the same format
    plan = _grammar.plan(ChatOptions(tools=[WEATHER]), 12, _toolformat.HERMES)
    earlier = FunctionCallContent("call_1", "get_weather", {"city": "Rome"}, json.dumps({"city": "Rome"}), 0)
    chat = _chat([Message.user("Rome?"), Message("assistant", [earlier])], plan)
    assert (
        chat[-1]["content"]
        == '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>'
    )
    assert any(m["content"].startswith("<tool_call>\n{") for m in chat[:-1] if m["role"] == "assistant")
