"""The run's data passed explicitly: a tool that asks for it gets the chain's RunContext (each
parallel call its own call id, never shown to the model), subagents link to their own call, and a
chain's conversation is named by an argument (map names each row's), not by a context variable."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

import pytest

import chainform as cf
from chainform.store import Store
from chainform.testing import ScriptedClient, tool_call
from chainform.types import FunctionResultContent, Message

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def results(messages: list[Message]) -> list[FunctionResultContent]:
    return [c for m in messages for c in m.contents if isinstance(c, FunctionResultContent)]


def test_parallel_calls_of_a_context_tool_each_get_their_own_call_id_and_the_model_never_sees_it() -> None:
    seen: list[tuple[str, str, str]] = []
    both = asyncio.Event()

    async def lookup(context: cf.RunContext | None, city: str) -> str:
        assert context is not None
        seen.append((city, context.call_id, context.chain.chain_id))
        if len(seen) == 2:
            both.set()
        await asyncio.wait_for(both.wait(), 20)  # both calls are in flight at once
        return f"{city}: {context.call_id}"

    tool = cf.tools.Tool.from_schema(
        "lookup",
        "Look a city up",
        {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        lookup,
        takes_context=True,
    )
    paris, rome = tool_call("lookup", city="Paris"), tool_call("lookup", city="Rome")
    client = ScriptedClient([[paris, rome], lambda m, o: " / ".join(r.result_text() for r in results(m))])
    chain = cf.Model(client).chain("cities", tools=[tool], log=False)
    assert chain.text() == f"Paris: {paris.call_id} / Rome: {rome.call_id}"
    assert sorted(seen) == sorted(
        [("Paris", paris.call_id, chain.chain_id), ("Rome", rome.call_id, chain.chain_id)]
    )
    offered = client.requests[0][1].tools  # what the model was shown: the schema alone
    assert [t.parameters["properties"] for t in offered] == [{"city": {"type": "string"}}]
    assert tool.renamed("find").takes_context  # a renamed tool still asks for it


def test_a_context_tool_invoked_outside_a_chain_gets_none() -> None:
    got: list[Any] = []

    def echo(context: cf.RunContext | None, text: str) -> str:
        got.append(context)
        return text

    tool = cf.tools.Tool.from_schema(
        "echo", "", {"type": "object", "properties": {"text": {"type": "string"}}}, echo, takes_context=True
    )
    assert tool.invoke({"text": "hi"}) == "hi"
    assert asyncio.run(tool.ainvoke({"text": "ho"})) == "ho"
    assert got == [None, None]


def asks(ctx: cf.RunContext, city: str) -> str:
    """A sync function tool that asks for the chain's context by annotation."""
    return f"{city}: {ctx.call_id} of {ctx.chain.chain_id}" if ctx is not None else f"{city}: none"


async def asks_later(city: str, /, ctx: cf.RunContext | None = None) -> str:
    return f"{city}: {ctx.call_id}" if ctx is not None else f"{city}: none"


@pytest.mark.parametrize("fn", [asks, asks_later])
def test_a_function_tool_asks_for_the_context_by_annotation_and_the_schema_never_shows_it(fn: Any) -> None:
    tool = cf.tools.Tool.from_function(fn)
    assert tool.takes_context and list(tool.parameters["properties"]) == ["city"]
    assert tool.parameters["required"] == ["city"]
    assert cf.tools.get_schema(fn)["parameters"] == tool.parameters
    paris, rome = tool_call(tool.name, city="Paris"), tool_call(tool.name, city="Rome")
    client = ScriptedClient([[paris, rome], lambda m, o: " / ".join(r.result_text() for r in results(m))])
    chain = cf.Model(client).chain("cities", tools=[fn], log=False)
    text = chain.text()
    assert text.startswith(f"Paris: {paris.call_id}") and f"Rome: {rome.call_id}" in text
    if fn is asks:
        assert text.count(f"of {chain.chain_id}") == 2
    assert tool.invoke({"city": "Oslo"}) == "Oslo: none"  # outside a chain: None
    assert tool.renamed("other").takes_context


def test_two_parallel_calls_of_one_subagent_each_link_to_their_own_call() -> None:
    def worker_reply(messages: list[Message], _options: object) -> str:
        return "done " + messages[-1].text

    worker = cf.Agent(
        cf.Model(ScriptedClient([worker_reply, worker_reply])), name="worker", description="Does a task"
    )
    first, second = tool_call("worker", task="one"), tool_call("worker", task="two")
    parent = cf.Model(
        ScriptedClient([[first, second], lambda m, o: " / ".join(r.result_text() for r in results(m))])
    )
    chain = parent.chain("work", tools=[worker])
    assert chain.text() == "done one / done two"
    rows = Store().recent(None)
    top = [r for r in rows if r.agent_name is None]
    subs = {r.prompt: r for r in rows if r.agent_name == "worker"}
    assert {p: (r.parent_tool_call_id, r.parent_chain_id) for p, r in subs.items()} == {
        "one": (first.call_id, top[0].chain_id),
        "two": (second.call_id, top[0].chain_id),
    }
    assert sorted(run.call_id or "" for run in chain.agent_runs) == sorted([first.call_id, second.call_id])


def test_a_chain_names_its_conversation_by_argument() -> None:
    model = cf.Model(ScriptedClient(["hi", "again"]))
    model.chain("hello", conversation_name="invoice 42").text()
    model.chain("hello").text()
    names = sorted((r.conversation_name or "") for r in Store().recent(None))
    assert names == ["", "invoice 42"]


def test_a_map_rows_conversation_is_named_for_its_run_and_key() -> None:
    model = cf.Model(ScriptedClient(["a", "b"]))
    rows = list(model.map([{"id": "r1", "q": "x"}, {"id": "r2", "q": "y"}], prompt="{q}", concurrency=1))
    logged = {r.conversation_id: r.conversation_name or "" for r in Store().recent(None)}
    names = {row.key: logged[row.conversation_id] for row in rows if row.conversation_id}
    assert len(names) == 2 and len({n.split()[1] for n in names.values()}) == 1  # one run id
    assert all(name.startswith("map ") and name.endswith(f" {key}") for key, name in names.items())


SRC = Path(cf.__file__).parent


@pytest.mark.parametrize("module", ["_lineage.py", "chain/_calls.py", "chain/_state.py", "chain/_engine.py"])
def test_no_context_variable_carries_a_runs_lineage_or_conversation_name(module: str) -> None:
    tree = ast.parse((SRC / module).read_text())
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert "ContextVar" not in names
