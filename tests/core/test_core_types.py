"""The core vocabulary: joins of streamed updates, usage sums, open string values."""

from __future__ import annotations

import json

import pytest

import chainform as cf
from chainform.types import (
    ChatResponse,
    ChatResponseUpdate,
    DataContent,
    FinishReason,
    FunctionCallContent,
    Message,
    Role,
    TextContent,
    TextReasoningContent,
    UsageContent,
    UsageDetails,
)

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def test_text_and_reasoning_deltas_join_into_one_part_each():
    updates = [
        ChatResponseUpdate([TextReasoningContent("Let me ")], role=Role.ASSISTANT, response_id="r1"),
        ChatResponseUpdate([TextReasoningContent("think.")]),
        ChatResponseUpdate([TextContent("Hel")]),
        ChatResponseUpdate([TextContent("lo")], model_id="m"),
        ChatResponseUpdate([], finish_reason=FinishReason.STOP),
    ]
    response = ChatResponse.from_updates(updates)
    assert response.text == "Hello"
    assert response.reasoning == "Let me think."
    assert len(response.messages) == 1
    assert [type(c).__name__ for c in response.messages[0].contents] == [
        "TextReasoningContent",
        "TextContent",
    ]
    assert response.response_id == "r1" and response.model_id == "m"
    assert response.finish_reason == "stop"
    assert updates[2].contents[0].text == "Hel"  # joining never mutates the updates


def test_function_call_arguments_split_across_many_fragments_by_index():
    args = json.dumps({"city": "Paris", "days": [1, 2, 3], "note": "naïve ☃"})
    first = [ChatResponseUpdate([FunctionCallContent("c1", "weather", raw_arguments="", index=0)])]
    first += [ChatResponseUpdate([FunctionCallContent("c2", "time", raw_arguments="{}", index=1)])]
    pieces = [args[i : i + 3] for i in range(0, len(args), 3)]
    frags = [ChatResponseUpdate([FunctionCallContent("", "", raw_arguments=p, index=0)]) for p in pieces]
    response = ChatResponse.from_updates(first + frags)
    calls = response.function_calls
    assert [(c.call_id, c.name) for c in calls] == [("c1", "weather"), ("c2", "time")]
    assert calls[0].arguments == json.loads(args)
    assert calls[0].raw_arguments == args
    assert calls[1].arguments == {}


def test_function_call_fragments_by_call_id_and_unparseable_arguments_kept():
    updates = [
        ChatResponseUpdate([FunctionCallContent("a", "f", raw_arguments='{"x": ')]),
        ChatResponseUpdate([FunctionCallContent("a", "", raw_arguments="1}")]),
        ChatResponseUpdate([FunctionCallContent("b", "g", raw_arguments="{broken")]),
    ]
    calls = ChatResponse.from_updates(updates).function_calls
    assert calls[0].arguments == {"x": 1}
    assert calls[1].arguments is None
    assert calls[1].raw_arguments == "{broken"
    assert "not a JSON object" in calls[1].parse_error


def test_usage_in_stream_is_summed():
    updates = [
        ChatResponseUpdate([UsageContent(UsageDetails(input_tokens=10, additional_counts={"cached": 4}))]),
        ChatResponseUpdate([TextContent("x")]),
        ChatResponseUpdate(
            [UsageContent(UsageDetails(output_tokens=5, additional_counts={"cached": 1, "r": 2}))]
        ),
    ]
    usage = ChatResponse.from_updates(updates).usage_details
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (10, 5, 15)
    assert usage.additional_counts == {"cached": 5, "r": 2}


def test_usage_addition_keeps_unknown_as_none_and_sums_counts():
    a = UsageDetails(input_tokens=3, output_tokens=None, additional_counts={"k": 1})
    b = UsageDetails(input_tokens=None, output_tokens=None)
    total = a + b + UsageDetails(input_tokens=1, output_tokens=2, additional_counts={"k": 2, "z": 1})
    assert total.input_tokens == 4 and total.output_tokens == 2
    assert total.additional_counts == {"k": 3, "z": 1}
    assert (b + None).input_tokens is None
    assert sum([a, a], UsageDetails()).input_tokens == 6


def test_message_ids_and_roles_split_messages():
    updates = [
        ChatResponseUpdate([TextContent("a")], message_id="m1"),
        ChatResponseUpdate([TextContent("b")], message_id="m1"),
        ChatResponseUpdate([TextContent("c")], message_id="m2"),
        ChatResponseUpdate([TextContent("d")], role=Role("critic")),
    ]
    response = ChatResponse.from_updates(updates)
    assert [m.text for m in response.messages] == ["ab", "c", "d"]
    assert response.messages[2].role == "critic"


def test_unknown_roles_and_finish_reasons_are_kept():
    role = Role("developer")
    assert role == "developer" and isinstance(role, Role) and repr(role) == "Role('developer')"
    assert Role.USER == "user" and Role("user") == Role.USER
    reason = FinishReason("pause_turn")
    assert reason == "pause_turn" and FinishReason.TOOL_CALLS == "tool_calls"
    msg = Message("developer", "hi")
    assert msg.role == "developer" and msg.text == "hi"


def test_data_content_from_uri_and_back():
    part = DataContent.from_uri("data:image/png;base64,iVBORw0KGgo=")
    assert part.media_type == "image/png" and part.data.startswith(b"\x89PNG")
    assert DataContent.from_uri(part.uri) == part
    with pytest.raises(ValueError, match="not a data URI"):
        DataContent.from_uri("https://example.com/x.png")


def test_options_replace_and_set_fields():
    base = cf.ChatOptions(temperature=0.2, additional_properties={"a": 1})
    merged = base.replace(seed=7)
    assert merged.temperature == 0.2 and merged.seed == 7
    assert base.seed is None
    assert set(merged.set_fields()) == {"temperature", "seed", "additional_properties"}
    assert cf.ToolMode.required("f") == cf.ToolMode("required", "f")
    fmt = cf.ResponseFormat.json_schema({"type": "object"}, name="x")
    assert fmt.kind == "json_schema" and fmt.strict


def test_profile_capabilities_are_data():
    profile = cf.ModelProfile(name="m", unsupported_options=frozenset({"seed"}))
    caps = profile.capabilities()
    assert caps["unsupported_options"] == ["seed"] and caps["supports_tools"] is True
    assert profile.replace(supports_json_schema=True).supports_json_schema
