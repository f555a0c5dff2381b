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
