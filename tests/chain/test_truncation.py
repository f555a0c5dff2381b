"""An answer cut off at the output token limit: never parsed, repaired or re-asked with the same
limit; TruncatedOutputError, or (opt-in) one retry with a larger limit. ScriptedClient only."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

import chainform as cf
from chainform.testing import ScriptedClient, tool_call
from chainform.types import ChatResponse, FinishReason, Message, UsageDetails

pytestmark = pytest.mark.unit

BOTH = cf.ModelProfile(name="both", supports_json_schema=True, supports_tools_with_schema=True)
TOOLS_ONLY = cf.ModelProfile(name="tools-only", supports_json_schema=True, supports_tools_with_schema=False)


class Dog(BaseModel):
    name: str
    age: int


def cut(*contents: object, tokens: int = 7) -> ChatResponse:
    """A reply that stopped at the token limit."""
    message = Message.assistant(contents[0]) if isinstance(contents[0], str) else None
    if message is None:
        message = Message("assistant", list(contents))  # type: ignore[arg-type]
    return ChatResponse(
        [message], finish_reason=FinishReason.LENGTH, usage_details=UsageDetails(3, tokens, 3 + tokens)
    )


def lookup(name: str) -> dict:
    """Look a dog up."""
    return {"name": name, "age": 3}


def test_a_cut_answer_raises_after_one_call_and_keeps_limit_text_and_usage():
    client = ScriptedClient([cut('{"name": "Rex", "a'), '{"name": "Rex", "age": 3}'], BOTH)
    chain = cf.Model(client).chain("Invent a dog", schema=Dog, options={"max_output_tokens": 10})
    with pytest.raises(cf.TruncatedOutputError) as info:
        chain.value
    err = info.value
    assert isinstance(err, cf.StructuredOutputError)
    assert len(client.requests) == 1  # never re-asked with the same limit
    assert err.max_tokens == 10 and err.text == '{"name": "Rex", "a' and err.usage.output_tokens == 7
    assert err.part == "answer"
    assert "max_tokens=10" in str(err) and "-o max_tokens" in str(err) and "--retry-max-tokens" in str(err)
    assert [c.finish_reason for c in err.responses] == ["length"]


def test_a_cut_value_that_happens_to_validate_is_not_returned():
    """A cut `{"name": "Rex", "age": 1` of 12 would be 'repaired'; a cut number can even be valid."""
    client = ScriptedClient([cut('{"name": "Rex", "age": 1}')], BOTH)
    with pytest.raises(cf.TruncatedOutputError):
        cf.Model(client).chain("Invent a dog", schema=Dog, options={"max_output_tokens": 8}).value


def test_the_opt_in_retries_once_with_the_larger_limit():
    client = ScriptedClient([cut('{"name": "Re'), '{"name": "Rex", "age": 3}'], BOTH)
    chain = cf.Model(client).chain(
        "Invent a dog", schema=Dog, options={"max_output_tokens": 10}, retry_max_tokens=100
    )
    assert chain.value == Dog(name="Rex", age=3)
    assert [o.max_output_tokens for _, o in client.requests] == [10, 100]
    assert [c.finish_reason for c in chain.responses] == ["length", "stop"]
    assert [c.purpose for c in chain.responses] == ["chain", "retry"]


def test_cut_again_at_the_larger_limit_raises_after_two_calls():
    client = ScriptedClient([cut('{"name": "Re'), cut('{"name": "Rex", "ag')], BOTH)
    chain = cf.Model(client).chain("Invent a dog", schema=Dog, retry_max_tokens=100)
    with pytest.raises(cf.TruncatedOutputError) as info:
        chain.value
    assert len(client.requests) == 2
    assert [o.max_output_tokens for _, o in client.requests] == [None, 100]
    assert info.value.max_tokens == 100 and "retry's larger limit" in str(info.value)


def test_tool_arguments_cut_mid_json_are_not_run():
    ran: list[str] = []

    def record(name: str) -> str:
        """Record a name."""
        ran.append(name)
        return name

    call = tool_call("record", _raw='{"name": "Re')
    client = ScriptedClient([cut(call)], BOTH)
    with pytest.raises(cf.TruncatedOutputError) as info:
        cf.Model(client).chain("go", tools=[record], schema=Dog).value
    assert ran == [] and info.value.part == "tool arguments" and info.value.text == '{"name": "Re'


def test_the_output_tool_cut_mid_json_is_the_answer_cut():
    client = ScriptedClient([cut(tool_call("final_result", _raw='{"name": "Re'))], TOOLS_ONLY)
    with pytest.raises(cf.TruncatedOutputError) as info:
        cf.Model(client).chain("go", tools=[lookup], schema=Dog).value
    assert info.value.part == "answer" and info.value.text == '{"name": "Re'
    assert len(client.requests) == 1


def test_a_cut_formatting_call_is_truncated_not_a_formatting_error():
    client = ScriptedClient(["Rex is 3.", cut('{"name": "R')], BOTH)
    with pytest.raises(cf.TruncatedOutputError) as info:
        cf.Model(client).chain("go", tools=[lookup], schema=Dog, strategy="deferred").value
    assert info.value.part == "formatting" and len(client.requests) == 2


def test_a_plain_text_answer_cut_short_is_still_the_answer():
    client = ScriptedClient([cut("Once upon a")])
    chain = cf.Model(client).chain("Tell a story")
    assert chain.text() == "Once upon a"
    assert chain.responses[0].finish_reason == "length"


@pytest.mark.parametrize(("grow", "limit"), [(10, 10), (5, 10), (0, None), (True, None)])
def test_a_retry_limit_not_above_the_first_is_refused_before_any_call(grow, limit):
    client = ScriptedClient([])
    options = {"max_output_tokens": limit} if limit else None
    with pytest.raises(ValueError, match="retry_max_tokens"):
        cf.Model(client).chain("x", schema=Dog, options=options, retry_max_tokens=grow)
    assert client.requests == []


def test_the_log_keeps_every_calls_finish_reason(home):
    client = ScriptedClient([cut('{"name": "Re'), '{"name": "Rex", "age": 3}'], BOTH)
    model = cf.Model(client)
    model.chain("Invent a dog", schema=Dog, retry_max_tokens=50).value
    from chainform.store import Store

    rows = Store().recent(5)
    assert sorted(r.finish_reason or "" for r in rows) == ["length", "stop"]


def test_map_records_the_row_phase_as_truncated(home, tmp_path):
    client = ScriptedClient([cut('{"name": "Re')], BOTH)
    results = list(cf.Model(client).map(["Invent a dog"], schema=Dog, log=False))
    assert results[0].error is not None and results[0].error.phase == "truncated"
