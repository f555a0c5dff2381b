"""Costs on the command line: `-u`, `--price`, `--max-cost`, `logs` and `logs cost` (scripted model)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest
from cli_helpers import Scripted
from click.testing import CliRunner
from genai_prices import Usage, calc_price

from chainform.cli import cli
from chainform.pricing import PRICES, usd
from chainform.store import Store
from chainform.testing import tool_call
from chainform.types import UsageDetails

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

MODEL = "openai/gpt-4.1-mini"


def price(usage: UsageDetails | None) -> Decimal:
    assert usage is not None
    tokens = Usage(input_tokens=usage.input_tokens or 0, output_tokens=usage.output_tokens or 0)
    return calc_price(tokens, "gpt-4.1-mini", provider_id="openai").total_price


@pytest.fixture(autouse=True)
def fresh_prices() -> None:
    PRICES.clear()


def logged() -> list:
    with Store() as store:
        return list(reversed(store.recent(None)))


def test_usage_flag_prints_the_chains_cost(run, scripted: Scripted) -> None:
    scripted.script(["Paris is the capital."])
    result = run("Capital of France?", "-m", MODEL, "-u")
    assert result.exit_code == 0, result.stderr
    (row,) = logged()
    assert row.usage.cost == price(row.usage)
    assert f"total, {usd(row.usage.cost)}" in result.stderr


def test_price_prices_a_model_the_database_does_not_know(run, scripted: Scripted) -> None:
    scripted.script(["hi there"])
    result = run("hello", "-m", "ollama/llama3", "--price", "2/4", "-u")
    assert result.exit_code == 0, result.stderr
    (row,) = logged()
    tokens_in, tokens_out = row.usage.input_tokens, row.usage.output_tokens
    assert row.usage.cost == (Decimal(tokens_in) * 2 + Decimal(tokens_out) * 4) / 1_000_000
    assert usd(row.usage.cost) in result.stderr


def test_an_unknown_price_is_said_once_and_logged_as_unknown(run, scripted: Scripted) -> None:
    scripted.script(["hi there"])
    result = run("hello", "-m", "ollama/llama3", "-u")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.count("Cost unknown: no price for 'ollama/llama3'") == 1
    (row,) = logged()
    assert row.usage.cost is None
    shown = run("logs", "-n", "1")
    assert "cost unknown" in shown.stdout


def test_max_cost_ends_the_chain_between_calls(run, scripted: Scripted) -> None:
    scripted.script([tool_call("current_time")] * 4 + ["done"])
    result = run("time?", "-m", MODEL, "-T", "current_time", "--max-cost", "0.0000001")
    assert result.exit_code == 5, result.stderr
    assert "max_cost $0.0000001 reached: 1 call(s) cost" in result.stderr
    assert len(scripted.client.requests) == 1
    assert len(logged()) == 1  # the call made is logged


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--max-cost", "-2"), "--max-cost"),
        (("--max-cost", "free"), "--max-cost"),
        (("--price", "0.1"), "IN/OUT"),
        (("--price", "0.1/-3"), "output price"),
        (("-m", "ollama/llama3", "--max-cost", "1"), "price"),
    ],
)
def test_bad_caps_and_prices_are_usage_errors(scripted: Scripted, args: tuple[str, ...], says: str) -> None:
    scripted.script(["never"])
    result = CliRunner().invoke(cli, ["hello", *args])
    assert result.exit_code == 2, result.stderr
    assert says in result.stderr and "Traceback" not in result.stderr
    assert [line for line in result.stderr.splitlines() if line.startswith("Error")] == [
        result.stderr.splitlines()[-1]
    ]


def test_logs_show_each_calls_cost_and_logs_cost_sums_it(run, scripted: Scripted) -> None:
    scripted.script(["one two", "three", "four five six"])
    assert run("a", "-m", MODEL).exit_code == 0
    assert run("b", "-m", MODEL).exit_code == 0
    assert run("c", "-m", "ollama/llama3").exit_code == 0
    rows = logged()
    priced_rows = [r for r in rows if r.model == MODEL]
    shown = run("logs", "-n", "3").stdout
    for row in priced_rows:
        assert f"`{row.chain_id}` call 0 · " in shown and f" · {usd(row.usage.cost)}\n" in shown
    result = run("logs", "cost", "--json")
    assert result.exit_code == 0, result.stderr
    totals = {t["model"]: t for t in json.loads(result.stdout)}
    total = sum((price(r.usage) for r in priced_rows), Decimal(0))
    assert Decimal(totals[MODEL]["cost"]) == total and totals[MODEL]["calls"] == 2
    assert totals["ollama/llama3"]["cost"] is None and totals["ollama/llama3"]["unpriced_calls"] == 1
    text = run("logs", "cost").stdout
    assert f"Total {usd(total)} over 3 calls; 1 calls had no price (not counted)" in text
    by_conversation = json.loads(run("logs", "cost", "--by", "conversation", "--json").stdout)
    assert sorted(t["conversation"] for t in by_conversation) == sorted({r.conversation_id for r in rows})
    today = dt.date.today().isoformat()
    by_day = json.loads(run("logs", "cost", "--by", "day", "--by", "model", "--json").stdout)
    assert {(t["day"], t["model"]) for t in by_day} == {(today, MODEL), (today, "ollama/llama3")}
    assert json.loads(run("logs", "cost", "--since", "1h", "--json").stdout) != []
    assert json.loads(run("logs", "cost", "--since", "2999-01-01", "--json").stdout) == []
    bad = CliRunner().invoke(cli, ["logs", "cost", "--since", "last week"])
    assert bad.exit_code == 2 and "--since" in bad.stderr


def test_a_prices_file_price_that_breaks_arithmetic_leaves_the_call_logged_cost_unknown(
    run, scripted: Scripted, home
) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "prices.json").write_text(json.dumps({"ollama/llama3": "1e999999999/1"}))
    scripted.script(["hi there"])
    result = run("hello", "-m", "ollama/llama3", "-u")
    assert result.exit_code == 0, result.stderr
    assert "hi there" in result.stdout and "prices.json is unusable" in result.stderr
    (row,) = logged()  # the billed call is in the log
    assert row.usage.cost is None


@pytest.mark.parametrize(
    "args",
    [
        ("--price", "1e999999999/1"),
        ("--price", "1e309/1"),
        ("--price", "1_000/1"),
        ("--max-cost", "1e-200000"),
        ("--max-cost", "-0"),
    ],
)
def test_amounts_that_break_arithmetic_are_usage_errors_before_any_call(
    scripted: Scripted, args: tuple[str, ...]
) -> None:
    scripted.script(["never"])
    result = CliRunner().invoke(cli, ["hello", "-m", "ollama/llama3", *args])
    assert result.exit_code == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and len(errors[0]) < 200, result.stderr
    assert scripted.client.requests == []
