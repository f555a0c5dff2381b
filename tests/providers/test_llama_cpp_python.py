"""Chains against a scripted server that behaves like llama-cpp-python's OpenAI-compatible server.

It answers `response_format: json_schema` with HTTP 500 ("Input should be 'text' or 'json_object'"),
ignores tools sent without `tool_choice`, and fails on `tool_choice: "required"` and on streamed
tool calls under "auto". Chains with tools and a schema must still end in a valid value through
`llamacpp/` (its compatible profile), `openai/` as it comes (a foreign base URL: the generic
compatible profile) and `openai/` told it is OpenAI (`profile="openai"`, as behind a proxy: what
the server refuses is learned at run time).
"""

from __future__ import annotations

import openai
import pytest

import chainform as cf
from chainform.testing import tool_call
from chainform.testing.emulator import LLAMA_CPP_PYTHON, Emulator, Fault, Quirks, RecordedRequest

SCHEMA = "city, temp_c float"
TEMPS = {"Paris": 18.0, "Rome": 24.5}


def get_weather(city: str) -> dict[str, float]:
    "Current weather for a city."
    return {"temp_c": TEMPS[city]}


pytestmark = pytest.mark.usefixtures("openai_isolated")


def test_the_scripted_server_behaves_like_llama_cpp_python() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    with Emulator([tool_call("f")] * 3, quirks=LLAMA_CPP_PYTHON) as emu:
        client = openai.OpenAI(base_url=emu.base_url + "/v1", api_key="x", max_retries=0)
        ask = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools}
        ignored = client.chat.completions.create(**ask)
        assert ignored.choices[0].message.tool_calls is None  # no tool_choice: tools ignored
        schema = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}
        with pytest.raises(openai.InternalServerError, match="Input should be 'text' or 'json_object'"):
            client.chat.completions.create(model="m", messages=ask["messages"], response_format=schema)
        with pytest.raises(openai.InternalServerError) as refused:  # its assert: a 500, no message
            client.chat.completions.create(**ask, tool_choice="required")
        assert refused.value.body["message"] == ""
        named = {"type": "function", "function": {"name": "f"}}
        forced = client.chat.completions.create(**ask, tool_choice=named)
        assert forced.choices[0].message.tool_calls[0].function.name == "f"  # a named choice is honoured
        assert list(client.chat.completions.create(**ask, tool_choice="auto", stream=True)) == []
        called_turn = {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        }
        tool_turn = {"role": "tool", "tool_call_id": "c1", "content": "1"}
        with pytest.raises(openai.InternalServerError, match="valid string"):
            client.chat.completions.create(model="m", messages=[ask["messages"][0], called_turn, tool_turn])
        called = client.chat.completions.create(**ask, tool_choice="auto")
        assert called.choices[0].message.tool_calls[0].function.name == "f"


def test_openai_model_falls_back_to_deferred_then_json_object_with_schema() -> None:
    script = [tool_call("get_weather", city="Paris"), "Paris is 18 C.", '{"city": "Paris", "temp_c": 18}']
    with Emulator(script, quirks=LLAMA_CPP_PYTHON) as emu:
        model = cf.get_model("openai/gpt-4.1-mini", base_url=emu.base_url + "/v1", key="x", profile="openai")
        chain = model.chain("Weather in Paris?", tools=[get_weather], schema=SCHEMA)
        list(chain)  # a reader: the calls stream, and learn that tool calls cannot
        assert chain.value == {"city": "Paris", "temp_c": 18.0}
    assert chain.strategy == "deferred" and "Input should be" in chain.strategy.fallback
    assert set(model.refusals) == {"tools_with_schema", "json_schema", "streamed_tools"}
    bodies = [r.body for r in emu.requests]
    assert all(b["tool_choice"] == "auto" for b in bodies if b.get("tools"))
    formatting = bodies[-1]
    assert "tools" not in formatting
    assert formatting["response_format"]["type"] == "json_object"
    assert formatting["response_format"]["schema"]["required"] == ["city", "temp_c"]
    assert [c.purpose for c in chain.responses if c.error is None] == ["chain", "chain", "format"]

    # the model object remembers: the next chain sends nothing the server refuses
    with Emulator(script, quirks=LLAMA_CPP_PYTHON) as emu:
        again = cf.get_model("openai/gpt-4.1-mini", base_url=emu.base_url + "/v1", key="x", profile="openai")
        again.refusals = model.refusals  # same memory, new server
        assert again.chain("Paris?", tools=[get_weather], schema=SCHEMA).value["temp_c"] == 18.0
    assert len(emu.requests) == 3


def test_llamacpp_model_goes_deferred_without_streaming_tools() -> None:
    """The server cannot be made to call the output tool ("required" is refused): `auto` picks
    deferred, whose tool phase goes unstreamed after the empty stream."""
    script = [tool_call("get_weather", city="Rome"), "Rome is 24.5 C.", '{"city": "Rome", "temp_c": 24.5}']
    with Emulator(script, quirks=LLAMA_CPP_PYTHON) as emu:
        model = cf.get_model("llamacpp/default", base_url=emu.base_url + "/v1")
        chain = model.chain("Weather in Rome?", tools=[get_weather], schema=SCHEMA)
        list(chain)  # a reader: the calls stream, and learn that tool calls cannot
        assert chain.value == {"city": "Rome", "temp_c": 24.5}
    assert chain.strategy == "deferred" and chain.strategy.fallback is None
    assert "cannot be made to call the output tool" in chain.strategy.reason
    assert set(model.refusals) == {"streamed_tools", "json_schema"}
    tool_phase = [r.body for r in emu.requests if r.body.get("tools")]
    assert [b.get("stream", False) for b in tool_phase] == [True, False, False]  # the empty stream, sent once
    assert all(b["tool_choice"] == "auto" for b in tool_phase)


def test_a_tool_strategy_that_cannot_force_the_output_tool_falls_back_at_run_time() -> None:
    """`strategy="tool"` where the output tool cannot be forced: the model keeps answering in text
    (or calling other tools), so the chain goes on as deferred and its formatting call writes the value."""
    script = [
        tool_call("get_weather", city="Rome"),
        "It is warm.",
        "Warm.",
        "24.5 C.",
        '{"city": "Rome", "temp_c": 24.5}',
    ]
    with Emulator(script, quirks=LLAMA_CPP_PYTHON) as emu:
        model = cf.get_model("llamacpp/default", base_url=emu.base_url + "/v1")
        chain = model.chain(
            "Weather in Rome?", tools=[get_weather], schema=SCHEMA, strategy="tool", stream=False
        )
        assert chain.value == {"city": "Rome", "temp_c": 24.5}
    assert chain.strategy == "deferred" and chain.strategy.requested == "tool"
    assert "final_result was not called" in chain.strategy.fallback
    assert all(r.body.get("tool_choice") in (None, "auto") for r in emu.requests)  # never forced
    assert "tools" not in emu.requests[-1].body  # the formatting call


def test_a_refused_forced_tool_choice_is_sent_once_and_the_chain_goes_on() -> None:
    """`openai/` at the server with `strategy="tool"`: its profile forces a tool call after a text
    reply, and the server answers "required" with a bare HTTP 500 (its assert). That is
    `tool_choice_rejected`: not retried, remembered, and the chain still ends in a value."""
    texts = ["Rome: 24.5 C.", "Rome is warm.", "Warm."]
    script = [
        "It is warm in Rome.",
        tool_call("get_weather", city="Rome"),
        *texts,
        '{"city": "Rome", "temp_c": 24.5}',
    ]
    with Emulator(script, quirks=LLAMA_CPP_PYTHON) as emu:
        model = cf.get_model("openai/gpt-4.1-mini", base_url=emu.base_url + "/v1", key="x", profile="openai")
        chain = model.chain(
            "Weather in Rome?", tools=[get_weather], schema=SCHEMA, strategy="tool", stream=False
        )
        assert chain.value == {"city": "Rome", "temp_c": 24.5}
    forced = [r for r in emu.requests if r.body.get("tool_choice") == "required"]
    assert len(forced) == 1  # the refusal is not retried by the SDK
    assert "tool_choice" in model.refusals and "HTTP 500" in model.refusals["tool_choice"]
    assert chain.strategy == "deferred" and chain.strategy.requested == "tool"
    # the next chain of the model never forces a tool choice, and `auto` goes straight to deferred
    assert cf.output.select_strategy(model.profile, has_tools=True, refusals=model.refusals) == "deferred"


def test_formatting_call_falls_back_past_json_object_to_the_tables_next_pick() -> None:
    """A server refusing every response format: the +1 call goes on as the table says without
    native output (a forced `final_result` here; prompted for a profile that cannot force tools)."""

    def refuse_formats(request: RecordedRequest) -> Fault | None:
        if (request.json.get("response_format") or {}).get("type"):
            return Fault(500, message="Input should be 'text'")
        return LLAMA_CPP_PYTHON.refuse(request)

    quirks = Quirks("text-only", refuse_formats, LLAMA_CPP_PYTHON.bend)
    script = ["Rome is 24.5 C.", '{"city": "Rome", "temp_c": 24.5}']
    with Emulator(script, quirks=quirks) as emu:
        model = cf.get_model("llamacpp/default", base_url=emu.base_url + "/v1")
        chain = model.chain("Rome?", tools=[get_weather], schema=SCHEMA, strategy="deferred")
        assert chain.value == {"city": "Rome", "temp_c": 24.5}
    assert {"json_schema", "json_object_schema"} <= set(model.refusals)
    formats = [(r.body.get("response_format") or {}).get("type") for r in emu.requests]
    assert "json_schema" in formats and "json_object" in formats
    last = emu.requests[-1].body  # llama.cpp cannot be relied on to call a tool: prompted
    assert "response_format" not in last and "tools" not in last


async def test_a_500_naming_a_rejected_field_is_a_rejection_sent_once() -> None:
    """llama-cpp-python refuses a null tool-call turn with HTTP 500 and a pydantic body: that is
    the request refused as sent (not retryable), and the SDK does not send it again."""
    from chainform.clients.openai_chat import create_client

    with Emulator([], quirks=LLAMA_CPP_PYTHON) as emu:
        client = create_client("gpt-4.1-mini", base_url=emu.base_url + "/v1", key="x", max_retries=2)
        body = {"model": "m", "messages": [{"role": "assistant", "content": None}]}
        with pytest.raises(openai.InternalServerError) as info:
            await client.wire.send(client.sdk, body)
        error = client.wire.error(info.value, client.guard(), False)
        await client.aclose()
    assert len(emu.requests) == 1
    assert (error.kind, error.retryable) == ("bad_request", False)


BOUNDED = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 20}, "temp_c": {"type": "number"}},
    "required": ["city", "temp_c"],
}


@pytest.mark.parametrize("told", [None, "openai"], ids=["as-it-comes", "told-openai"])
def test_openai_model_at_a_foreign_url_keeps_the_schema_the_servers_grammar_enforces(told) -> None:
    """`openai/` at a server that is not OpenAI's gets a compatible profile: tool schemas without
    `strict`, and `maxLength` stays in the schema of the json_object fallback (the server's grammar
    enforces it). Told it is OpenAI, it sends strict schemas and moves the keyword into the
    description, as OpenAI's strict mode needs."""

    def reply(request: RecordedRequest) -> object:
        last = request.json["messages"][-1]
        if request.json.get("response_format"):
            return '{"city": "Paris", "temp_c": 18}'
        return "Paris is 18 C." if last["role"] == "tool" else tool_call("get_weather", city="Paris")

    settings = {"profile": told} if told else {}
    with Emulator(default=reply, quirks=LLAMA_CPP_PYTHON) as emu:
        model = cf.get_model("openai/gpt-4.1-mini", base_url=emu.base_url + "/v1", key="x", **settings)
        chain = model.chain("Weather in Paris?", tools=[get_weather], schema=BOUNDED)
        list(chain)
        assert chain.value == {"city": "Paris", "temp_c": 18}
    bodies = [r.body for r in emu.requests]
    strict = {t["function"].get("strict") for b in bodies for t in b.get("tools", [])}
    city = bodies[-1]["response_format"]["schema"]["properties"]["city"]
    if told is None:
        assert strict == {None} and city["maxLength"] == 20
        assert "prompt_cache_key" not in bodies[0]  # OpenAI's own field: not sent to another server
    else:
        assert strict == {True} and "maxLength" not in city and "20" in city["description"]
