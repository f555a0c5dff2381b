"""What calls cost: prices from genai-prices (or yours), a cost on every usage, caps on spending.

`PRICES.rate(model)` says how a model's calls are priced; the chain engine prices each call
through a `Meter` (`usage.cost`), and a map run holds its rows to a `Budget`. Costs are exact
`Decimal`s in USD; an unknown price is `None` with a reason, never 0.
"""

from __future__ import annotations

from chainform.pricing._budget import Budget, Meter
from chainform.pricing._table import PRICES, PRICES_FILE, Cost, Prices, Rate, as_cost, parse_price, usd


def set_price(model: str, input: float | str, output: float | str, **cache: float | str) -> None:
    """Price `model` at `input`/`output` USD per million tokens (`cache_read=`, `cache_write=`
    too), for the models genai-prices does not know (self-hosted, fine-tuned, negotiated)."""
    PRICES.set_price(model, input, output, **cache)


__all__ = [
    "PRICES",
    "PRICES_FILE",
    "Budget",
    "Cost",
    "Meter",
    "Prices",
    "Rate",
    "as_cost",
    "parse_price",
    "set_price",
    "usd",
]
