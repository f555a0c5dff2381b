"""Model-written JSON under limits, partial objects and the stream join (red-team breaks 1 and 2)."""

from __future__ import annotations

import itertools
import json

import pytest

import chainform as cf
from chainform import _json
from chainform.output._spec import extract_json
from chainform.schema import partial as partial_module
from chainform.schema.partial import PartialJSON, parse_partial
from chainform.types import (
    ChatResponse,
    ChatResponseUpdate,
    FunctionCallContent,
    TextContent,
    TextReasoningContent,
    parse_arguments,
)

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

DEEP = "[" * 1000 + "]" * 1000


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_deep_nesting_is_a_typed_error_not_a_recursion_error():
    with pytest.raises(cf.JSONLimitError, match="nested more than"):
        _json.load_json(DEEP)
    with pytest.raises(ValueError, match="nested more than"):
        extract_json("Here you go: " + DEEP)
    assert parse_partial(DEEP) is None
    assert parse_partial(DEEP[:1500]) is None


def test_deep_tool_arguments_are_unparsed_with_a_reason():
    raw = '{"x": ' + DEEP + "}"
    assert parse_arguments(raw) is None
    call = FunctionCallContent.from_raw("c1", "f", raw)
    assert call.arguments is None and call.raw_arguments == raw
    assert call.parse_error is not None and "nested more than" in call.parse_error


def test_depth_limit_is_exact():
    assert _json.load_json(nested(_json.MAX_DEPTH)) is not None
    with pytest.raises(cf.JSONLimitError):
        _json.load_json(nested(_json.MAX_DEPTH + 1))
    # a wide value with many containers is not mistaken for a deep one
    wide = json.dumps([[i] for i in range(5000)])
    assert len(_json.load_json(wide)) == 5000


def test_size_limit(monkeypatch):
    monkeypatch.setattr(_json, "MAX_CHARS", 100)
    with pytest.raises(cf.JSONLimitError, match="longer than"):
        _json.load_json(json.dumps(["x" * 200]))
    assert parse_arguments(json.dumps({"x": "y" * 200})) is None


def test_lone_surrogate_is_valid_json_and_kept():
    assert _json.load_json('"\\ud800"') == "\ud800"
    assert parse_arguments('{"s": "a\\udc00b"}') == {"s": "a\udc00b"}
    assert extract_json('Answer: {"s": "\\ud800"} done') == {"s": "\ud800"}


def test_parse_partial_closes_what_is_open_and_skips_chatter():
    assert parse_partial('Sure! {"city": "Ro') == {"city": "Ro"}
    assert parse_partial('{"a": 1, "b') == {"a": 1}
    assert parse_partial('{"a": [1, {"b": tr') == {"a": [1, {}]}
    assert parse_partial('{"a": 1} and then some') == {"a": 1}
    assert parse_partial("no json here") is None


def chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def test_partial_json_reports_growing_values_and_ends_complete():
    text = json.dumps({"city": "Rome", "temp_c": 27.0, "tags": ["a", "b"]})
    tracker = PartialJSON()
    values = [v for c in chunks("chatter " + text, 3) if (v := tracker.feed(c)) is not None]
    final = tracker.finish()
    values += [final] if final is not None else []
    assert values[-1] == json.loads(text)
    assert {"city": "Rom"} in values  # strings grow while they stream
    assert all(a != b for a, b in itertools.pairwise(values))  # no repeats


def test_partial_json_parses_a_large_answer_a_logarithmic_number_of_times(monkeypatch):
    calls = []
    real = partial_module.parse_partial

    def counting(text: str):
        calls.append(len(text))
        return real(text)

    monkeypatch.setattr(partial_module, "parse_partial", counting)
    text = json.dumps({"items": [{"id": i, "name": f"item {i}"} for i in range(8000)]})
    tracker = PartialJSON()
    for c in chunks(text, 8):
        tracker.feed(c)
    assert tracker.finish() == json.loads(text)
    deltas = len(text) // 8
    assert len(calls) < 1024 + 64 < deltas  # every delta while short, then on growth by 1/8
    assert sum(calls) < 12 * len(text)  # total parsing work stays linear in the answer's size


class CountingStr(str):
    """A str that counts pairwise concatenations (`+=` on a growing text copies it every time)."""

    concatenations = 0

    def __add__(self, other: str) -> CountingStr:
        CountingStr.concatenations += 1
        return CountingStr(str.__add__(self, other))


def test_stream_join_does_not_copy_the_growing_text_per_delta():
    CountingStr.concatenations = 0
    pieces = [CountingStr(f"piece {i} ") for i in range(2000)]
    updates = [ChatResponseUpdate([TextContent(p)]) for p in pieces]
    response = ChatResponse.from_updates(updates)
    assert response.text == "".join(pieces)
    assert CountingStr.concatenations == 0


def test_stream_join_keeps_text_kinds_and_order_apart():
    updates = [
        ChatResponseUpdate([TextReasoningContent("think ")]),
        ChatResponseUpdate([TextReasoningContent("more", protected_data="sig")]),
        ChatResponseUpdate([TextContent("Hel")]),
        ChatResponseUpdate([TextContent("lo")]),
        ChatResponseUpdate([FunctionCallContent("c1", "f", raw_arguments="{}")]),
        ChatResponseUpdate([TextContent(" after")]),
    ]
    response = ChatResponse.from_updates(updates)
    kinds = [(type(c).__name__, getattr(c, "text", None)) for c in response.messages[0].contents]
    assert kinds == [
        ("TextReasoningContent", "think more"),
        ("TextContent", "Hello"),
        ("FunctionCallContent", None),
        ("TextContent", " after"),
    ]
    assert response.reasoning == "think more"
    assert response.messages[0].contents[0].protected_data == "sig"
