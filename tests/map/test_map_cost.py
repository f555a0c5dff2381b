"""Costs and caps of map runs: each row's cost, `max_cost` stopping within one row of the cap,
the rest left for --resume, and a run whose price is unknown refused at once."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from click.testing import CliRunner
from genai_prices import Usage, calc_price
from map_helpers import MODEL, answer_text, map_argv, read_lines, write_orders

from chainform.cli import cli
from chainform.errors import PricingError
from chainform.models import Model
from chainform.pricing import PRICES, Budget
from chainform.store import Store
from chainform.testing import ScriptedClient
from chainform.testing.emulator import Emulator
from chainform.types import UsageDetails


def price(usage: UsageDetails) -> Decimal:
    tokens = Usage(input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0)
    return calc_price(tokens, "gpt-4.1-mini", provider_id="openai").total_price


def echo(messages, options):
    return "echo " + messages[-1].text


@pytest.fixture(autouse=True)
def fresh_prices() -> None:
    PRICES.clear()


def test_each_rows_cost_is_its_chains_and_the_cap_stops_within_one_row() -> None:
    rows = [f"row {i} " + "word " * (i % 7) for i in range(60)]  # rows of different costs
    every = list(Model(ScriptedClient([echo] * 60), name=MODEL).map(rows, log=False))
    costs = {r.key: r.usage.cost for r in every}
    for r in every:
        assert r.usage.cost == price(r.usage)
    cap = sum(costs.values(), Decimal(0)) / 3
    budget = Budget(cap)
    capped = list(
        Model(ScriptedClient([echo] * 60), name=MODEL).map(rows, concurrency=6, max_cost=budget, log=False)
    )
    spent = sum((r.usage.cost for r in capped), Decimal(0))
    assert budget.reached and budget.spent == spent and budget.rows == len(capped)
    assert 0 < len(capped) < 60
    assert cap - max(costs.values()) < spent <= cap  # within one row's cost of the cap


def test_a_map_whose_price_is_unknown_refuses_a_cap() -> None:
    model = Model(ScriptedClient([echo]), name="ollama/llama3")
    with pytest.raises(PricingError, match="ollama"):
        model.map(["a"], max_cost=1)
    with pytest.raises(PricingError):
        Model(ScriptedClient([echo]), name=MODEL).map(["a"], max_cost="-0.5")
    results = list(model.map(["a"], log=False))  # without a cap it runs; its cost is unknown
    assert results[0].ok and results[0].usage.cost is None


def invoke(*args: str):
    return CliRunner().invoke(cli, ["map", *args], catch_exceptions=False)


def test_cli_max_cost_leaves_the_rest_for_resume_and_says_so(tmp_path: Path, emulator: Emulator) -> None:
    inp = write_orders(tmp_path / "in.jsonl", 40)
    out = tmp_path / "out.jsonl"
    emulator.default = answer_text
    one = invoke(
        *map_argv(write_orders(tmp_path / "one.jsonl", 1), tmp_path / "one.out", emulator.base_url, None)
    )
    assert one.exit_code == 0, one.output
    with Store() as store:
        (row,) = store.recent(1)
    assert row.usage is not None and row.usage.cost == price(row.usage)
    cap = row.usage.cost * 10
    result = invoke(
        *map_argv(inp, out, emulator.base_url, None, "--max-cost", str(cap), "--concurrency", "4")
    )
    assert result.exit_code == 0, result.output
    done = read_lines(out)
    assert 0 < len(done) < 40
    assert f"max cost ${cap.normalize():f} reached" in result.stderr and "--resume" in result.stderr
    with Store() as store:
        logged = [
            r for r in store.recent(None) if r.conversation_name and r.conversation_name.startswith("map")
        ]
    run_rows = [r for r in logged if r.conversation_name.split()[1] == done[0]["_map"]["run"]]
    spent = sum((r.usage.cost for r in run_rows if r.usage and r.usage.cost is not None), Decimal(0))
    assert spent <= cap and cap - spent < max(r.usage.cost for r in run_rows if r.usage and r.usage.cost)
    assert f"${spent.normalize():f}" in result.stderr
    again = invoke(*map_argv(inp, out, emulator.base_url, None, "--resume"))
    assert again.exit_code == 0, again.output
    keys = sorted(int(line["_map"]["key"]) for line in read_lines(out))
    assert keys == list(range(40))  # every row once


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--max-cost", "-1"), "--max-cost"),
        (("--max-cost", "lots"), "--max-cost"),
        (("--price", "1"), "IN/OUT"),
        (("--price", "a/1"), "input price"),
        (("-m", "ollama/llama3", "--max-cost", "1"), "price"),
    ],
)
def test_cli_bad_caps_and_prices_are_one_line_errors(
    tmp_path: Path, args: tuple[str, ...], says: str
) -> None:
    inp = write_orders(tmp_path / "in.jsonl", 2)
    result = CliRunner().invoke(cli, ["map", str(inp), "-o", str(tmp_path / "o.jsonl"), *args])
    assert result.exit_code == 2, result.output
    assert "Error" in result.output and says in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "o.jsonl").exists() or not (tmp_path / "o.jsonl").read_text()


def test_cli_price_prices_a_self_hosted_model(tmp_path: Path, emulator: Emulator) -> None:
    inp = write_orders(tmp_path / "in.jsonl", 3)
    emulator.default = answer_text
    argv = [str(inp), "-o", str(tmp_path / "o.jsonl"), "-m", "vllm/my-model", "--prompt", "{text}"]
    argv += ["--base-url", emulator.base_url + "/v1", "--key", "k", "--price", "1/2", "--max-cost", "5"]
    result = invoke(*argv)
    assert result.exit_code == 0, result.output
    with Store() as store:
        rows = store.recent(None)
    assert len(rows) == 3
    for row in rows:
        assert (
            row.usage is not None
            and row.usage.cost
            == (Decimal(row.usage.input_tokens or 0) * 1 + Decimal(row.usage.output_tokens or 0) * 2)
            / 1_000_000
        )
    assert json.loads((tmp_path / "o.jsonl").read_text().splitlines()[0])["value"].startswith("done")


def test_cli_an_unknown_price_is_said_once_in_the_summary_never_as_zero(
    tmp_path: Path, emulator: Emulator
) -> None:
    inp = write_orders(tmp_path / "in.jsonl", 5)
    emulator.default = answer_text
    argv = [str(inp), "-o", str(tmp_path / "o.jsonl"), "-m", "vllm/my-model", "--prompt", "{text}"]
    result = invoke(*argv, "--base-url", emulator.base_url + "/v1", "--key", "k")
    assert result.exit_code == 0, result.output
    assert result.stderr.count("cost unknown (no price for 'vllm/my-model'") == 1
    assert "$0" not in result.stderr
    assert all(line["_map"]["cost"] is None for line in read_lines(tmp_path / "o.jsonl"))


class WatchedBudget(Budget):
    """A Budget that remembers the most rows it ever had in flight."""

    most = 0

    def start(self) -> None:
        super().start()
        self.most = max(self.most, self.in_flight)


def priced_rows(emu: Emulator, tokens: dict[int, int], cap: Decimal, concurrency: int):
    """Map `len(tokens)` rows at the emulator, row n answering with `tokens[n]` tokens each way."""
    from chainform import get_model
    from chainform.testing.emulator import Reply, Usage

    emu.default = lambda request: Reply(["ok"], usage=Usage(tokens[order(request)], tokens[order(request)]))
    model = get_model(MODEL, base_url=emu.base_url + "/v1", key="sk-test", profile="openai")
    budget = WatchedBudget(cap)
    rows = [f"order {n}" for n in range(len(tokens))]
    results = list(model.map(rows, concurrency=concurrency, max_cost=budget, log=False, ordered=True))
    return results, budget


def order(request) -> int:
    from map_helpers import order_number

    return order_number(request)


def row_cost(tokens: int) -> Decimal:
    return price(UsageDetails(tokens, tokens))


def test_cheap_then_dear_rows_overshoot_the_cap_by_at_most_the_rows_in_flight(emulator: Emulator) -> None:
    concurrency = 4
    tokens = {n: (10 if n < 6 else 100_000) for n in range(40)}  # 6 cheap rows, then dear ones
    cap = row_cost(100_000) * 2
    results, budget = priced_rows(emulator, tokens, cap, concurrency)
    spent = sum((r.usage.cost for r in results), Decimal(0))
    assert budget.reached and budget.most <= concurrency  # never more approved than workers
    assert spent <= cap + concurrency * row_cost(100_000)  # the rows in flight when it was crossed
    assert len(results) < 40


@pytest.mark.parametrize("seed", range(4))
def test_random_costs_overshoot_the_cap_by_at_most_the_rows_in_flight(emulator: Emulator, seed: int) -> None:
    import random

    draw = random.Random(seed)
    concurrency = 3
    tokens = {n: draw.choice([10, 100, 1_000, 50_000]) for n in range(60)}
    cap = row_cost(50_000) * 3
    results, budget = priced_rows(emulator, tokens, cap, concurrency)
    spent = sum((r.usage.cost for r in results), Decimal(0))
    assert budget.most <= concurrency
    assert spent <= cap + concurrency * row_cost(50_000)


def test_a_batch_runs_rounds_grow_with_the_rows_done_so_a_cheap_first_row_cannot_approve_all(
    emulator: Emulator,
) -> None:
    from chainform import get_model
    from chainform.testing.emulator import Reply, Usage

    tokens = {n: (10 if n == 0 else 100_000) for n in range(40)}  # one cheap row, then dear ones
    emulator.default = lambda request: Reply(
        ["ok"], usage=Usage(tokens[order(request)], tokens[order(request)])
    )
    model = get_model(MODEL, base_url=emulator.base_url + "/v1", key="sk-test", profile="openai")
    dear = PRICES.rate(MODEL, batch=True).cost(UsageDetails(100_000, 100_000))[0]
    budget = WatchedBudget(dear * 10)
    rows = [f"order {n}" for n in range(40)]
    results = list(model.map(rows, batch=True, batch_poll=0, max_cost=budget, log=False))
    sizes = [len(emulator.batches.batches[b].lines) for b in emulator.batches.created]
    spent = sum((r.usage.cost for r in results), Decimal(0))
    assert sizes[0] == 1 and all(
        b <= 2 * a for a, b in zip([1, *sizes], sizes, strict=False)
    )  # 1, 1, 2, 4, ...
    assert budget.reached and spent <= budget.max_cost + sizes[-1] * dear and len(results) < 40
