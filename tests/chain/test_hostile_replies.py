"""Hostile replies through every strategy: each ends in a validation retry or a typed error."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

import chainform as cf
from chainform.chain import _events
from chainform.schema import partial as partial_module
from chainform.testing import ScriptedClient, tool_call

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

NATIVE = cf.ModelProfile(name="both", supports_json_schema=True, supports_tools_with_schema=True)
TOOL = cf.ModelProfile(name="tools-only", supports_json_schema=True, supports_tools_with_schema=False)
PROMPTED = cf.ModelProfile(name="plain", supports_tools=False, supports_json_schema=False)
DEEP = "[" * 1000 + "]" * 1000
GOOD = {"city": "Rome", "temp_c": 27.0}


class Answer(BaseModel):
    city: str
    temp_c: float


ran: list[dict] = []


def get_weather(city: str) -> dict:
    """Current weather for a city."""
    ran.append({"city": city})
    return {"city": city, "temp_c": 20.0}


@pytest.mark.parametrize("profile", [NATIVE, PROMPTED], ids=["native", "prompted"])
def test_deeply_nested_text_answer_is_fed_back_and_retried(profile):
    client = ScriptedClient([DEEP, json.dumps(GOOD)], profile)
    chain = cf.Model(client).prompt("x", schema=Answer)
    assert chain.value == Answer(**GOOD)
    assert "nested more than" in client.requests[1][0][-1].text
    assert [c.purpose for c in chain.responses] == ["chain", "retry"]


def test_deeply_nested_output_tool_arguments_are_fed_back():
    client = ScriptedClient([tool_call("final_result", _raw=DEEP), tool_call("final_result", **GOOD)], TOOL)
    chain = cf.Model(client).chain("x", tools=[get_weather], schema=Answer)
    assert chain.value == Answer(**GOOD)
    feedback = client.requests[1][0][-1]
    assert feedback.role == "tool" and "nested more than" in feedback.function_results[0].error


def test_deeply_nested_tool_arguments_never_run_the_tool():
    ran.clear()
    bad = '{"city": ' + DEEP + "}"
    client = ScriptedClient([tool_call("get_weather", _raw=bad), json.dumps(GOOD)], NATIVE)
    chain = cf.Model(client).chain("x", tools=[get_weather], schema=Answer)
    assert chain.value == Answer(**GOOD)
    assert ran == []
    assert "nested more than" in client.requests[1][0][-1].function_results[0].error


def test_deferred_formatting_call_with_deep_reply_is_retried():
    client = ScriptedClient(["Rome, 27 degrees.", DEEP, json.dumps(GOOD)], NATIVE)
    chain = cf.Model(client).chain("x", tools=[get_weather], schema=Answer, strategy="deferred")
    assert chain.value == Answer(**GOOD)
    assert [c.purpose for c in chain.responses] == ["chain", "format", "retry"]


def test_deep_replies_until_retries_run_out_end_in_structured_output_error():
    client = ScriptedClient([DEEP, DEEP], NATIVE)
    chain = cf.Model(client).prompt("x", schema=Answer, validation_retries=1)
    with pytest.raises(cf.StructuredOutputError) as info:
        chain.value
    assert len(info.value.responses) == 2


def count_partial_parses(monkeypatch) -> list[int]:
    """Counts partial parses wherever the engine may do them (today's tap or the reader side)."""
    calls: list[int] = []
    real = partial_module.parse_partial

    def counting(text: str):
        calls.append(len(text))
        return real(text)

    monkeypatch.setattr(partial_module, "parse_partial", counting)
    monkeypatch.setattr(_events, "parse_partial", counting, raising=False)
    return calls


def big_answer(n: int) -> tuple[dict, str]:
    value = {"city": "Rome", "temp_c": 27.0, "notes": [f"note {i}" for i in range(n)]}
    return value, json.dumps(value)


def test_value_alone_parses_no_partial_objects(monkeypatch):
    calls = count_partial_parses(monkeypatch)
    value, reply = big_answer(200)
    chain = cf.Model(ScriptedClient([reply], NATIVE, chunk_size=8)).prompt("x", schema=dict)
    assert chain.value == value
    assert calls == []


def test_partial_objects_of_a_large_answer_are_parsed_incrementally(monkeypatch):
    calls = count_partial_parses(monkeypatch)
    value, reply = big_answer(5000)
    chain = cf.Model(ScriptedClient([reply], NATIVE, chunk_size=8)).prompt("x", schema=dict)
    partials = list(chain.partial())
    assert partials[-1] == value
    assert len(partials) > 10
    assert len(calls) < len(reply) // 8 // 10  # far fewer parses than deltas
