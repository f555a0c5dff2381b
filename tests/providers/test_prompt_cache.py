"""Prompt caching through the real SDKs and the emulator: the markers each provider documents
(Anthropic cache_control, OpenAI prompt_cache_key, Bedrock cachePoint) on the captured requests,
and a 100-row map whose rows after the first read the prefix from the emulated cache."""

from __future__ import annotations

import json

import pytest

import chainform as cf
from chainform.clients.bedrock import create_client as bedrock_client
from chainform.clients.openai_responses import create_client as responses_client
from chainform.testing import tool_call
from chainform.testing.emulator import Emulator
from chainform.types import ChatOptions, FunctionSpec, Message

pytestmark = pytest.mark.usefixtures("openai_isolated")

SYSTEM = "You extract order numbers from customer emails. " * 40  # a long, stable prefix


def weather(city: str) -> dict[str, object]:
    """Current weather for a city."""
    return {"city": city, "temp_c": 21}


def _anthropic(emu: Emulator) -> cf.Model:
    return cf.get_model("anthropic/claude-haiku-4-5", key="sk-ant-test", base_url=emu.base_url, max_retries=0)


def _openai(emu: Emulator) -> cf.Model:
    return cf.get_model(
        "openai/gpt-4.1-mini", key="sk-test", base_url=emu.base_url + "/v1", max_retries=0, profile="openai"
    )


def _marked(body: dict[str, object]) -> list[str]:
    """Where an Anthropic request carries cache_control: tools, system, messages."""
    where = []
    for tool in body.get("tools") or []:  # type: ignore[attr-defined]
        if "cache_control" in tool:
            where.append(f"tool {tool['name']}")
    system = body.get("system")
    if isinstance(system, list) and any("cache_control" in b for b in system):
        where.append("system")
    for message in body.get("messages") or []:  # type: ignore[attr-defined]
        content = message["content"]
        if isinstance(content, list) and any("cache_control" in b for b in content):
            where.append(f"message {message['role']}")
    return where


def test_anthropic_tool_chain_marks_tools_system_and_the_conversation(emulator: Emulator) -> None:
    emulator.add(tool_call("weather", city="Paris"), '{"temp_c": 21}')
    chain = _anthropic(emulator).chain(
        "Paris?", system=SYSTEM, tools=[weather], schema="temp_c int", stream=False
    )
    assert chain.value == {"temp_c": 21}
    first, second = (r.json for r in emulator.requests)
    assert _marked(first) == ["tool weather", "system", "message user"]
    assert _marked(second)[:2] == ["tool weather", "system"] and _marked(second)[-1] == "message user"
    assert all(len(_marked(r.json)) <= 4 for r in emulator.requests)  # Anthropic's limit
    # the second call read what the first wrote: the emulated cache reports it like Anthropic
    assert chain.responses[1].usage.additional_counts.get("cache_read_input_tokens", 0) > 0


def test_anthropic_single_prompt_is_not_marked_unless_asked(emulator: Emulator) -> None:
    emulator.add("one", "two", "three")
    model = _anthropic(emulator)
    model.prompt("Hi", system=SYSTEM, stream=False).text()
    model.prompt("Hi", system=SYSTEM, stream=False, options={"cache": True}).text()
    model.chain("Hi", system=SYSTEM, tools=[weather], stream=False, options={"cache": False}).text()
    assert [_marked(r.json) for r in emulator.requests] == [[], ["system"], []]


def test_openai_sends_the_conversation_as_prompt_cache_key(emulator: Emulator) -> None:
    emulator.add("a", "b", "c")
    model = _openai(emulator)
    conversation = model.conversation()
    conversation.prompt("Hi", system=SYSTEM, stream=False).text()
    conversation.prompt("Again", stream=False).text()
    model.prompt("Hi", stream=False, options={"cache": False}).text()
    keys = [r.json.get("prompt_cache_key") for r in emulator.requests]
    assert keys == [conversation.id, conversation.id, None]


def test_compatible_servers_get_no_cache_key(emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_BASE_URL", emulator.base_url + "/v1")
    emulator.add("a")
    cf.get_model("ollama/llama3.2", max_retries=0).prompt("Hi", stream=False).text()
    assert "prompt_cache_key" not in emulator.requests[0].json


async def test_bedrock_cache_points_where_the_model_takes_them(emulator: Emulator) -> None:
    tool = FunctionSpec("weather", "Weather.", {"type": "object", "properties": {}})
    options = ChatOptions(tools=[tool], cache_key="conversation-1")
    creds = {"region": "us-east-1", "aws_access_key_id": "AKIDTEST", "aws_secret_access_key": "s"}
    messages = [Message.system(SYSTEM), Message.user("Hi")]
    emulator.add("one", "two", "three")
    claude = bedrock_client(
        "anthropic.claude-sonnet-4-5-20250929-v1:0", base_url=emulator.base_url, max_retries=0, **creds
    )
    for _ in range(2):
        response = await claude.get_response(messages, options)
    for request in emulator.requests:
        assert request.json["system"][-1] == {"cachePoint": {"type": "default"}}
        assert request.json["toolConfig"]["tools"][-1] == {"cachePoint": {"type": "default"}}
    assert response.usage_details is not None  # the second read the prefix the first wrote
    assert response.usage_details.additional_counts["cache_read_input_tokens"] > len(SYSTEM) // 8
    llama = bedrock_client(
        "meta.llama3-3-70b-instruct-v1:0", base_url=emulator.base_url, max_retries=0, **creds
    )
    await llama.get_response(messages, options)
    assert "cachePoint" not in json.dumps(emulator.requests[-1].json)


async def test_openai_responses_sends_the_key_and_reads_the_cache(emulator: Emulator) -> None:
    client = responses_client(
        "gpt-4.1-mini", base_url=emulator.base_url + "/v1", key="sk-test", max_retries=0, profile="openai"
    )
    emulator.add("one", "two")
    messages = [Message.system(SYSTEM), Message.user("Hi")]
    for _ in range(2):
        response = await client.get_response(messages, ChatOptions(cache_key="conversation-1"))
    assert [r.json["prompt_cache_key"] for r in emulator.requests] == ["conversation-1"] * 2
    assert response.usage_details is not None
    assert response.usage_details.additional_counts["cache_read_input_tokens"] > 0


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_map_of_100_rows_reads_its_prefix_from_the_cache(emulator: Emulator, provider: str) -> None:
    emulator.default = lambda request: '{"order": 1}'
    model = _anthropic(emulator) if provider == "anthropic" else _openai(emulator)
    rows = [f"Email {i}: where is order {i}?" for i in range(100)]
    results = list(model.map(rows, system=SYSTEM, schema="order int", concurrency=4, log=False))
    assert all(r.ok for r in results)
    cached = [r.usage.additional_counts.get("cache_read_input_tokens", 0) for r in results]
    assert sum(1 for c in cached if c > 0) >= 96  # all but the first few rows (concurrency 4) read it
    assert sum(cached) > 100 * len(SYSTEM) // 8  # most of each row's system prompt
    if provider == "openai":
        keys = {r.json["prompt_cache_key"] for r in emulator.requests}
        assert len(keys) == 1 and next(iter(keys)).startswith("chainform-map-")
    else:
        assert all(_marked(r.json) == ["system"] for r in emulator.requests)


def test_cached_tokens_reach_the_spans(emulator: Emulator) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    cf.instrument(provider)
    try:
        emulator.add(tool_call("weather", city="Paris"), "21 degrees")
        chain = _anthropic(emulator).chain("Paris?", system=SYSTEM, tools=[weather], stream=False, log=False)
        chain.text()
    finally:
        cf.uninstrument()
    read = chain.responses[1].usage.additional_counts["cache_read_input_tokens"]
    chats = sorted(
        (s for s in exporter.get_finished_spans() if s.name.startswith("chat")),
        key=lambda s: s.start_time or 0,
    )
    assert [(s.attributes or {}).get("gen_ai.usage.cache_read.input_tokens") for s in chats] == [None, read]
    (root,) = [s for s in exporter.get_finished_spans() if s.name.startswith("chain")]
    assert (root.attributes or {})["gen_ai.usage.cache_read.input_tokens"] == read
