"""Money on the command line: `--price IN/OUT`, `--max-cost USD`, how a cost reads (`-u`, `logs`,
the map summary), and `chainform logs cost` (the log's costs summed by model, day or conversation)."""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

import click

from chainform.cli._output import echo_json, echo_untrusted

if TYPE_CHECKING:
    from chainform.store import Store

F = TypeVar("F", bound=Callable[..., Any])


class PriceType(click.ParamType["tuple[Decimal, Decimal]"]):
    """`--price IN/OUT` (USD per million tokens) as two Decimals; a bad one is a usage error."""

    name = "IN/OUT"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[Decimal, Decimal]:
        from chainform.errors import PricingError
        from chainform.pricing import parse_price

        try:
            return parse_price(value)
        except PricingError as exc:
            self.fail(str(exc), param, ctx)


class CostType(click.ParamType[Decimal]):
    """`--max-cost USD` as a Decimal; negative or not a number is a usage error."""

    name = "USD"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Decimal:
        from chainform.errors import PricingError
        from chainform.pricing import as_cost

        try:
            return as_cost(value, "--max-cost")
        except PricingError as exc:
            self.fail(str(exc), param, ctx)


PRICE_HELP = "Price of the model in USD per million tokens, input/output (e.g. 0.15/0.60): for models genai-prices does not know."


def money_options(max_cost_help: str) -> Callable[[F], F]:
    """`--price IN/OUT` and `--max-cost USD` (what the cap does is the command's to say)."""

    def add(command: F) -> F:
        command = click.option("--max-cost", type=CostType(), help=max_cost_help)(command)
        return click.option("--price", type=PriceType(), help=PRICE_HELP)(command)

    return add


def apply_price(model_name: str, price: tuple[Decimal, Decimal]) -> None:
    """Price `model_name` at --price for this run."""
    from chainform.pricing import set_price

    set_price(model_name, str(price[0]), str(price[1]))


def cost_text(cost: Decimal | None, reason: str | None = None) -> str:
    """ "$0.0012", or "cost unknown (why)"."""
    from chainform.pricing import usd

    if cost is not None:
        return usd(cost)
    return f"cost unknown ({reason})" if reason else "cost unknown"


def since_time(value: str | None) -> float | None:
    """`--since`: a date (YYYY-MM-DD[THH:MM], local time) or a span back from now (7d, 12h)."""
    if value is None:
        return None
    span = re.fullmatch(r"\s*(\d+)\s*([dh])\s*", value)
    if span:
        return time.time() - int(span[1]) * (86400 if span[2] == "d" else 3600)
    try:
        return dt.datetime.fromisoformat(value.strip()).timestamp()
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is neither a date (YYYY-MM-DD) nor a span such as 7d or 12h", param_hint="--since"
        ) from None


@dataclass
class CostTotal:
    """The calls of one group: how many, what the priced ones cost, how many had no price."""

    key: dict[str, str]
    calls: int = 0
    known: Decimal = field(default_factory=Decimal)
    unpriced: int = 0

    @property
    def cost(self) -> Decimal | None:
        """The group's cost; None when any of its calls had no price."""
        return None if self.unpriced else self.known

    def to_dict(self) -> dict[str, Any]:
        cost = self.cost
        return {
            **self.key,
            "calls": self.calls,
            "cost": None if cost is None else str(cost),
            "priced_cost": str(self.known),
            "unpriced_calls": self.unpriced,
        }


def cost_totals(store: Store, by: tuple[str, ...], since: float | None = None) -> list[CostTotal]:
    """One CostTotal per group of `by` (model, day, conversation), dearest first, for calls since then.

    Costs are logged as exact decimal text, so they are summed here as Decimals rather than by SQLite
    (whose SUM would add them as floats). A call logged with no cost (its price was unknown, or it was
    logged before costs were) is counted apart, never as 0."""
    sql = "SELECT model, created_at, conversation_id, cost FROM responses"
    args: list[Any] = []
    if since is not None:
        sql += " WHERE created_at >= ?"
        args.append(since)
    totals: dict[tuple[str, ...], CostTotal] = {}
    with store.read() as db:
        for model, created_at, conversation, cost in db.execute(sql, args):
            values = {
                "model": model,
                "day": dt.datetime.fromtimestamp(created_at).date().isoformat(),
                "conversation": conversation,
            }
            key = {name: values[name] for name in by}
            total = totals.setdefault(tuple(key.values()), CostTotal(key))
            total.calls += 1
            if cost is None:
                total.unpriced += 1
            else:
                total.known += Decimal(cost)
    return sorted(totals.values(), key=lambda t: (-t.known, *t.key.values()))


@click.command(name="cost")
@click.option(
    "--by",
    "groups",
    type=click.Choice(["model", "day", "conversation"]),
    multiple=True,
    help="Group by model (default), day or conversation; repeat to group by several.",
)
@click.option("--since", help="Only calls since a date (YYYY-MM-DD) or a span back from now (7d, 12h).")
@click.option("--json", "as_json", is_flag=True, help="Output JSON: one object per group.")
def logs_cost(groups: tuple[str, ...], since: str | None, as_json: bool) -> None:
    """What the logged calls cost, summed by model, day or conversation (dearest first)."""
    from chainform.pricing import usd
    from chainform.store import Store

    by = tuple(dict.fromkeys(groups)) or ("model",)
    with Store() as store:
        totals = cost_totals(store, by, since_time(since))
    if as_json:
        echo_json([t.to_dict() for t in totals])
        return
    if not totals:
        click.echo("No calls logged" + (" since then." if since else "."))
        return
    for total in totals:
        label = " · ".join(total.key.values())
        cost = usd(total.known) if not total.unpriced else f"{usd(total.known)} + {total.unpriced} unpriced"
        echo_untrusted(f"{cost:>24}  {total.calls:>6} calls  {label}")  # names as the log holds them
    known = sum((t.known for t in totals), Decimal(0))
    unpriced = sum(t.unpriced for t in totals)
    click.echo(
        f"Total {usd(known)} over {sum(t.calls for t in totals)} calls"
        + (f"; {unpriced} calls had no price (not counted)" if unpriced else "")
    )
