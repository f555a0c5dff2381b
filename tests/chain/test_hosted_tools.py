"""Hosted tools (web search, code execution, URL context, file search) in `tools=`: checked against
the profile before any call, the strategy chosen around them, their calls counted. ScriptedClient;
each provider's wire shape is in tests/providers/conformance/test_conformance_asks.py."""

from __future__ import annotations

import pytest

import chainform as cf
from chainform.testing import ScriptedClient, tool_call
from chainform.types import ChatResponse, Message, ServerToolContent, TextContent, UsageDetails

pytestmark = pytest.mark.unit

ALL = frozenset({"web_search", "code_execution", "url_context", "file_search"})
COMBINES = cf.ModelProfile(
    name="combines",
    supports_json_schema=True,
    supports_tools_with_schema=True,
    hosted_tools=ALL,
    hosted_with_functions=True,
    hosted_with_schema=True,
)
ALONE = COMBINES.replace(name="alone", hosted_with_functions=False, hosted_with_schema=False)
NONE = COMBINES.replace(name="none", hosted_tools=frozenset())


def get_weather(city: str) -> dict:
    """Current weather for a city."""
    return {"city": city, "temp_c": 21}


def searched(text: str) -> ChatResponse:
    """A reply after one web search the provider ran itself."""
    use = ServerToolContent("server_tool_use", {"type": "server_tool_use", "name": "web_search"})
    result = ServerToolContent("web_search_tool_result", {"type": "web_search_tool_result"})
    return ChatResponse(
        [Message("assistant", [use, result, TextContent(text)])], usage_details=UsageDetails(5, 3)
    )


def test_hosted_tools_ride_on_the_calls_and_their_calls_are_counted():
    client = ScriptedClient([searched("Paris: 21 C.")], COMBINES)
    chain = cf.Model(client).chain("Weather in Paris?", tools=[cf.WebSearch(max_uses=2), cf.CodeExecution()])
    assert chain.text() == "Paris: 21 C."
    sent = client.requests[0][1]
    assert [t.kind for t in sent.hosted_tools] == ["web_search", "code_execution"] and not sent.tools
    assert chain.usage.additional_counts["hosted_tool_calls"] == 1
    assert chain.responses[0].usage.input_tokens == 5


def test_with_function_tools_and_a_schema_where_the_model_combines_them():
    client = ScriptedClient(
        [tool_call("get_weather", city="Paris"), '{"city": "Paris", "temp_c": 21}'], COMBINES
    )
    chain = cf.Model(client).chain("Paris?", tools=[get_weather, cf.WebSearch()], schema="city, temp_c int")
    assert chain.value == {"city": "Paris", "temp_c": 21} and chain.strategy == "native"
    assert all(o.hosted_tools and [t.name for t in o.tools] == ["get_weather"] for _, o in client.requests)


def test_a_schema_goes_to_a_formatting_call_without_tools_where_it_cannot_ride_beside_them():
    client = ScriptedClient([searched("Paris: 21 C."), '{"city": "Paris", "temp_c": 21}'], ALONE)
    chain = cf.Model(client).chain("Paris?", tools=[cf.WebSearch()], schema="city, temp_c int")
    assert chain.value == {"city": "Paris", "temp_c": 21} and chain.strategy == "deferred"
    (_, o1), (_, o2) = client.requests
    assert o1.hosted_tools and o1.response_format is None
    assert not o2.hosted_tools and not o2.tools and o2.response_format is not None


@pytest.mark.parametrize(
    ("profile", "tools", "kwargs", "match"),
    [
        (NONE, [cf.WebSearch()], {}, "has no hosted web_search tool"),
        (COMBINES.replace(hosted_tools=frozenset({"web_search"})), [cf.URLContext()], {}, "url_context"),
        (ALONE, [cf.WebSearch(), get_weather], {}, "together with function tools"),
        (ALONE, [cf.WebSearch()], {"schema": "x", "strategy": "native"}, "use strategy auto or deferred"),
        (ALONE, [cf.WebSearch()], {"schema": "x", "strategy": "tool"}, "cannot send a schema"),
    ],
)
def test_what_a_model_cannot_send_is_refused_before_any_call(profile, tools, kwargs, match):
    client = ScriptedClient([], profile)
    with pytest.raises(cf.HostedToolError, match=match):
        cf.Model(client).chain("x", tools=tools, **kwargs)
    assert client.requests == []


def test_file_search_needs_store_ids_and_the_cli_spelling_parses():
    with pytest.raises(ValueError, match="store_ids"):
        cf.FileSearch()
    from chainform.types import hosted_tool

    assert hosted_tool("file-search:vs_1,vs_2") == cf.FileSearch(("vs_1", "vs_2"))
    assert hosted_tool("web-search") == cf.WebSearch()
    with pytest.raises(ValueError, match="not a hosted tool"):
        hosted_tool("web_browse")


def test_a_call_that_used_hosted_tools_has_no_known_cost_and_a_cap_is_refused_before_any_call():
    client = ScriptedClient([searched("Paris: 21 C.")], COMBINES)
    chain = cf.Model(client, name="openai/gpt-4.1-mini").chain("Weather?", tools=[cf.WebSearch()])
    chain.text()
    usage = chain.responses[0].usage
    assert usage.cost is None and "hosted tool call" in usage.cost_reason
    with pytest.raises(cf.PricingError, match="hosted tools"):
        cf.Model(ScriptedClient([], COMBINES)).chain("x", tools=[cf.WebSearch()], max_cost=1)
