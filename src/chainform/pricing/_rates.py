"""One model's prices as a `Rate`: what a call's usage costs, by genai-prices' own figures.

Why the probes: genai-prices prices a usage in some 45 us (it checks its units and splits the
usage every time), a measurable part of a chain on a fast server if paid on every call. Prices
per token are linear in the counts, so a Rate asks genai-prices once per model what one token of
each kind costs (fresh input, a cache read, a cache write, output) and what a call costs with no
tokens at all (a per-request fee), and then prices a call as their weighted sum: the same
figures, exactly (Decimal), in about a microsecond. Tiered prices (a higher rate past a context
size) are linear only below their first tier; a call past it is priced by genai-prices itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from chainform.types import UsageDetails

ZERO = Decimal(0)
CACHE_READ = "cache_read_input_tokens"  # the additional counts every adapter names alike
CACHE_WRITE = "cache_creation_input_tokens"


@dataclass(frozen=True)
class Rate:
    """How one model's calls are priced: `price` (a genai-prices ModelPrice; None when the model
    costs nothing, as the embedded one), or `unknown` saying why there is no price."""

    model: str
    source: str
    price: Any = None
    unknown: str | None = None
    linear: tuple[Decimal, Decimal, Decimal, Decimal, Decimal] | None = None
    linear_upto: int | None = None  # input tokens the linear form holds for (None: any)

    @classmethod
    def of(cls, model: str, source: str, price: Any) -> Rate:
        """The Rate of a genai-prices ModelPrice, probed once into its per-token figures."""
        from genai_prices.types import TieredPrices

        starts = [t.start for v in vars(price).values() if isinstance(v, TieredPrices) for t in v.tiers]
        base = _exact(price, 0, 0, 0, 0)
        per_token = (
            _exact(price, 1, 0, 0, 0) - base,
            _exact(price, 1, 1, 0, 0) - base,
            _exact(price, 1, 0, 1, 0) - base,
            _exact(price, 0, 0, 0, 1) - base,
        )
        return cls(model, source, price, linear=(base, *per_token), linear_upto=min(starts, default=None))

    @classmethod
    def free(cls, model: str, source: str) -> Rate:
        return cls(model, source)

    @classmethod
    def missing(cls, model: str, reason: str) -> Rate:
        return cls(model, "", unknown=reason)

    @property
    def known(self) -> bool:
        return self.unknown is None

    def cost(self, usage: UsageDetails | None) -> tuple[Decimal | None, str | None]:
        """(cost in USD, None) of one call's usage; (None, why) when it cannot be priced."""
        if self.unknown is not None:
            return None, self.unknown
        if self.price is None:
            return ZERO, None
        if usage is None or (usage.input_tokens is None and usage.output_tokens is None):
            return None, f"the provider reported no usage for a call of {self.model}"
        try:
            return self._cost(usage), None
        except ArithmeticError as exc:  # a price or a count too large for the arithmetic
            return None, f"the cost of a call of {self.model} cannot be computed ({type(exc).__name__})"

    def _cost(self, usage: UsageDetails) -> Decimal:
        counts = usage.additional_counts
        read, written = counts.get(CACHE_READ, 0), counts.get(CACHE_WRITE, 0)
        tokens_in, tokens_out = usage.input_tokens or 0, usage.output_tokens or 0
        upto = self.linear_upto
        if self.linear is None or (upto is not None and tokens_in > upto):
            return _exact(self.price, max(tokens_in, read + written), read, written, tokens_out)
        base, fresh, cached, cache_write, output = self.linear
        plain = max(tokens_in - read - written, 0)
        return base + fresh * plain + cached * read + cache_write * written + output * tokens_out


def _exact(price: Any, tokens_in: int, read: int, written: int, tokens_out: int) -> Decimal:
    """genai-prices' price of one usage (input counts cache reads and writes, as it expects)."""
    from genai_prices.types import Usage

    usage = Usage(
        input_tokens=tokens_in,
        cache_read_tokens=read,
        cache_write_tokens=written,
        output_tokens=tokens_out,
    )
    total: Decimal = price.calc_price(usage)["total_price"]
    return total
