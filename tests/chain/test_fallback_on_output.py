"""`fallback_on=["output"]`: a model that gives no valid value after its re-asks (or a cut answer,
or a failed formatting call) moves the chain to the next model. ScriptedClient only."""

from __future__ import annotations

import pytest

import chainform as cf
from chainform.chain._fallback import FallbackPlan
from chainform.testing import ScriptedClient, tool_call
from chainform.types import ChatResponse, FinishReason, Message

pytestmark = pytest.mark.unit

BOTH = cf.ModelProfile(name="both", supports_json_schema=True, supports_tools_with_schema=True)
TOOLS_ONLY = cf.ModelProfile(name="tools-only", supports_json_schema=True, supports_tools_with_schema=False)
SCHEMA = "city, temp_c int"
RAN: list[str] = []


def get_weather(city: str) -> dict:
    """Current weather for a city."""
    RAN.append(city)
    return {"city": city, "temp_c": 21}


def with_fallback(first: ScriptedClient, second: ScriptedClient, on=("output",)) -> cf.Model:
    backup = cf.Model(second, name="second")
    plan = FallbackPlan.build("first", [backup], on, lambda entry: None)
    return cf.Model(first, name="first", fallback=plan)


def test_an_invalid_value_after_the_reasks_falls_over_to_the_next_model():
    RAN.clear()
    first = ScriptedClient([tool_call("get_weather", city="Paris"), "not json", "still not", "nope"], BOTH)
    second = ScriptedClient([tool_call("final_result", city="Paris", temp_c=21)], TOOLS_ONLY)
    model = with_fallback(first, second)
    chain = model.chain("Weather in Paris?", tools=[get_weather], schema=SCHEMA)
    assert chain.value == {"city": "Paris", "temp_c": 21}
    assert [c.model for c in chain.responses] == ["first"] * 4 + ["second"]
    assert chain.strategy == "tool"  # chosen again for the second model's profile
    assert RAN == ["Paris"]  # the tool's work is kept, not done again
    sent = second.requests[0][0]  # the failed answers are not shown to the next model
    assert not any("not json" in m.text for m in sent) and "21" in str(sent[-1].contents)
    assert set(chain.usage.by_model) == {"first", "second"}


def test_a_truncated_answer_falls_over():
    cut = ChatResponse([Message.assistant('{"city": "Pa')], finish_reason=FinishReason.LENGTH)
    first = ScriptedClient([cut], BOTH)
    second = ScriptedClient(['{"city": "Paris", "temp_c": 21}'], BOTH)
    chain = with_fallback(first, second).prompt("Weather?", schema=SCHEMA)
    assert chain.value == {"city": "Paris", "temp_c": 21} and len(first.requests) == 1


def test_a_failed_formatting_call_falls_over():
    first = ScriptedClient(["Paris: 21 C.", "bad", "bad", "bad"], BOTH)
    second = ScriptedClient(['{"city": "Paris", "temp_c": 21}'], BOTH)
    chain = with_fallback(first, second).chain(
        "Weather?", tools=[get_weather], schema=SCHEMA, strategy="deferred"
    )
    assert chain.value == {"city": "Paris", "temp_c": 21}
    assert chain.responses[-1].model == "second" and chain.responses[-1].purpose == "format"


def test_without_output_in_fallback_on_bad_output_stays_with_the_model():
    first = ScriptedClient(["bad", "bad", "bad"], BOTH)
    second = ScriptedClient([], BOTH)
    with pytest.raises(cf.StructuredOutputError):
        with_fallback(first, second, on=("server",)).prompt("Weather?", schema=SCHEMA).value
    assert second.requests == []


def test_when_every_model_fails_the_last_models_error_is_raised():
    first = ScriptedClient(["bad"] * 3, BOTH)
    second = ScriptedClient(["worse"] * 3, BOTH)
    with pytest.raises(cf.StructuredOutputError) as info:
        with_fallback(first, second).prompt("Weather?", schema=SCHEMA).value
    assert "worse" in info.value.last_text and len(second.requests) == 3


def test_output_without_a_fallback_model_is_refused_before_any_call():
    with pytest.raises(ValueError, match="needs a model to fall back to"):
        cf.get_model("local", fallback_on=["output"])
    with pytest.raises(ValueError, match="unknown error kind"):
        FallbackPlan.build("x", [cf.Model(ScriptedClient([]), name="y")], ["outputs"], lambda e: None)


def test_the_next_model_spends_within_the_same_max_cost():
    def models():
        first = ScriptedClient(["not json", "still not", "nope"], BOTH)
        second = ScriptedClient(['{"city": "Paris", "temp_c": 21}'], BOTH)
        backup = cf.Model(second, name="openai/gpt-4.1")
        plan = FallbackPlan.build("openai/gpt-4.1-mini", [backup], ["output"], lambda entry: None)
        return cf.Model(first, name="openai/gpt-4.1-mini", fallback=plan)

    chain = models().prompt("Weather?", schema=SCHEMA, max_cost=1)
    assert chain.value == {"city": "Paris", "temp_c": 21}
    costs = [c.usage.cost for c in chain.responses]
    assert None not in costs and chain.usage.cost == sum(costs)
    first_three = sum(costs[:3])
    # a cap the first model's calls already reach: the second model is never called
    with pytest.raises(cf.BudgetExceededError) as info:
        models().prompt("Weather?", schema=SCHEMA, max_cost=first_three).value
    assert [c.model for c in info.value.responses] == ["openai/gpt-4.1-mini"] * 3
