"""Tool.from_schema (JSON Schema only) and dotted tool names renamed per provider and back."""

from __future__ import annotations

import math

import pytest

import chainform as cf
from chainform.clients.base import WireNames, to_wire
from chainform.testing import ScriptedClient, tool_call
from chainform.types import FunctionCallContent, FunctionResultContent, Message

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

PARAMS = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}, "required": ["n"]}


def factorial_tool() -> cf.Tool:
    return cf.Tool.from_schema("math.factorial", "n! of a whole number", PARAMS, lambda n: math.factorial(n))


def test_from_schema_validates_with_json_schema() -> None:
    tool = factorial_tool()
    assert tool.schema() == {
        "name": "math.factorial",
        "description": "n! of a whole number",
        "parameters": PARAMS,
    }
    assert tool.invoke({"n": 5}) == 120
    with pytest.raises(cf.ToolArgumentError, match=r"\$\.n: -1 is less than the minimum of 0"):
        tool.invoke({"n": -1})
    with pytest.raises(cf.ToolArgumentError, match="'n' is a required property"):
        tool.invoke("{}")


async def test_from_schema_async_func() -> None:
    async def echo(**arguments: object) -> dict[str, object]:
        return arguments

    tool = cf.Tool.from_schema("echo", "", {"type": "object", "properties": {"x": {"type": "string"}}}, echo)
    assert await tool.ainvoke({"x": "hi"}) == {"x": "hi"}
    assert tool.invoke('{"x": "yo"}') == {"x": "yo"}


def test_from_schema_rejects_bad_definitions() -> None:
    with pytest.raises(cf.ToolDefinitionError):
        cf.Tool.from_schema("bad name", "", PARAMS, print)
    with pytest.raises(cf.ToolDefinitionError):
        cf.Tool.from_schema("ok", "", {"type": "string"}, print)
    with pytest.raises(cf.SchemaError):
        cf.Tool.from_schema("ok", "", {"type": "object", "properties": {"n": {"type": 5}}}, print)


def test_wire_names_rename_only_what_the_provider_refuses() -> None:
    names = WireNames(r"[A-Za-z0-9_-]{1,64}", ["math.factorial", "math_factorial", "plain", "x" * 100 + ".y"])
    assert names.wire("plain") == "plain"
    assert names.wire("math_factorial") == "math_factorial"
    wire = names.wire("math.factorial")
    assert wire != "math_factorial" and wire.startswith("math_factorial_")  # kept distinct
    assert len(names.wire("x" * 100 + ".y")) <= 64
    assert {names.back(names.wire(n)) for n in names.to_wire} == set(names.to_wire)
    gemini = WireNames(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}", ["math.factorial"])
    assert gemini.identity


def test_to_wire_renames_history_and_forced_tool() -> None:
    history = [
        Message.assistant([FunctionCallContent("c1", "math.factorial", {"n": 3})]),
        Message("tool", [FunctionResultContent("c1", result=6, name="math.factorial")]),
    ]
    options = cf.ChatOptions(tools=[factorial_tool()], tool_mode=cf.ToolMode.required("math.factorial"))
    messages, sent, names = to_wire(history, options, r"[A-Za-z0-9_-]{1,64}")
    assert names is not None
    assert [t.name for t in sent.tools or ()] == ["math_factorial"]
    assert sent.tool_mode is not None and sent.tool_mode.function_name == "math_factorial"
    assert messages[0].contents[0].name == "math_factorial"  # type: ignore[union-attr]
    assert history[0].contents[0].name == "math.factorial"  # type: ignore[union-attr]  # untouched


@pytest.mark.parametrize("stream", [True, False])
def test_chain_with_dotted_tool_name(stream: bool) -> None:
    seen: list[list[str]] = []

    def reply(messages: list[Message], options: cf.ChatOptions) -> object:
        seen.append([t.name for t in options.tools or ()])
        if len(seen) == 1:
            return tool_call("math_factorial", n=5)  # the model only knows the wire name
        return "5! is " + messages[-1].contents[0].result_text()  # type: ignore[union-attr]

    model = cf.Model(ScriptedClient([reply, reply]))
    chain = model.chain("5!?", tools=[factorial_tool()], stream=stream, log=False)
    assert chain.text() == "5! is 120"
    assert seen[0] == ["math_factorial"]
    call = chain.responses[0].response.function_calls[0]  # type: ignore[union-attr]
    assert call.name == "math.factorial"  # mapped back before the engine saw it
