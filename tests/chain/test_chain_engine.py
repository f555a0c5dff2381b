"""The chain engine, driven by ScriptedClient: every strategy, failure mode and hook."""

from __future__ import annotations

import json
import threading

import pytest
from pydantic import BaseModel, field_validator

import chainform as cf
from chainform.errors import ScriptExhaustedError
from chainform.testing import ScriptedClient, tool_call

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

BOTH = cf.ModelProfile(name="both", supports_json_schema=True, supports_tools_with_schema=True)
TOOLS_ONLY = cf.ModelProfile(name="tools-only", supports_json_schema=True, supports_tools_with_schema=False)
NOTHING = cf.ModelProfile(name="plain", supports_tools=False, supports_json_schema=False)
NO_TOOLS_BUT_SCHEMA = cf.ModelProfile(name="schema-only", supports_tools=False, supports_json_schema=True)


class Answer(BaseModel):
    city: str
    temp_c: float


WEATHER = {"Paris": 21.5, "Rome": 27.0}


def get_weather(city: str) -> dict:
    """Current weather for a city."""
    if city not in WEATHER:
        raise ValueError(f"no station in {city}")
    return {"city": city, "temp_c": WEATHER[city]}


def model_for(script, profile=BOTH) -> cf.Model:
    return cf.Model(ScriptedClient(script, profile))


def test_plain_chain_runs_tools_and_returns_text():
    m = model_for([tool_call("get_weather", city="Paris"), "It is 21.5 C in Paris."])
    chain = m.chain("Weather in Paris?", tools=[get_weather])
    assert chain.text() == "It is 21.5 C in Paris."
    assert [c.purpose for c in chain.responses] == ["chain", "chain"]
    client = m.client
    tool_msg = client.requests[1][0][-1]
    assert tool_msg.role == "tool"
    assert tool_msg.function_results[0].result == {"city": "Paris", "temp_c": 21.5}
    assert chain.usage.input_tokens == sum(c.usage.input_tokens for c in chain.responses)
    assert set(chain.usage.by_purpose) == {"chain"}


def test_native_strategy_sends_schema_with_tools_and_validates():
    reply = json.dumps({"city": "Rome", "temp_c": 27.0})
    m = model_for([[tool_call("get_weather", city="Paris"), tool_call("get_weather", city="Rome")], reply])
    chain = m.chain("Warmer of Paris/Rome?", tools=[get_weather], schema=Answer)
    assert chain.value == Answer(city="Rome", temp_c=27.0)
    assert chain.strategy.name == "native"
    for _, options in m.client.requests:
        assert options.response_format is not None and options.response_format.kind == "json_schema"
        assert [t.name for t in options.tools] == ["get_weather"]
    assert json.loads(chain.text()) == {"city": "Rome", "temp_c": 27.0}


def test_tool_strategy_when_model_cannot_combine():
    m = model_for(
        [tool_call("get_weather", city="Rome"), tool_call("final_result", city="Rome", temp_c=27)],
        TOOLS_ONLY,
    )
    chain = m.chain("Rome?", tools=[get_weather], schema=Answer)
    assert chain.strategy.name == "tool"
    assert "not tools together" in chain.strategy.reason
    assert chain.value == Answer(city="Rome", temp_c=27.0)
    names = [t.name for t in m.client.requests[0][1].tools]
    assert names == ["get_weather", "final_result"]
    assert m.client.requests[0][1].response_format is None


def test_tool_strategy_feeds_validation_error_back_as_tool_result():
    m = model_for(
        [tool_call("final_result", city="Rome"), tool_call("final_result", city="Rome", temp_c=27)],
        TOOLS_ONLY,
    )
    chain = m.chain("Rome?", tools=[get_weather], schema=Answer)
    assert chain.value.temp_c == 27
    assert [c.purpose for c in chain.responses] == ["chain", "retry"]
    feedback = m.client.requests[1][0][-1]
    assert feedback.role == "tool"
    assert "temp_c" in feedback.function_results[0].error


def test_several_output_tool_calls_in_one_turn_are_an_error_fed_back():
    m = model_for(
        [
            [tool_call("final_result", city="A", temp_c=1), tool_call("final_result", city="B", temp_c=2)],
            tool_call("final_result", city="B", temp_c=2),
        ],
        TOOLS_ONLY,
    )
    chain = m.chain("x", tools=[get_weather], schema=Answer)
    assert chain.value.city == "B"
    errors = [r.error for r in m.client.requests[1][0][-1].function_results]
    assert len(errors) == 2 and all("exactly once" in e for e in errors)


def test_tool_strategy_forces_output_tool_on_last_allowed_turn():
    m = model_for(
        [tool_call("get_weather", city="Paris"), tool_call("final_result", city="Paris", temp_c=21.5)],
        TOOLS_ONLY,
    )
    chain = m.chain("x", tools=[get_weather], schema=Answer, chain_limit=2)
    assert chain.value.city == "Paris"
    last_options = m.client.requests[1][1]
    assert last_options.tool_mode == cf.ToolMode.required("final_result")
    assert [t.name for t in last_options.tools] == ["final_result"]


def test_prompted_strategy_extracts_fenced_json():
    m = model_for(['Sure!\n```json\n{"city": "Oslo", "temp_c": -3}\n```'], NOTHING)
    chain = m.prompt("Invent a city", schema=Answer)
    assert chain.strategy.name == "prompted"
    assert chain.value == Answer(city="Oslo", temp_c=-3)
    system = m.client.requests[0][0][0]
    assert system.role == "system" and "JSON Schema" in system.text


def test_prompted_retry_on_bad_json_then_success():
    m = model_for(["not json at all", '{"city": "Oslo", "temp_c": 1}'], NOTHING)
    chain = m.prompt("x", schema=Answer)
    assert chain.value.city == "Oslo"
    retry_prompt = m.client.requests[1][0][-1]
    assert retry_prompt.role == "user" and "no valid JSON" in retry_prompt.text


def test_pydantic_validator_errors_are_fed_back():
    class Positive(BaseModel):
        n: int

        @field_validator("n")
        @classmethod
        def positive(cls, v: int) -> int:
            if v <= 0:
                raise ValueError("n must be positive")
            return v

    m = model_for(['{"n": -1}', '{"n": 3}'])
    chain = m.prompt("x", schema=Positive)
    assert chain.value.n == 3
    assert "n must be positive" in m.client.requests[1][0][-1].text


def test_retries_exhausted_raise_structured_output_error_with_attempts():
    m = model_for(['{"city": 1}', "nope", '{"temp_c": "hot"}'])
    chain = m.prompt("x", schema=Answer, log=False)
    with pytest.raises(cf.StructuredOutputError) as info:
        chain.value
    err = info.value
    assert len(err.attempts) == 3
    assert err.last_text == '{"temp_c": "hot"}'
    assert len(err.responses) == 3
    assert [c.purpose for c in chain.responses] == ["chain", "retry", "retry"]


def test_deferred_runs_chain_then_one_formatting_call():
    m = model_for(
        [
            tool_call("get_weather", city="Paris"),
            tool_call("get_weather", city="Rome"),
            "Rome is warmer at 27 degrees.",
            '{"city": "Rome", "temp_c": 27}',
        ]
    )
    chain = m.chain("Warmer?", tools=[get_weather], schema=Answer, strategy="deferred")
    assert chain.value == Answer(city="Rome", temp_c=27)
    assert [c.purpose for c in chain.responses] == ["chain", "chain", "chain", "format"]
    for _, options in m.client.requests[:3]:
        assert options.response_format is None
    fmt_messages, fmt_options = m.client.requests[3]
    assert fmt_options.tools is None
    assert fmt_options.response_format.kind == "json_schema"
    ctx = chain.format_context
    assert ctx.index("PREFERRED SOURCE") < ctx.index("Rome is warmer") < ctx.index("[tool result")
    assert '"temp_c": 27.0' in ctx
    assert ctx in fmt_messages[-1].text
    assert chain.usage.by_purpose["format"].output_tokens >= 1


def test_deferred_cut_by_limit_still_formats_and_says_so():
    m = model_for([tool_call("get_weather", city="Paris"), '{"city": "Paris", "temp_c": 21.5}'])
    chain = m.chain("x", tools=[get_weather], schema=Answer, strategy="deferred", chain_limit=1)
    assert chain.value.city == "Paris"
    assert chain.cut_off
    assert "cut off by the chain limit (1 model calls)" in chain.format_context
    assert "21.5" in chain.format_context  # the last turn's tool ran


def test_deferred_uses_output_tool_when_model_has_no_native_schema():
    profile = cf.ModelProfile(name="t", supports_json_schema=False)
    m = model_for(["Paris, 21.5", tool_call("final_result", city="Paris", temp_c=21.5)], profile)
    chain = m.chain("x", tools=[get_weather], schema=Answer, strategy="deferred")
    assert chain.value.temp_c == 21.5
    options = m.client.requests[1][1]
    assert [t.name for t in options.tools] == ["final_result"]
    assert options.tool_mode == cf.ToolMode.required("final_result")


def test_format_prompt_override_and_context_policies():
    script = [tool_call("get_weather", city="Paris"), "ok", '{"city": "Paris", "temp_c": 21.5}']
    m = model_for(list(script))
    template = "CONTEXT>>{context}<<SCHEMA>>{schema}"
    chain = m.chain("x", tools=[get_weather], schema=Answer, strategy="deferred", format_prompt=template)
    assert chain.value.city == "Paris"
    sent = m.client.requests[-1][0][-1].text
    assert sent.startswith("CONTEXT>>## Final answer") and '<<SCHEMA>>{\n  "properties"' in sent

    big = "x" * 50_000

    def dump() -> str:
        """Returns a lot of text."""
        return big

    for policy, expect_full in [("full", True), ("compact", False)]:
        m = model_for([tool_call("dump"), "done", '{"city": "P", "temp_c": 1}'])
        chain = m.chain("x", tools=[dump], schema=Answer, strategy="deferred", format_context=policy)
        assert (big in chain.format_context) is expect_full
        if not expect_full:
            assert "characters trimmed" in chain.format_context

    m = model_for(
        [
            tool_call("get_weather", city="Paris"),
            tool_call("get_weather", city="Rome"),
            "Rome: 27",
            '{"city": "Rome", "temp_c": 27}',
        ]
    )
    chain = m.chain("x", tools=[get_weather], schema=Answer, strategy="deferred", format_context="last")
    assert "27.0" in chain.format_context
    assert "21.5" not in chain.format_context


def test_formatting_failure_is_distinct_and_carries_context():
    m = model_for(["The answer is Rome.", "still not json", "nope"])
    chain = m.chain("x", tools=[get_weather], schema=Answer, strategy="deferred", validation_retries=1)
    with pytest.raises(cf.FormattingError) as info:
        chain.value
    assert "The answer is Rome." in info.value.context
    assert len(info.value.attempts) == 2
    assert [c.purpose for c in chain.responses] == ["chain", "format", "retry"]


def test_formatting_provider_failure_is_a_formatting_error():
    m = model_for(["Rome.", cf.ProviderError("boom", status=500, provider="x")])
    chain = m.chain("x", tools=[get_weather], schema=Answer, strategy="deferred")
    with pytest.raises(cf.FormattingError) as info:
        chain.text()
    assert isinstance(info.value.__cause__, cf.ProviderError)


def test_unknown_tool_and_tool_exception_go_back_to_the_model():
    m = model_for([[tool_call("nope"), tool_call("get_weather", city="Atlantis")], "Sorry."])
    chain = m.chain("x", tools=[get_weather])
    assert chain.text() == "Sorry."
    results = m.client.requests[1][0][-1].function_results
    assert "Unknown tool 'nope'" in results[0].error and "get_weather" in results[0].error
    assert "no station in Atlantis" in results[1].error


def test_bad_tool_arguments_are_reported_per_field():
    m = model_for([tool_call("get_weather", town="Paris"), "ok"])
    m.chain("x", tools=[get_weather]).text()
    error = m.client.requests[1][0][-1].function_results[0].error
    assert "city" in error


def test_parallel_calls_run_concurrently_in_sync_api():
    barrier = threading.Barrier(2, timeout=5)

    def meet(name: str) -> str:
        """Waits for the other call."""
        barrier.wait()  # only passes if both calls run at the same time
        return name

    m = model_for([[tool_call("meet", name="a"), tool_call("meet", name="b")], "both met"])
    assert m.chain("x", tools=[meet]).text() == "both met"
    results = m.client.requests[1][0][-1].function_results
    assert [r.result for r in results] == ["a", "b"]


def test_before_call_can_cancel_or_edit_and_after_call_observes():
    seen = []

    def before(tool, call):
        if call.arguments.get("city") == "Rome":
            return False
        return {"city": "Paris"}

    def after(tool, call, result):
        seen.append((call.arguments, result.result, result.error))

    m = model_for([[tool_call("get_weather", city="Rome"), tool_call("get_weather", city="Berlin")], "done"])
    m.chain("x", tools=[get_weather], before_call=before, after_call=after).text()
    results = m.client.requests[1][0][-1].function_results
    assert results[0].error.startswith("Cancelled")
    assert results[1].result["city"] == "Paris"
    assert ({"city": "Paris"}, {"city": "Paris", "temp_c": 21.5}, None) in seen


def test_plain_chain_over_limit_raises_chain_error_keeping_responses():
    m = model_for([tool_call("get_weather", city="Paris")] * 3)
    chain = m.chain("x", tools=[get_weather], chain_limit=2)
    with pytest.raises(cf.ChainError) as info:
        chain.text()
    assert len(info.value.responses) == 2
    assert m.client.requests[1][1].tool_mode == cf.ToolMode.NONE


def test_auto_falls_back_to_deferred_when_provider_rejects_combination():
    rejection = cf.ProviderError(
        "'response_format' json_schema cannot be combined with tools for this model",
        status=400,
        provider="x",
        kind="tools_with_schema_rejected",  # set by the adapter that saw the error
    )
    profile = cf.ModelProfile(
        name="fallback-model", supports_json_schema=True, supports_tools_with_schema=True
    )
    script = [rejection, "Paris is 21.5", '{"city": "Paris", "temp_c": 21.5}']
    m = model_for([*script, "Rome", '{"city": "Rome", "temp_c": 1}'], profile)
    chain = m.chain("x", tools=[get_weather], schema=Answer)
    assert chain.value.city == "Paris"
    assert chain.strategy.name == "deferred"
    assert "fell back" in chain.strategy.reason
    assert chain.strategy.fallback and "cannot be combined" in chain.strategy.fallback
    # remembered by this model object: its next chain goes straight to deferred
    assert "tools_with_schema" in m.refusals
    again = m.chain("y", tools=[get_weather], schema=Answer)
    assert again.strategy == "deferred" and again.value.city == "Rome"
    assert len(m.client.requests) == 5  # no second rejected request


def test_fallback_memory_belongs_to_one_model_object():
    rejection = cf.ProviderError("no tools with a schema", status=400, kind="tools_with_schema_rejected")
    profile = cf.ModelProfile(name="same-name", supports_json_schema=True, supports_tools_with_schema=True)
    first = model_for([rejection, "Paris", '{"city": "Paris", "temp_c": 1}'], profile)
    assert first.chain("x", tools=[get_weather], schema=Answer).strategy == "deferred"
    other = model_for(['{"city": "Rome", "temp_c": 2}'], profile)  # same name, another object
    assert other.name == first.name and dict(other.refusals) == {}
    assert other.chain("y", tools=[get_weather], schema=Answer).strategy == "native"
    first.refusals.clear()
    first.client.script.append('{"city": "Oslo", "temp_c": 3}')
    assert first.chain("z", tools=[get_weather], schema=Answer).strategy == "native"


def test_explicit_strategy_does_not_fall_back():
    rejection = cf.ProviderError(
        "response_format with tools unsupported", status=400, kind="tools_with_schema_rejected"
    )
    m = model_for([rejection], cf.ModelProfile(name="explicit", supports_json_schema=True))
    with pytest.raises(cf.ProviderError):
        m.chain("x", tools=[get_weather], schema=Answer, strategy="native").text()


def test_middleware_can_accept_invalid_output_or_reject_valid_output():
    async def accept(ctx, call_next):
        try:
            return await call_next(ctx)
        except cf.StructuredOutputGenerationError as exc:
            assert exc.value == {"city": "X"}
            return ctx.response

    client = ScriptedClient(['{"city": "X"}'], BOTH, middleware=[accept])
    chain = cf.Model(client).prompt("x", schema={"type": "object", "required": ["city", "t"]})
    assert chain.value == {"city": "X"}

    async def reject_first(ctx, call_next):
        response = await call_next(ctx)
        if ctx.validator is not None and not ctx.metadata.get("seen") and "first" in response.text:
            raise cf.StructuredOutputGenerationError("policy: not the first one", raw_text=response.text)
        return response

    client = ScriptedClient(['{"v": "first"}', '{"v": "second"}'], BOTH, middleware=[reject_first])
    chain = cf.Model(client).prompt("x", schema={"type": "object"})
    assert chain.value == {"v": "second"}
    assert "policy: not the first one" in client.requests[1][0][-1].text


def test_streaming_text_chunks_and_partial_objects():
    reply = json.dumps({"city": "Rome", "temp_c": 27.0})
    m = cf.Model(ScriptedClient([reply], BOTH, chunk_size=3))
    chain = m.prompt("x", schema=Answer)
    chunks = list(chain)
    assert len(chunks) > 5 and "".join(chunks) == reply
    partials = list(chain.partial())
    assert partials[-1] == {"city": "Rome", "temp_c": 27.0}
    assert {"city": "Ro"} in partials  # objects grow while the JSON streams


def test_partial_objects_from_output_tool_arguments():
    m = cf.Model(
        ScriptedClient([tool_call("final_result", city="Rome", temp_c=27)], TOOLS_ONLY, chunk_size=2)
    )
    chain = m.chain("x", tools=[get_weather], schema=Answer)
    partials = list(chain.partial())
    assert partials[-1] == {"city": "Rome", "temp_c": 27}
    assert {"city": "Ro"} in partials


def test_non_object_schema_is_wrapped_for_the_output_tool():
    m = model_for([tool_call("final_result", result=[1, 2, 3])], TOOLS_ONLY)
    chain = m.chain("x", tools=[get_weather], schema={"type": "array", "items": {"type": "integer"}})
    assert chain.value == [1, 2, 3]


def test_no_stream_mode_still_emits_text_once():
    m = model_for(["hello world"])
    chain = m.chain("x", stream=False)
    assert list(chain) == ["hello world"]


def test_conversation_keeps_history_and_id():
    m = model_for(["Hi Ann.", "Your name is Ann."])
    conv = m.conversation()
    conv.chain("My name is Ann").text()
    second = conv.chain("What is my name?")
    assert second.text() == "Your name is Ann."
    sent = [msg.text for msg in m.client.requests[1][0]]
    assert sent == ["My name is Ann", "Hi Ann.", "What is my name?"]
    assert second.conversation_id == conv.id == conv.responses[0].conversation_id


async def test_async_model_chain_stream_and_value():
    client = ScriptedClient([tool_call("get_weather", city="Rome"), '{"city": "Rome", "temp_c": 27}'], BOTH)
    model = cf.AsyncModel(client)
    chain = model.chain("x", tools=[get_weather], schema=Answer)
    chunks = [c async for c in chain]
    assert "".join(chunks) == '{"city": "Rome", "temp_c": 27}'
    assert await chain.get_value() == Answer(city="Rome", temp_c=27)
    assert len(chain.responses) == 2


async def test_async_parallel_async_tools_and_conversation():
    import asyncio

    both = asyncio.Barrier(2) if hasattr(asyncio, "Barrier") else None

    async def ping(n: int) -> int:
        """Async tool."""
        if both is not None:
            await asyncio.wait_for(both.wait(), 5)
        return n * 2

    client = ScriptedClient([[tool_call("ping", n=1), tool_call("ping", n=2)], "done", "again"], BOTH)
    conv = cf.AsyncModel(client).conversation()
    first = await conv.chain("x", tools=[ping])
    assert await first.text() == "done"
    assert [r.result for r in client.requests[1][0][-1].function_results] == [2, 4]
    await conv.chain("y")
    assert len(client.requests[2][0]) == 5  # user, assistant calls, tool results, assistant, user


async def test_async_partial_and_errors():
    model = cf.AsyncModel(ScriptedClient(["no json", "still none"], BOTH))
    chain = (
        model.prompt("x", schema=Answer, validation_retries=0)
        if False
        else model.chain("x", schema=Answer, validation_retries=1)
    )
    with pytest.raises(cf.StructuredOutputError):
        await chain.get_value()
    model = cf.AsyncModel(ScriptedClient(['{"city": "A", "temp_c": 1}'], BOTH, chunk_size=2))
    chain = model.prompt("x", schema=Answer)
    partials = [p async for p in chain.apartial()]
    assert partials[-1] == {"city": "A", "temp_c": 1}


def test_every_call_is_logged_including_format_and_failures(tmp_path):
    from chainform.store import Store

    m = model_for([tool_call("get_weather", city="Paris"), "Paris 21.5", '{"city": "Paris", "temp_c": 21.5}'])
    chain = m.chain("Weather?", tools=[get_weather], schema=Answer, strategy="deferred")
    chain.value
    rows = Store().recent(10)
    assert sorted(r.purpose for r in rows) == ["chain", "chain", "format"]
    fmt = next(r for r in rows if r.purpose == "format")
    assert fmt.format_context == chain.format_context
    first = next(r for r in rows if r.tool_calls)
    assert first.tool_results[0].name == "get_weather" and "21.5" in first.tool_results[0].output
    assert {r.conversation_id for r in rows} == {chain.conversation_id}

    failing = model_for(["bad", "bad"])
    with pytest.raises(cf.StructuredOutputError):
        failing.prompt("x", schema=Answer, validation_retries=1).value
    assert len(Store().recent(20)) == 5


def test_log_false_writes_nothing():
    from chainform.store import Store

    model_for(["hi"]).chain("x", log=False).text()
    assert Store().recent(5) == []


def test_bad_inputs_give_clear_errors():
    m = model_for([])
    with pytest.raises(ValueError, match="unknown strategy"):
        m.chain("x", strategy="magic")
    with pytest.raises(ValueError, match="unknown format context"):
        m.chain("x", format_context="everything")
    with pytest.raises(cf.SchemaError):
        m.chain("x", schema="{not json")
    with pytest.raises(cf.ToolDefinitionError):
        m.chain("x", tools=[42])
    with pytest.raises(ScriptExhaustedError, match="ran out of script"):
        m.chain("x").text()


def test_chunks_without_intermediate_text_keep_only_the_answer():
    script = [["Let me check.", tool_call("get_weather", city="Rome")], "Rome: 27 C."]
    chain = model_for(list(script)).chain("x", tools=[get_weather])
    assert "".join(chain.chunks(intermediate=False)) == "Rome: 27 C."
    assert "".join(chain) == "Let me check.Rome: 27 C."

    deferred = [tool_call("get_weather", city="Rome"), "Rome is warm.", '{"city": "Rome", "temp_c": 27}']
    chain = model_for(deferred).chain("x", tools=[get_weather], schema=Answer, strategy="deferred")
    assert "".join(chain.chunks(intermediate=False)) == '{"city": "Rome", "temp_c": 27}'

    retried = ["not json", '{"city": "Rome", "temp_c": 27}']
    chain = model_for(retried).prompt("x", schema=Answer)
    assert "".join(chain.chunks(intermediate=False)) == '{"city": "Rome", "temp_c": 27}'


async def test_async_chunks_without_intermediate_text():
    client = ScriptedClient([["Checking.", tool_call("get_weather", city="Paris")], "Paris: 21.5"], BOTH)
    chain = cf.AsyncModel(client).chain("x", tools=[get_weather])
    assert "".join([c async for c in chain.achunks(intermediate=False)]) == "Paris: 21.5"


def test_tool_strategy_retry_after_text_forces_a_tool_call():
    m = model_for(["Rome, I think.", tool_call("final_result", city="Rome", temp_c=27)], TOOLS_ONLY)
    chain = m.chain("x", tools=[get_weather], schema=Answer)
    assert chain.value.city == "Rome"
    assert m.client.requests[0][1].tool_mode is None
    assert m.client.requests[1][1].tool_mode == cf.ToolMode.REQUIRED_ANY
    assert "call the final_result tool" in m.client.requests[1][0][-1].text


def test_an_empty_answer_with_tools_offered_is_asked_again_with_tools_off():
    """llama-cpp-python under "auto" ends a text reply before its first token: an empty answer is
    not the answer, the model is asked once more with tools off."""
    m = model_for([tool_call("get_weather", city="Paris"), "", "Paris: 21.5 C."])
    chain = m.chain("Weather in Paris?", tools=[get_weather], log=False)
    assert chain.text() == "Paris: 21.5 C."
    modes = [options.tool_mode for _, options in m.client.requests]
    assert modes[-1] == cf.ToolMode.NONE and cf.ToolMode.NONE not in modes[:-1]
    assert [c.purpose for c in chain.responses] == ["chain", "chain", "retry"]
    # without tools an empty answer is the answer: nothing would change on asking again
    assert model_for([""]).prompt("Say nothing.", log=False).text() == ""


@pytest.mark.parametrize("strategy", ["native", "tool", "prompted", "deferred"])
def test_a_chain_leaves_the_callers_request_and_options_as_they_were(strategy):
    """The engine copies what it changes (the cache key, the prompt's schema instructions, a
    strategy's options): the ChainSpec and ChatOptions handed to it are equal before and after,
    and so are the history's messages."""
    import asyncio
    import copy

    from chainform.chain._engine import Bound, ChainRun
    from chainform.chain._events import EventLog
    from chainform.chain._fallback import Candidate
    from chainform.chain._spec import ChainSpec
    from chainform.chain._state import RunState
    from chainform.chain._tools import normalize_tools
    from chainform.output import OutputSpec
    from chainform.output._select import Refusals

    options = cf.ChatOptions(temperature=0.5, seed=7)
    history = [cf.Message.system("Be brief."), cf.Message.user("Hi"), cf.Message.assistant("Hello")]
    tools = normalize_tools([get_weather])
    request = ChainSpec.build(
        "both",
        prompt=cf.Message.user("Weather in Paris?"),
        system="You answer with data.",
        history=history,
        tools=tools,
        output=OutputSpec.from_user(Answer),
        strategy=strategy,
        chain_limit=5,
        validation_retries=2,
        max_cost=None,
        format_context="compact",
        format_prompt=None,
        options=options,
        stream=True,
    )
    before, options_before, history_before = (
        copy.copy(request),
        copy.deepcopy(options),
        copy.deepcopy(history),
    )
    answer = json.dumps({"city": "Paris", "temp_c": 21.5})
    script = [
        tool_call("get_weather", city="Paris"),
        tool_call(cf.output.OUTPUT_TOOL_NAME, city="Paris", temp_c=21.5),
    ]
    if strategy != "tool":
        script = [tool_call("get_weather", city="Paris"), answer, answer]  # deferred: a formatting call
    client = ScriptedClient(script, BOTH)
    first = Candidate(client, BOTH, "both", Refusals())
    state = RunState.start(request, first, None, chain_id="k1", conversation_id="c1")
    run = ChainRun(request, state, bound=Bound(tools), events=EventLog())
    result = asyncio.run(run.run())
    assert result.value.temp_c == 21.5
    assert request == before and request.options is options
    assert options == options_before and options.cache_key is None
    assert list(request.history) == history_before
    assert all(a is b for a, b in zip(request.history, history, strict=True))
