"""Agents with input/output schemas, alone and as tools of a parent chain (ScriptedClient)."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel

import chainform as cf
from chainform.testing import ScriptedClient, tool_call
from chainform.types import FunctionResultContent, Message

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


class Question(BaseModel):
    city: str
    year: int


class Fact(BaseModel):
    city: str
    population: int


def results(messages: list[Message]) -> list[FunctionResultContent]:
    return [c for m in messages for c in m.contents if isinstance(c, FunctionResultContent)]


def census_agent(*replies: object) -> tuple[cf.Agent, ScriptedClient]:
    client = ScriptedClient(list(replies))
    agent = cf.Agent(
        cf.Model(client),
        name="census",
        description="Population of a city in a year",
        instructions="Answer from the census.",
        input_schema=Question,
        output_schema=Fact,
    )
    return agent, client


def test_agent_run_validates_input_and_returns_the_chain() -> None:
    agent, client = census_agent('{"city": "Paris", "population": 2100000}')
    response = agent.run(Question(city="Paris", year=2020))
    assert response.value == Fact(city="Paris", population=2100000)
    messages = client.requests[0][0]
    assert messages[0].text == "Answer from the census."
    assert json.loads(messages[-1].text) == {"city": "Paris", "year": 2020}
    with pytest.raises(cf.ToolArgumentError, match="year"):
        agent.run({"city": "Paris", "year": "last"})
    plain = cf.Agent(cf.Model(ScriptedClient(["hi"])), name="p", description="plain")
    assert plain.run("hello").text() == "hi"
    with pytest.raises(cf.ToolArgumentError, match="string task"):
        plain.run({"task": 3})


def test_parent_calls_agent_as_tool_then_answers_with_its_own_schema() -> None:
    agent, sub = census_agent('{"city": "Rome", "population": 2800000}')
    assert agent.as_tool().parameters["required"] == ["city", "year"]

    def answer(messages: list[Message], options: cf.ChatOptions) -> str:
        fact = json.loads(results(messages)[-1].result_text())
        return json.dumps({"answer": f"{fact['city']} had {fact['population']}"})

    parent = ScriptedClient([tool_call("census", city="Rome", year=2021), answer])
    chain = cf.Model(parent).chain(
        "How many lived in Rome in 2021?", tools=[agent], schema="answer", log=False
    )
    assert chain.value == {"answer": "Rome had 2800000"}
    assert [t.name for t in parent.requests[0][1].tools or ()] == ["census"]
    runs = chain.agent_runs
    requested = parent.requests[1][0][1].function_calls[0]
    assert [r.agent for r in runs] == ["census"] and runs[0].call_id == requested.call_id
    usage = chain.usage
    sub_tokens = sum(c.usage.total_tokens or 0 for c in runs[0].calls)
    assert sub_tokens > 0
    assert usage.by_agent["census"].total_tokens == sub_tokens
    own = sum(c.usage.total_tokens or 0 for c in chain.responses)
    assert usage.total_tokens == own + sub_tokens
    assert sub.remaining == 0


def test_bad_subagent_input_goes_back_to_the_parent() -> None:
    agent, sub = census_agent()  # never runs
    parent = ScriptedClient(
        [tool_call("census", city="Rome", year="soon"), lambda m, o: results(m)[-1].result_text()]
    )
    text = cf.Model(parent).chain("?", tools=[agent], log=False).text()
    assert text.startswith("Error: ") and "year" in text and "census" in text
    assert sub.requests == []


def test_failing_subagent_is_a_tool_error_and_the_parent_goes_on() -> None:
    agent, _ = census_agent("not json", "still not json", "nope")  # retries=2: three bad answers
    parent = ScriptedClient(
        [tool_call("census", city="Oslo", year=2000), lambda m, o: results(m)[-1].result_text()]
    )
    chain = cf.Model(parent).chain("?", tools=[agent], log=False)
    text = chain.text()
    assert "agent 'census' failed" in text and "structured output failed" in text
    assert chain.agent_runs[0].error and len(chain.agent_runs[0].calls) == 3
    assert chain.usage.by_agent["census"].total_tokens  # failed calls still count


def test_parallel_subagents_run_concurrently() -> None:
    arrived = 0
    both = asyncio.Event()

    async def meet(name: str) -> str:
        """Wait until the other subagent's tool is running too."""
        nonlocal arrived
        arrived += 1
        if arrived == 2:
            both.set()
        await asyncio.wait_for(both.wait(), 20)  # fails if the two ran one after the other
        return f"met {name}"

    def worker(name: str) -> cf.Agent:
        client = ScriptedClient([tool_call("meet", name=name), lambda m, o: results(m)[-1].result_text()])
        return cf.Agent(cf.Model(client), name=name, description="meets", tools=[meet])

    parent = ScriptedClient(
        [
            [tool_call("a", task="go"), tool_call("b", task="go")],
            lambda m, o: " / ".join(r.result_text() for r in results(m)),
        ]
    )
    chain = cf.Model(parent).chain("meet", tools=[worker("a"), worker("b")], log=False)
    assert chain.text() == "met a / met b"
    assert sorted(chain.usage.by_agent) == ["a", "b"]


def test_depth_limit_stops_recursion() -> None:
    def step(messages: list[Message], options: cf.ChatOptions) -> object:
        done = results(messages)
        return done[-1].result_text() if done else tool_call("deep", task="again")

    client = ScriptedClient([step] * 20)
    agent = cf.Agent(cf.Model(client), name="deep", description="recurses")
    agent.tools = [agent]
    text = agent.run("go").text()
    assert "nest 3 deep" in text
    assert client.remaining == 20 - 8  # the top chain and 3 nested ones, 2 calls each; the 4th refused


async def test_async_agent_and_usage() -> None:
    agent = cf.Agent(
        cf.AsyncModel(ScriptedClient(['{"city": "Lima", "population": 10}'])),
        name="census",
        description="d",
        input_schema="city, year int",
        output_schema=Fact,
    )
    response = await agent.run({"city": "Lima", "year": 1990})
    assert response.value == Fact(city="Lima", population=10)
