"""Conformance of what users of other libraries keep asking for (issue 46), one row per transport
through its real SDK and the emulator: a cut-off answer, a tool's result as the value, falling over
to the next model on bad output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conformance_table import Row

import chainform as cf
from chainform.testing import tool_call
from chainform.testing.emulator import Emulator, Fault, RecordedRequest, Reply, ScriptItem

SCHEMA = "city, temp_c int"
CUT = '{"city": "Par'


def cut_answer(request: RecordedRequest) -> ScriptItem:
    """The answer cut at the token limit, in the shape the request asks for."""
    if b"final_result" in request.raw_body:
        return Reply([tool_call("final_result", _raw=CUT)], finish_reason="length")
    return Reply([CUT], finish_reason="length")


def whole_answer(request: RecordedRequest) -> ScriptItem:
    if b"final_result" in request.raw_body:
        return tool_call("final_result", city="Paris", temp_c=21)
    return json.dumps({"city": "Paris", "temp_c": 21})


def test_a_cut_answer_is_truncated_after_one_call_or_two_with_the_opt_in(
    transport: Row, emu: Emulator
) -> None:
    if transport.transport == "gemini":  # Gemini sends parsed arguments: only text can be cut
        emu.default = lambda r: Reply([CUT], finish_reason="length")
    else:
        emu.default = cut_answer
    model = transport.model(emu)
    with pytest.raises(cf.TruncatedOutputError) as info:
        model.prompt("Warmest city?", schema=SCHEMA, options={"max_output_tokens": 50}, log=False).value
    assert len(emu.requests) == 1
    assert info.value.max_tokens == 50 and info.value.text == CUT
    emu.add(cut_answer if transport.transport != "gemini" else Reply([CUT], finish_reason="length"))
    emu.default = whole_answer
    chain = model.prompt(
        "Warmest city?", schema=SCHEMA, options={"max_output_tokens": 50}, retry_max_tokens=400, log=False
    )
    assert chain.value == {"city": "Paris", "temp_c": 21}
    assert len(emu.requests) == 3
    assert "400" in emu.requests[2].raw_body.decode() and "400" not in emu.requests[1].raw_body.decode()
    assert chain.responses[0].finish_reason == "length"
    assert chain.responses[1].finish_reason in ("stop", "tool_calls")


def lookup(city: str) -> dict[str, Any]:
    """The stored row for a city."""
    return {"city": city, "temp_c": 21}


REFUSALS = {
    r["provider"].split(" ")[0]: r["message"]
    for r in json.loads(
        (Path(__file__).parents[2] / "core" / "data" / "forced_choice_refusals.json").read_text()
    )["refusals"]
}
WORDING = {  # each transport's server, in its own words (Gemini accepts a forced call with thinking)
    "anthropic": REFUSALS["anthropic"],
    "bedrock": REFUSALS["bedrock"],
    "openai-responses": REFUSALS["openai-responses"],
    "azure-responses": REFUSALS["openai-responses"],
}


def forces(request: RecordedRequest) -> bool:
    """Whether a request forces a tool call, in any wire format."""
    body = request.json
    choice = body.get("tool_choice") or (body.get("toolConfig") or {}).get("toolChoice")
    if isinstance(choice, str):
        return choice in ("required", "any")
    if isinstance(choice, dict):
        return choice.get("type") in ("any", "tool", "function") or "any" in choice or "tool" in choice
    return False


def test_a_refused_forced_choice_degrades_to_auto_and_ends_in_a_value(transport: Row, emu: Emulator) -> None:
    if transport.transport == "gemini":
        pytest.skip("Gemini accepts function calling mode ANY with thinking on: nothing to refuse")
    wording = WORDING.get(transport.transport, REFUSALS["deepseek"])

    def reply(request: RecordedRequest) -> ScriptItem:
        if forces(request):
            return Fault(400, message=wording)
        return tool_call("final_result", city="Paris", temp_c=21)

    emu.default = reply
    model = transport.model(emu)
    chain = model.prompt("Warmest city?", schema=SCHEMA, strategy="tool", log=False)
    assert chain.value == {"city": "Paris", "temp_c": 21}
    assert len(emu.requests) == 2 and forces(emu.requests[0]) and not forces(emu.requests[1])
    assert "final_result" in emu.requests[1].raw_body.decode()
    assert "tool_choice" in model.refusals


def test_a_stop_at_tool_ends_the_chain_after_one_call(transport: Row, emu: Emulator) -> None:
    emu.add(tool_call("lookup", city="Paris"))
    chain = transport.model(emu).chain(
        "Weather in Paris?", tools=[lookup], schema=SCHEMA, stop_at_tools=["lookup"], log=False
    )
    assert chain.value == {"city": "Paris", "temp_c": 21} and chain.ended_by == "lookup"
    assert len(emu.requests) == 1


def test_an_invalid_output_falls_over_to_the_next_model(transport: Row, emu: Emulator) -> None:
    emu.add("not the answer", "still not", "nor this")
    emu.default = whole_answer
    second = cf.get_model("ollama/llama3.2", base_url=emu.base_url + "/v1", max_retries=0)
    model = transport.model(emu, fallback=[second], fallback_on=["output"])
    chain = model.prompt("Warmest city?", schema=SCHEMA, log=False)
    assert chain.value == {"city": "Paris", "temp_c": 21}
    assert [c.model for c in chain.responses] == [transport.name] * 3 + ["ollama/llama3.2"]
    assert set(chain.usage.by_model) == {transport.name, "ollama/llama3.2"}


HOSTED = {
    "web_search": cf.WebSearch(max_uses=2),
    "code_execution": cf.CodeExecution(),
    "url_context": cf.URLContext(),
    "file_search": cf.FileSearch(["vs_store_1"]),
}
# each provider's own shape of each hosted tool (a fragment of the request body, lower case, no _)
WIRE = {
    "openai-responses": {
        "web_search": '"type":"websearch"',
        "code_execution": '"type":"codeinterpreter"',
        "file_search": '"vectorstoreids":["vsstore1"]',
    },
    "anthropic": {
        "web_search": '"type":"websearch20250305","name":"websearch","maxuses":2',
        "code_execution": '"type":"codeexecution20250825","name":"codeexecution"',
        "url_context": '"type":"webfetch20250910","name":"webfetch"',
    },
    "gemini": {
        "web_search": '"googlesearch":{}',
        "code_execution": '"codeexecution":{}',
        "url_context": '"urlcontext":{}',
        "file_search": '"filesearchstorenames":["vsstore1"]',
    },
}
BETA = {"code_execution": "code-execution-2025-08-25", "url_context": "web-fetch-2025-09-10"}


@pytest.mark.parametrize("kind", list(HOSTED))
def test_a_hosted_tool_reaches_the_request_in_the_providers_shape_or_is_refused_before_it(
    transport: Row, emu: Emulator, kind: str
) -> None:
    emu.default = "Done."
    model = transport.model(emu)
    shape = WIRE.get(transport.transport, {}).get(kind)
    if shape is None:
        with pytest.raises(cf.HostedToolError, match=kind):
            model.chain("Go.", tools=[HOSTED[kind]], log=False)
        assert emu.requests == []
        return
    chain = model.chain("Go.", tools=[HOSTED[kind]], log=False)
    assert chain.text() == "Done."
    sent = emu.requests[0].raw_body.decode().lower().replace("_", "").replace(" ", "")
    assert shape in sent, sent[:600]
    if transport.transport == "anthropic" and kind in BETA:
        assert BETA[kind] in emu.requests[0].headers.get("anthropic-beta", "")
