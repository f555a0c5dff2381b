"""Prices: one model's as a `Rate`, and model names to Rates, looked up once per model and kept.

Where a price comes from, first match wins: yours (`--price IN/OUT`, `set_price`), then
`CHAINFORM_HOME/prices.json`, then the embedded model (free), then the snapshot of prices that
genai-prices ships (offline; refreshing it from the network stays opt-in, through genai-prices'
own `UpdatePrices`, after which `PRICES.clear()` drops the rates kept here). A model found in
none of them has an unknown price, never a price of 0.

A `Rate` prices a call's usage by genai-prices' own figures. Why the probes: genai-prices
prices a usage in some 45 us (it checks its units and splits the usage every time), a measurable
part of a chain on a fast server if paid on every call. Prices per token are linear in the counts,
so a Rate asks genai-prices once per model what one token of each kind costs (fresh input, a cache
read, a cache write, output) and what a call costs with no tokens at all (a per-request fee), and
then prices a call as their weighted sum: the same figures, exactly (Decimal), in about a
microsecond. Tiered prices (a higher rate past a context size) are linear only below their first
tier; a call past it is priced by genai-prices itself.
"""

from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal, InvalidOperation
from typing import Any

from chainform.errors import PricingError
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
        counts = [usage.input_tokens, usage.output_tokens, *usage.additional_counts.values()]
        if any(isinstance(n, int) and abs(n) > MAX_TOKENS for n in counts):  # no arithmetic can fail below
            return (
                None,
                f"the cost of a call of {self.model} cannot be computed: over {MAX_TOKENS:.0e} tokens",
            )
        return self._cost(usage), None

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


PRICES_FILE = "prices.json"

# chainform's providers -> genai-prices' provider ids (the others are self-hosted or unpriced)
PROVIDER_IDS = {
    "openai": "openai",
    "openai-responses": "openai",
    "azure": "azure",
    "azure-responses": "azure",
    "anthropic": "anthropic",
    "gemini": "google",
    "bedrock": "aws",
}
FREE = {"local": "the embedded model", "onnx": "an ONNX model run here"}
_KINDS = ("input", "output", "cache_read", "cache_write")


Cost = float | int | str | Decimal
"""An amount of USD as callers give it (a number, or its text)."""

MAX_USD = Decimal(10**9)
"""The largest amount (a price per million tokens, a cap) taken: more breaks no arithmetic, but
is surely a typo."""
MIN_USD = Decimal("1e-12")
"""The smallest amount above 0 taken (a smaller one prints as hundreds of digits)."""
MAX_TOKENS = 10**15
"""The most tokens of one kind a call's usage may report and be priced: a larger count is no real
call's, and pricing it would spend seconds on the arithmetic of a number of a million digits."""
MAX_PRICES_BYTES = 1 << 20
"""The largest prices.json read (1 MiB, some thousands of models); a bigger one prices nothing."""
_MAX_TEXT = 40  # characters of an amount given as text
_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d{1,4})?")


def as_cost(value: Any, what: str = "max_cost") -> Decimal:
    """A non-negative amount of USD from a number or its text (plain digits, an optional
    fraction and exponent: no sign, no `_`), 0 or between `MIN_USD` and `MAX_USD`; PricingError
    otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        raise PricingError(f"{what} must be a number of USD, not {type(value).__name__}")
    text = value.strip() if isinstance(value, str) else None
    if text is not None and (len(text) > _MAX_TEXT or not _NUMBER.fullmatch(text)):
        shown = text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + "..."
        raise PricingError(f"{what} must be a number of USD such as 0.15, 0 or more, not {shown!r}")
    try:
        amount = value if isinstance(value, Decimal) else Decimal(text if text is not None else str(value))
    except InvalidOperation:
        raise PricingError(f"{what} must be a number of USD, not {value!r}") from None
    if not amount.is_finite() or amount.is_signed():
        raise PricingError(f"{what} must be a finite amount of USD, 0 or more, not {value!r}")
    if amount > MAX_USD or (amount and amount < MIN_USD):
        raise PricingError(f"{what} must be 0 or between {MIN_USD:f} and {MAX_USD:,} USD, not {value!r}")
    return amount


def usd(amount: Decimal) -> str:
    """An amount as people read it: "$0.000012" (no exponent, no trailing zeros)."""
    return f"${amount.normalize():f}"


def parse_price(text: str) -> tuple[Decimal, Decimal]:
    """`IN/OUT` in USD per million tokens (e.g. "0.15/0.60") as two Decimals."""
    parts = text.split("/")
    if len(parts) != 2:
        raise PricingError(f"a price is IN/OUT in USD per million tokens, e.g. 0.15/0.60, not {text!r}")
    return as_cost(parts[0], "the input price"), as_cost(parts[1], "the output price")


def model_price(input: Decimal, output: Decimal, cache_read: Any = None, cache_write: Any = None) -> Any:
    """A genai-prices ModelPrice from per-million-token prices (cache prices only when given:
    without them cache reads and writes are priced as input, as genai-prices does)."""
    from genai_prices.types import ModelPrice

    extra = {
        f"{name}_mtok": as_cost(value, f"the {name} price")
        for name, value in (("cache_read", cache_read), ("cache_write", cache_write))
        if value is not None
    }
    return ModelPrice(input_mtok=input, output_mtok=output, **extra)


class Prices:
    """Model name -> Rate (also for batch calls, at the provider's batch price); cached per model."""

    def __init__(self) -> None:
        self._rates: dict[tuple[str | None, str, bool], Rate] = {}
        self._user: dict[str, Any] = {}
        self._files: dict[str | None, tuple[dict[str, Any], str | None]] = {}
        self._lock = threading.Lock()
        self._warming: set[tuple[str | None, str, bool]] = set()

    def set_price(
        self,
        model: str,
        input: Any,
        output: Any,
        *,
        cache_read: Any = None,
        cache_write: Any = None,
    ) -> None:
        """Price `model` (a name or alias) at `input`/`output` USD per million tokens."""
        price = model_price(
            as_cost(input, "the input price"), as_cost(output, "the output price"), cache_read, cache_write
        )
        with self._lock:
            for name in _resolve(model)[0]:
                self._user[name] = price
            self._rates.clear()

    def clear(self) -> None:
        """Forget the prices set here and the rates kept (e.g. after refreshing genai-prices)."""
        with self._lock:
            self._user.clear()
            self._rates.clear()
            self._files.clear()

    def rate(self, model: str, *, batch: bool = False) -> Rate:
        """How `model`'s calls are priced (an unknown price is a Rate with `unknown` set)."""
        key = (os.environ.get("CHAINFORM_HOME"), model, batch)
        rate = self._rates.get(key)
        if rate is None:
            rate = self._find(model, batch)
            with self._lock:
                self._rates[key] = rate
        return rate

    def known(self, model: str, *, batch: bool = False) -> Rate | None:
        """`model`'s Rate if it was looked up already (no lookup, no import)."""
        return self._rates.get((os.environ.get("CHAINFORM_HOME"), model, batch))

    def warm(self, model: str) -> None:
        """Look `model` up on a helper thread. The first lookup of a priced model imports
        genai-prices' data (~0.1 s); a chain starts it before its first call, which takes longer,
        so the chain does not wait for it."""
        key = (os.environ.get("CHAINFORM_HOME"), model, False)
        with self._lock:
            if key in self._rates or key in self._warming:
                return
            self._warming.add(key)
        threading.Thread(target=self._warm, args=(model, key), name="chainform-prices", daemon=True).start()

    def _warm(self, model: str, key: tuple[str | None, str, bool]) -> None:
        try:
            self.rate(model)
        except Exception:  # the chain's own lookup, when it needs the price, says what is wrong
            pass
        finally:
            with self._lock:
                self._warming.discard(key)

    def _find(self, model: str, batch: bool) -> Rate:
        names, provider, ref = _resolve(model)
        for name in names:
            if name in self._user:
                return Rate.of(model, "--price", self._user[name])
        listed, problem, where = self._file()
        for name in names:
            if name in listed:  # an entry is checked when a model priced by it is looked up
                try:
                    return Rate.of(model, where, _entry(name, listed[name]))
                except (PricingError, ArithmeticError) as exc:
                    return Rate.missing(model, f"{PRICES_FILE} is unusable for {model!r}: {exc}")
        way = f"give --price IN/OUT or add it to {where}" + (f" ({problem})" if problem else "")
        if provider in FREE:
            return Rate.free(model, FREE[provider])
        if provider not in PROVIDER_IDS:
            what = f"a model of {provider!r}" if provider else "not a model name chainform knows"
            return Rate.missing(model, f"no price for {model!r} ({what}): {way}")
        from genai_prices import __version__
        from genai_prices.data_snapshot import get_snapshot

        try:
            _, info = get_snapshot().find_provider_model(ref, None, PROVIDER_IDS[provider], None)
        except LookupError:
            return Rate.missing(model, f"genai-prices {__version__} has no price for {model!r}: {way}")
        price = info.get_prices(datetime.now(timezone.utc), {"processing": "batch"} if batch else None)
        return Rate.of(model, f"genai-prices {__version__} ({info.id})", price)

    def _file(self) -> tuple[dict[str, Any], str | None, str]:
        """The prices in CHAINFORM_HOME/prices.json, what is wrong with it, and where it is."""
        home = os.environ.get("CHAINFORM_HOME")
        where = f"{'$CHAINFORM_HOME' if home else 'the chainform home'}/{PRICES_FILE}"
        if home not in self._files:
            self._files[home] = _read_file()
        listed, problem = self._files[home]
        return listed, problem, where


def _resolve(model: str) -> tuple[list[str], str, str]:
    """The names `model` is priced under (as given, then "provider/model" when the registry
    resolves it), its provider ("" when unknown) and the provider's name of the model."""
    from chainform.clients.registry import resolve_name
    from chainform.errors import ModelNotFoundError

    try:
        provider, ref = resolve_name(model)
    except (ModelNotFoundError, ValueError):
        return [model], "", model
    full = f"{provider}/{ref}"
    return ([model] if full == model else [model, full]), provider, ref


def _read_file() -> tuple[dict[str, Any], str | None]:
    """{model: its entry} from prices.json ({"name": "IN/OUT" | {"input": .., "output": ..,
    "cache_read": .., "cache_write": ..}}, USD per million tokens), each entry checked when its
    model is priced; a broken file, or one over `MAX_PRICES_BYTES`, prices nothing."""
    from chainform._paths import home_path

    try:
        path = home_path() / PRICES_FILE  # not made here: a missing home holds no prices
        if not path.exists():
            return {}, None
        with open(path, "rb") as handle:
            raw = handle.read(MAX_PRICES_BYTES + 1)
        if len(raw) > MAX_PRICES_BYTES:
            raise PricingError(f"it is larger than {MAX_PRICES_BYTES:,} bytes")
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict):
            raise PricingError("it must hold one JSON object: model name -> price")
        return data, None
    except RecursionError:  # nested deeper than the JSON parser goes
        return {}, f"{PRICES_FILE} is unusable: it is nested too deeply"
    except (OSError, ValueError, PricingError) as exc:
        return {}, f"{PRICES_FILE} is unusable: {exc}"


def _entry(name: str, value: Any) -> Any:
    if isinstance(value, str):
        return model_price(*parse_price(value))
    if not isinstance(value, dict) or not {"input", "output"} <= set(value) or set(value) - set(_KINDS):
        raise PricingError(
            f'{name!r}: give "IN/OUT" or an object with input, output (cache_read, cache_write)'
        )
    return model_price(
        as_cost(value["input"], f"{name!r} input"),
        as_cost(value["output"], f"{name!r} output"),
        value.get("cache_read"),
        value.get("cache_write"),
    )


PRICES = Prices()
"""The process's price table: what `usage.cost` is computed with."""
