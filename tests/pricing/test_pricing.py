"""Costs of calls and chains: every figure is genai-prices' own for the recorded usage."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price
from pydantic import BaseModel

import chainform as cf
from chainform.errors import BudgetExceededError, PricingError
from chainform.pricing import PRICES, Budget, Meter, Prices, as_cost, parse_price, usd
from chainform.pricing._table import MAX_TOKENS
from chainform.testing import ScriptedClient, tool_call
from chainform.types import ChatResponse, Message, UsageDetails

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

MODEL = "openai/gpt-4.1-mini"


def expected(
    usage: UsageDetails, ref: str = "gpt-4.1-mini", provider: str = "openai", **kw: object
) -> Decimal:
    """genai-prices' price of one call's usage (input includes cache reads and writes)."""
    counts = usage.additional_counts
    priced = Usage(
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        cache_read_tokens=counts.get("cache_read_input_tokens", 0),
        cache_write_tokens=counts.get("cache_creation_input_tokens", 0),
    )
    return calc_price(priced, ref, provider_id=provider, **kw).total_price  # type: ignore[arg-type]


def get_weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: sunny"


@pytest.fixture(autouse=True)
def fresh_prices() -> None:
    PRICES.clear()


@pytest.mark.parametrize(
    ("model", "ref", "provider"),
    [
        ("openai/gpt-4.1-mini", "gpt-4.1-mini", "openai"),
        ("gpt-4o-mini", "gpt-4o-mini", "openai"),  # an alias
        ("anthropic/claude-sonnet-4-5", "claude-sonnet-4-5", "anthropic"),  # tiered prices
        ("gemini/gemini-2.5-flash", "gemini-2.5-flash", "google"),
    ],
)
@pytest.mark.parametrize(
    "usage",
    [
        UsageDetails(1200, 300),
        UsageDetails(5000, 40, additional_counts={"cache_read_input_tokens": 4000}),
        UsageDetails(
            9000, 10, additional_counts={"cache_creation_input_tokens": 2000, "cache_read_input_tokens": 1}
        ),
        UsageDetails(250_000, 1000),  # past Claude's and Gemini's first tier, where there is one
        UsageDetails(0, 0),
    ],
)
def test_a_rate_prices_usage_as_genai_prices_does(
    model: str, ref: str, provider: str, usage: UsageDetails
) -> None:
    cost, reason = PRICES.rate(model).cost(usage)
    assert reason is None
    assert cost == expected(usage, ref, provider)


def test_batch_calls_are_priced_at_the_batch_price() -> None:
    usage = UsageDetails(10_000, 2_000, additional_counts={"cache_read_input_tokens": 1000})
    batch = PRICES.rate(MODEL, batch=True).cost(usage)[0]
    live = PRICES.rate(MODEL).cost(usage)[0]
    assert batch == expected(usage, price_context={"processing": "batch"})
    assert batch is not None and live is not None and batch < live


def test_unknown_prices_are_none_with_the_reason_never_zero() -> None:
    for model, says in (
        ("ollama/llama3", "a model of 'ollama'"),
        ("scripted", "not a model name chainform knows"),
        ("openai/gpt-no-such-model", "genai-prices"),
    ):
        rate = PRICES.rate(model)
        cost, reason = rate.cost(UsageDetails(10, 10))
        assert cost is None and not rate.known
        assert reason is not None and says in reason and "--price" in reason
    free = PRICES.rate("local")
    assert free.cost(UsageDetails(10_000, 500)) == (Decimal(0), None)
    # usage the provider never reported is unknown, not free
    assert PRICES.rate(MODEL).cost(None)[0] is None
    assert PRICES.rate(MODEL).cost(UsageDetails())[0] is None


def test_your_prices_come_first_and_are_per_million_tokens(home: Path) -> None:
    usage = UsageDetails(2_000_000, 1_000_000)
    cf.pricing.set_price("ollama/llama3", "0.2", "0.6")
    assert PRICES.rate("ollama/llama3").cost(usage) == (Decimal("1.0"), None)
    home.mkdir(parents=True, exist_ok=True)
    (home / "prices.json").write_text(
        json.dumps(
            {
                "vllm/my-model": "1/2",
                "ollama/qwen": {"input": 0.5, "output": 1, "cache_read": 0.05},
            }
        )
    )
    table = Prices()
    assert table.rate("vllm/my-model").cost(usage) == (Decimal(4), None)
    cached = UsageDetails(2_000_000, 0, additional_counts={"cache_read_input_tokens": 1_000_000})
    assert table.rate("ollama/qwen").cost(cached) == (Decimal("0.55"), None)


def test_a_broken_prices_file_prices_nothing_and_says_why(home: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "prices.json").write_text(json.dumps({"vllm/m": {"input": -1, "output": 1}}))
    rate = Prices().rate("vllm/m")
    assert rate.unknown is not None and "prices.json is unusable" in rate.unknown


@pytest.mark.parametrize("bad", ["-1", "abc", "nan", "inf", "", True, None, [1]])
def test_bad_amounts_are_pricing_errors(bad: object) -> None:
    with pytest.raises(PricingError):
        as_cost(bad)


@pytest.mark.parametrize("bad", ["0.1", "1/2/3", "a/b", "-1/2", "1/-2", "/"])
def test_bad_prices_are_pricing_errors(bad: str) -> None:
    with pytest.raises(PricingError):
        parse_price(bad)


@pytest.mark.parametrize(("given", "out"), [("-1", "1"), ("x", "1"), ("1", "nan")])
def test_set_price_refuses_what_is_no_price(given: str, out: str) -> None:
    with pytest.raises(PricingError):
        cf.pricing.set_price("ollama/x", given, out)


def test_usd_reads_plainly() -> None:
    assert usd(Decimal("1E-7")) == "$0.0000001"
    assert usd(Decimal("0.0000120")) == "$0.000012"


# -- chains ---------------------------------------------------------------------------------------


class Answer(BaseModel):
    city: str


def test_a_chains_cost_is_the_sum_of_its_calls_by_purpose() -> None:
    client = ScriptedClient([tool_call("get_weather", city="Paris"), "not json", '{"city": "Paris"}'])
    chain = cf.Model(client, name=MODEL).chain("Weather?", tools=[get_weather], schema=Answer, log=False)
    assert chain.value == Answer(city="Paris")
    calls = chain.responses
    assert [c.purpose for c in calls] == ["chain", "chain", "retry"]
    for call in calls:
        assert call.usage.cost == expected(call.usage)
    usage = chain.usage
    assert usage.cost == sum(expected(c.usage) for c in calls)
    assert usage.by_purpose["retry"].cost == expected(calls[2].usage)
    assert usage.to_dict()["cost"] == str(usage.cost)


def test_subagents_costs_count_by_agent() -> None:
    sub = ScriptedClient(["Rome is sunny"])
    agent = cf.Agent(cf.Model(sub, name="anthropic/claude-sonnet-4-5"), name="weather", description="Weather")
    parent = ScriptedClient([tool_call("weather", task="Rome?"), "Sunny."])
    chain = cf.Model(parent, name=MODEL).chain("Rome?", tools=[agent], log=False)
    assert chain.text() == "Sunny."
    sub_calls = chain.agent_runs[0].calls
    sub_cost = sum(expected(c.usage, "claude-sonnet-4-5", "anthropic") for c in sub_calls)
    assert chain.usage.by_agent["weather"].cost == sub_cost
    assert chain.usage.cost == sum(expected(c.usage) for c in chain.responses) + sub_cost


def test_one_unknown_call_makes_the_chain_cost_unknown() -> None:
    chain = cf.Model(ScriptedClient(["hi"]), name="ollama/llama3").chain("hi", log=False)
    assert chain.usage.cost is None
    assert chain.usage.cost_reason is not None and "ollama" in chain.usage.cost_reason
    assert chain.usage.to_dict()["cost"] is None


def test_max_cost_ends_a_chain_between_calls_with_what_was_spent() -> None:
    client = ScriptedClient([tool_call("get_weather", city="Paris")] * 5 + ["done"])
    first = cf.Model(ScriptedClient([tool_call("get_weather", city="Paris")]), name=MODEL)
    one_call = first.chain("Weather?", tools=[get_weather], chain_limit=1, log=False).responses[0]
    cap = expected(one_call.usage) * Decimal("1.5")  # more than one call, less than two
    chain = cf.Model(client, name=MODEL).chain("Weather?", tools=[get_weather], max_cost=cap, log=False)
    with pytest.raises(BudgetExceededError) as caught:
        chain.text()
    err = caught.value
    assert len(client.requests) == 2  # the third call was never made
    assert err.spent == sum(expected(c.usage) for c in err.responses) >= cap
    assert err.max_cost == cap and len(err.responses) == 2


def test_max_cost_is_refused_when_the_price_is_unknown_and_checked_for_sense() -> None:
    chain = cf.Model(ScriptedClient(["hi"]), name="ollama/llama3").chain("hi", max_cost=1, log=False)
    with pytest.raises(PricingError, match="ollama"):
        chain.text()
    with pytest.raises(PricingError):
        cf.Model(ScriptedClient(["hi"]), name=MODEL).chain("hi", max_cost=-1)
    with pytest.raises(PricingError):
        cf.Model(ScriptedClient(["hi"]), name=MODEL).chain("hi", max_cost="a lot")


def test_a_meter_counts_a_call_that_never_answered_as_nothing() -> None:
    meter = Meter(MODEL, Decimal(1))
    assert meter.priced(None).cost == 0
    answered = ChatResponse([Message.assistant("x")], usage_details=UsageDetails(10, 1))
    assert meter.priced(answered).cost == expected(UsageDetails(10, 1))
    unreported = meter.priced(ChatResponse([Message.assistant("x")]))
    assert unreported.cost is None and unreported.cost_reason
    with pytest.raises(BudgetExceededError, match="cannot be held"):
        meter.check([])


def test_a_budget_admits_rows_while_the_estimate_fits() -> None:
    budget = Budget("1.0")
    assert budget.room() == "go"
    budget.start()
    assert budget.room() == "wait"  # one row alone until a cost is known
    budget.finish(UsageDetails(cost=Decimal("0.3")))
    for _ in range(2):
        assert budget.room() == "go"
        budget.start()
    assert budget.room() == "wait"  # 0.3 spent + 2 in flight * 0.3 + 0.3 > 1
    budget.finish(UsageDetails(cost=Decimal("0.3")))
    assert budget.room() == "wait"  # 0.6 + 1 in flight: no room for one more yet
    budget.finish(UsageDetails(cost=Decimal("0.05")))
    assert budget.room() == "go"  # 0.65 + 0.3 fits
    budget.start()
    budget.finish(UsageDetails(cost=Decimal("0.3")))
    assert budget.room() == "stop" and budget.reached
    assert budget.spent == Decimal("0.95")  # within one row's cost of the cap
    assert "reached" in budget.summary()


def test_a_chains_meter_looks_its_price_up_on_a_helper_thread() -> None:
    import time

    assert PRICES.known(MODEL) is None
    meter = Meter(MODEL)  # the first lookup imports genai-prices' data: started, not waited for
    deadline = time.monotonic() + 30
    while PRICES.known(MODEL) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert PRICES.known(MODEL) is not None
    assert meter.rate is PRICES.known(MODEL)
    assert Meter(MODEL).rate is meter.rate  # kept: no second lookup


@pytest.mark.parametrize(
    "bad", ["1e999999999", "1e309", "1_000", "-0", "1e-200000", "1" * 41, "+1", " 1 2", 1e309, 10**10]
)
def test_amounts_that_break_arithmetic_or_printing_are_refused_up_front(bad: object) -> None:
    with pytest.raises(PricingError):
        as_cost(bad)
    with pytest.raises(PricingError):
        parse_price(f"{bad}/1")


@pytest.mark.parametrize("good", ["0", "0.15", ".5", "1e-6", "2E3", "1000000000"])
def test_plain_amounts_are_taken(good: str) -> None:
    assert as_cost(good) == Decimal(good)


@pytest.mark.parametrize(
    "content",
    [
        json.dumps({"vllm/m": "1e999999999/1"}),
        json.dumps({"vllm/m": {"input": "1e999999999", "output": 1}}),
        "[" * 200_000 + "]" * 200_000,
        json.dumps({f"vllm/other-{n}": "1/2" for n in range(200_000)}),  # over 5 MB
    ],
    ids=["huge-price", "huge-input", "nested-200k", "5mb"],
)
def test_a_prices_file_that_breaks_arithmetic_leaves_the_cost_unknown_with_why(
    home: Path, content: str
) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "prices.json").write_text(content)
    rate = Prices().rate("vllm/m")
    assert rate.unknown is not None and "prices.json is unusable" in rate.unknown
    cost, reason = rate.cost(UsageDetails(10, 10))
    assert cost is None and reason is not None


def test_a_cost_too_large_to_compute_is_unknown_with_why_not_an_exception() -> None:
    cf.pricing.set_price("vllm/big", "1000000000", "1")
    rate = PRICES.rate("vllm/big")
    for usage in (
        UsageDetails(10**999_999, 1),
        UsageDetails(1, -(10**16)),
        UsageDetails(1, 1, additional_counts={"cache_read_input_tokens": MAX_TOKENS + 1}),
    ):
        cost, reason = rate.cost(usage)
        assert cost is None and reason is not None and "cannot be computed: over 1e+15 tokens" in reason
    # the largest usage priced, at the largest price taken, is computed exactly
    cost, reason = rate.cost(UsageDetails(MAX_TOKENS, MAX_TOKENS))
    assert reason is None and cost == Decimal(10**9) * MAX_TOKENS / 10**6 + MAX_TOKENS / Decimal(10**6)
