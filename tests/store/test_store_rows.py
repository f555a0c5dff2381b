"""The record the engine logs of each call, read back from the log; messages and options as stored; ids."""

from __future__ import annotations

import sqlite3
import time

import pytest
import ulid
from pydantic import BaseModel

import chainform as cf
from chainform.chain._calls import ChainLogger
from chainform.store import Store, new_id
from chainform.store._serialize import _MESSAGES, dumps, message_to_dict, messages_to_json
from chainform.testing import ScriptedClient, tool_call
from chainform.types import (
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    TextContent,
    TextReasoningContent,
)

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


class Answer(BaseModel):
    city: str
    temp_c: float


def get_weather(city: str) -> dict:
    "Weather for a city."
    return {"city": city, "temp_c": 21.5, "note": "ciel dégagé ☀"}


def test_a_chains_records_say_what_its_calls_were() -> None:
    profile = cf.ModelProfile(name="both", supports_json_schema=True, supports_tools_with_schema=True)
    script = [
        tool_call("get_weather", city="Paris"),
        '{"city": "Paris"',  # broken JSON: a retry call with feedback
        '{"city": "Paris", "temp_c": 21.5}',
    ]
    model = cf.Model(ScriptedClient(script, profile))
    started = time.time()
    chain = model.chain(
        "Weather in Paris? Réponds vite.", system="Be brief.", tools=[get_weather], schema=Answer
    )
    assert chain.value == Answer(city="Paris", temp_c=21.5)
    ended = time.time()
    store = Store()
    with sqlite3.connect(store.path) as db:  # a plain reader sees every call and tool result
        assert db.execute("SELECT count(*) FROM responses").fetchone() == (3,)
        [(output,)] = db.execute("SELECT output FROM tool_results").fetchall()
    assert "dégagé" in output
    records = sorted(store.recent(None), key=lambda r: r.seq)
    # each record says what the engine's call was
    calls = chain.responses
    assert [r.id for r in records] == [c.response_id for c in calls]
    assert [r.purpose for r in records] == [c.purpose for c in calls] == ["chain", "chain", "retry"]
    logger = ChainLogger(
        store, conversation_id="c", chain_id="k", model="m", prompt=None, system=None,
        schema=records[0].schema, format_context_policy=None,
    )  # fmt: skip
    for record, call in zip(records, calls, strict=True):
        assert (record.conversation_id, record.chain_id) == (chain.conversation_id, records[0].chain_id)
        assert (record.model, record.prompt, record.system) == (
            model.name,
            "Weather in Paris? Réponds vite.",
            "Be brief.",
        )
        assert (record.strategy, record.text, record.error) == (call.strategy, call.text, call.error)
        assert (record.parsed, record.duration_ms, record.usage) == (
            call.parsed,
            call.duration_ms,
            call.usage,
        )
        assert messages_to_json(record.messages) == messages_to_json(call.messages)
        assert record.options == logger.options(call.options)
        assert "schema" not in record.options.get("response_format", {})
        assert [(t.call_id, t.name, t.arguments) for t in record.tool_calls] == [
            (c.call_id, c.name, c.arguments) for c in call.response.function_calls
        ]
        assert [(t.call_id, t.name, t.output, t.error) for t in record.tool_results] == [
            (r.call_id, r.name, r.result_text(), r.error) for r in call.tool_results
        ]
        assert started <= record.created_at <= ended
        assert record.format_context is None and record.agent_name is None
    assert records[0].strategy == "native" and records[-1].parsed == {"city": "Paris", "temp_c": 21.5}
    store.close()


def test_messages_are_stored_as_the_list_encoding() -> None:
    system = Message.system("Be brief.")
    user = Message.user([TextContent("look"), DataContent(b"\x00\xff", "image/png")])
    call = FunctionCallContent("c1", "lookup", {"q": "naïve"}, '{"q": "naïve"}')
    assistant = Message.assistant([TextReasoningContent("hmm", "sig"), call])
    tool = Message("tool", [FunctionResultContent("c1", {"a": [1, 2.5]}, name="lookup")])
    extras = Message("user", "hi", author_name="me", additional_properties={"api_key": "x", "n": 1})
    named = Message("developer", 'say "hi"\n', author_name="ana\u00efs", message_id="m-1")
    first, second = [system, user], [system, user, assistant, tool, extras, named]
    assert messages_to_json(first) == _MESSAGES.dump_json(first).decode()
    assert messages_to_json(second) == _MESSAGES.dump_json(second).decode()
    lone = Message.assistant("half a pair: \ud83d")  # UTF-8 cannot encode it: the json module's way
    assert messages_to_json([lone]) == f"[{dumps(message_to_dict(lone))}]"
    assert messages_to_json([]) == "[]"


def test_logged_options_name_the_chains_schema_by_id_and_drop_the_cache_key() -> None:
    schema = {"type": "object", "properties": {"api_key": {"type": "string"}}}
    other = {"type": "object", "properties": {"token": {"type": "string"}}}
    logger = ChainLogger(
        Store(), conversation_id="c", chain_id="ch", model="m", prompt=None, system=None, schema=schema,
        format_context_policy=None,
    )  # fmt: skip
    own = cf.types.ChatOptions(
        response_format=cf.types.ResponseFormat("json_schema", dict(schema), "A"),
        temperature=0.5,
        cache_key="01",
    )
    summary = logger.options(own)  # an equal schema (not the same object) is named by its id
    assert (
        summary["response_format"]["schema_id"] == logger.schema_id
        and "schema" not in summary["response_format"]
    )
    assert summary["temperature"] == 0.5 and "cache_key" not in summary
    inline = logger.options(
        cf.types.ChatOptions(response_format=cf.types.ResponseFormat("json_schema", other, "B"))
    )
    assert inline["response_format"]["schema"] == other and "schema_id" not in inline["response_format"]
    assert logger.options(cf.types.ChatOptions(tool_mode=cf.types.ToolMode("required", "f"), seed=3)) == {
        "tool_mode": {"mode": "required", "function_name": "f"},
        "seed": 3,
    }


def _ulid_parts(rid: str) -> tuple[int, int]:
    """(milliseconds, randomness) of a lower-case ULID, decoded by hand (Crockford's base32)."""
    value = 0
    for char in rid:
        value = value * 32 + "0123456789abcdefghjkmnpqrstvwxyz".index(char)
    return value >> 80, value & ((1 << 80) - 1)


def test_ids_are_ulids_of_the_time_they_were_made() -> None:
    before = time.time_ns() // 1_000_000
    rid = new_id()
    after = time.time_ns() // 1_000_000
    assert len(rid) == 26 and rid == rid.lower() and rid[0] in "01234567"
    assert before <= _ulid_parts(rid)[0] <= after


def test_ids_count_on_within_a_millisecond(monkeypatch) -> None:
    clock = iter([5_000_000_000_000, 5_000_000_000_000, 5_000_000_000_000, 6_000_000_000_000])
    monkeypatch.setattr(ulid, "default_generator", ulid.ULIDGenerator(clock=lambda: next(clock)))
    a, b, c, d = (new_id() for _ in range(4))
    assert a < b < c < d
    (ms_a, rand_a), (ms_b, rand_b), (ms_c, rand_c) = _ulid_parts(a), _ulid_parts(b), _ulid_parts(c)
    assert ms_a == ms_b == ms_c == 5_000_000_000_000 and rand_b == rand_a + 1 and rand_c == rand_b + 1
    assert _ulid_parts(d)[0] == 6_000_000_000_000
