"""Conformance, what a call returns: every adapter row through its real SDK and the emulator.

Public API only (`get_model`, `prompt`, `chain`, streaming, options); the rows are in
conformance_table.py. Wire details an adapter alone has stay in its own test file.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from conformance_table import Row

import chainform as cf
from chainform.testing import tool_call
from chainform.testing.emulator import Emulator, RecordedRequest, Reply, ScriptItem, Usage

TEMPS = {"Paris": 21, "Rome": 18}
ANSWER = {"city": "Paris", "temp_c": 21}
SCHEMA = "city, temp_c int"
# distinctive values, so finding one in a request body means the option was sent
SAMPLE: dict[str, Any] = {
    "temperature": 0.37,
    "top_p": 0.83,
    "top_k": 41,
    "seed": 4242,
    "frequency_penalty": 0.29,
    "presence_penalty": 0.31,
    "stop_sequences": ["ZZSTOP"],
    "max_output_tokens": 123,
}


def get_weather(city: str) -> dict[str, Any]:
    """Current weather for a city."""
    return {"city": city, "temp_c": TEMPS[city]}


def answer(request: RecordedRequest) -> ScriptItem:
    """The final answer as the request asks for it: the output tool when offered, else JSON text."""
    if b"final_result" in request.raw_body:
        return tool_call("final_result", **ANSWER)
    return json.dumps(ANSWER)


def body(emu: Emulator, n: int = -1) -> str:
    return emu.requests[n].raw_body.decode()


def sent(value: Any, text: str) -> bool:
    """Whether `value` appears in a request body as a value of its own (not inside another number;
    an integer may be written as a float, as google-genai writes topK)."""
    token = value[0] if isinstance(value, list) else value
    tail = r"(?:\.0)?" if isinstance(token, int) else ""
    return re.search(rf"(?<![\w.]){re.escape(str(token))}{tail}(?![\w.])", text) is not None


def test_profile_claims(row: Row, emu: Emulator) -> None:
    """The row's claims are the profile's, so capability skips follow the profile."""
    profile = row.model(emu).profile
    assert profile.supports_tools is row.tools
    assert (profile.supports_tools and profile.supports_parallel_tool_calls) is row.parallel


def test_text(row: Row, emu: Emulator) -> None:
    emu.add("Hello from the emulator")
    chain = row.model(emu).prompt("Say hello", system="Be brief.", log=False)
    assert chain.text() == "Hello from the emulator"
    (call,) = chain.responses
    assert call.response is not None and call.response.finish_reason == cf.FinishReason.STOP
    assert "Be brief." in body(emu) and "Say hello" in body(emu)
    assert len(emu.requests) == 1


def test_stream_joins_to_the_same_response(row: Row, emu: Emulator) -> None:
    text = "one two three four five six seven"
    emu.add(Reply([text], usage=Usage(30, 7)), Reply([text], usage=Usage(30, 7)))
    model = row.model(emu)
    streamed = model.prompt("count", log=False)
    chunks = list(streamed)
    assert len(chunks) > 2 and "".join(chunks) == text
    whole = model.prompt("count", stream=False, log=False)
    assert whole.text() == streamed.text() == text
    for chain in (streamed, whole):
        (call,) = chain.responses
        assert call.response is not None and call.response.finish_reason == cf.FinishReason.STOP
        assert (chain.usage.input_tokens, chain.usage.output_tokens, chain.usage.total_tokens) == (30, 7, 37)


def test_usage(row: Row, emu: Emulator) -> None:
    emu.add(Reply(["counted"], usage=Usage(120, 9, cached_input_tokens=64, reasoning_tokens=3)))
    chain = row.model(emu).prompt("x", log=False)
    assert chain.text() == "counted"
    usage = chain.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (120, 9, 129)
    counts = {"cache_read_input_tokens": 64, "reasoning_tokens": 3}
    assert usage.additional_counts == {k: v for k, v in counts.items() if k in row.usage_counts}


def test_tool_calls(row: Row, emu: Emulator) -> None:
    """Parallel calls where the profile allows them (else one a turn), results sent back, usage summed."""
    if not row.tools:
        pytest.skip("the profile has no tools")
    paris, rome = tool_call("get_weather", city="Paris"), tool_call("get_weather", city="Rome")
    turns = [[paris, rome]] if row.parallel else [[paris], [rome]]
    emu.add(
        *[Reply(t, usage=Usage(100, 12)) for t in turns], Reply(["Paris is warmer."], usage=Usage(150, 4))
    )
    chain = row.model(emu).chain("Warmer of Paris and Rome?", tools=[get_weather], log=False)
    assert chain.text() == "Paris is warmer."
    calls = [c for r in chain.responses if r.response for c in r.response.function_calls]
    assert [(c.name, c.arguments) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Rome"}),
    ]
    assert len({c.call_id for c in calls}) == 2
    first = chain.responses[0].response
    assert first is not None and first.finish_reason == cf.FinishReason.TOOL_CALLS
    assert re.search(r"temp_c\W*21", body(emu)) and re.search(r"temp_c\W*18", body(emu))
    assert len(emu.requests) == len(turns) + 1
    n = len(turns)
    assert (chain.usage.input_tokens, chain.usage.output_tokens) == (100 * n + 150, 12 * n + 4)


def test_structured_output(row: Row, emu: Emulator) -> None:
    emu.default = answer
    chain = row.model(emu).prompt("Warmest city?", schema=SCHEMA, log=False)
    assert chain.value == ANSWER
    assert chain.strategy == row.schema_strategy
    assert len(emu.requests) == 1


def test_structured_output_with_tools(row: Row, emu: Emulator) -> None:
    emu.add([tool_call("get_weather", city="Paris")])
    emu.default = answer
    chain = row.model(emu).chain("Warmest?", tools=[get_weather], schema=SCHEMA, log=False)
    assert chain.value == ANSWER
    assert chain.strategy == row.tools_schema_strategy
    assert re.search(r"temp_c\W*21", body(emu, 1))  # the tool ran and its result went back
    assert len(emu.requests) == (3 if row.tools_schema_strategy == "deferred" else 2)


def test_unsupported_options_are_refused(row: Row, emu: Emulator) -> None:
    """An option the model has no field for fails before any request, naming the option."""
    model = row.model(emu)
    refused = sorted(set(SAMPLE) & model.profile.unsupported_options)
    if not refused:
        pytest.skip("the profile accepts every sampling option")
    for name in refused:
        with pytest.raises(cf.UnsupportedOptionError, match=name) as info:
            model.prompt("x", options={name: SAMPLE[name]}, log=False).text()
        assert isinstance(info.value, cf.ProviderError) and info.value.kind == "bad_request"
    assert emu.requests == []


def test_supported_options_are_sent(row: Row, emu: Emulator) -> None:
    """Nothing the profile accepts is dropped silently."""
    model = row.model(emu)
    accepted = {k: v for k, v in SAMPLE.items() if k not in model.profile.unsupported_options}
    emu.add("ok")
    assert model.prompt("x", options=accepted, log=False).text() == "ok"
    missing = [name for name, value in accepted.items() if not sent(value, body(emu))]
    assert missing == []
