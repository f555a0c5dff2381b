"""Costs through the official SDKs against the emulator: the usage each provider reports (cache
reads included) priced as genai-prices prices it for that provider, and logged with the call."""

from __future__ import annotations

import pytest
from genai_prices import Usage as PricedUsage
from genai_prices import calc_price

import chainform as cf
from chainform.pricing import PRICES
from chainform.store import Store
from chainform.testing.emulator import Emulator, Reply, Usage
from chainform.types import UsageDetails


def priced(usage: UsageDetails, ref: str, provider: str) -> object:
    counts = usage.additional_counts
    return calc_price(
        PricedUsage(
            input_tokens=usage.input_tokens or 0,
            output_tokens=usage.output_tokens or 0,
            cache_read_tokens=counts.get("cache_read_input_tokens", 0),
            cache_write_tokens=counts.get("cache_creation_input_tokens", 0),
        ),
        ref,
        provider_id=provider,
    ).total_price


@pytest.mark.parametrize(
    ("name", "path", "ref", "provider"),
    [
        ("openai/gpt-4.1-mini", "/v1", "gpt-4.1-mini", "openai"),
        ("openai-responses/gpt-4.1-mini", "/v1", "gpt-4.1-mini", "openai"),
        ("anthropic/claude-haiku-4-5", "", "claude-haiku-4-5", "anthropic"),
        ("gemini/gemini-2.5-flash", "", "gemini-2.5-flash", "google"),
    ],
)
def test_each_providers_usage_is_priced_and_logged(
    emulator: Emulator, name: str, path: str, ref: str, provider: str
) -> None:
    PRICES.clear()
    emulator.add(Reply(["Hello there!"], usage=Usage(4000, 30, cached_input_tokens=3000)))
    with cf.get_model(name, key="sk-test-key", base_url=emulator.base_url + path) as model:
        chain = model.chain("Hi")
        assert chain.text() == "Hello there!"
    call = chain.responses[0]
    assert call.usage.additional_counts.get("cache_read_input_tokens") == 3000
    cost = priced(call.usage, ref, provider)
    assert call.usage.cost == cost == chain.usage.cost
    fresh = priced(UsageDetails(4000, 30), ref, provider)
    assert cost != fresh  # cache reads are not priced as fresh input
    with Store() as store:
        (row,) = store.recent(1)
    assert row.usage is not None and row.usage.cost == cost


def test_a_fallback_models_calls_are_priced_at_its_own_price(emulator: Emulator) -> None:
    """The first model fails (HTTP 500, its retry too), Anthropic answers: each call costs what its
    own model charges, and `by_model` splits the chain's cost between them."""
    from chainform.testing import tool_call
    from chainform.testing.emulator import Fault

    def weather(city: str) -> str:
        """Current weather for a city."""
        return f"{city}: 21"

    emulator.add(tool_call("weather", city="Paris"), Fault(500), Fault(500), "Sunny, 21.")
    second = cf.get_model("anthropic/claude-haiku-4-5", key="sk-ant-test", base_url=emulator.base_url)
    first = cf.get_model(
        "openai/gpt-4.1-mini",
        key="sk-test",
        base_url=emulator.base_url + "/v1",
        max_retries=1,
        fallback=[second],
    )
    chain = first.chain("Weather in Paris?", tools=[weather], stream=False, log=False)
    assert chain.text() == "Sunny, 21."
    calls = chain.responses
    assert [c.model for c in calls] == [
        "openai/gpt-4.1-mini",
        "openai/gpt-4.1-mini",
        "anthropic/claude-haiku-4-5",
    ]
    assert calls[0].usage.cost == priced(calls[0].usage, "gpt-4.1-mini", "openai")
    assert calls[1].usage.cost == 0  # failed before answering: nothing reported, nothing counted
    assert calls[2].usage.cost == priced(calls[2].usage, "claude-haiku-4-5", "anthropic")
    by_model = chain.usage.by_model
    assert by_model["anthropic/claude-haiku-4-5"].cost == calls[2].usage.cost
    assert chain.usage.cost == calls[0].usage.cost + calls[2].usage.cost
