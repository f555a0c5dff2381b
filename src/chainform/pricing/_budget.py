"""What a chain or a map run spends, held to a cap: `Meter` (one chain) and `Budget` (a map run).

The engine prices each call as it is recorded (`Meter.priced`) and asks the meter before each
call (`Meter.check`), so a capped chain ends between calls; a map run asks its Budget before it
starts a row. Both refuse a cap when the price is unknown: a cap that counted an unknown cost as 0
would silently enforce less than it says.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Literal

from chainform.errors import BudgetExceededError, PricingError
from chainform.pricing._table import PRICES, ZERO, Cost, Rate, as_cost, usd
from chainform.types import UsageDetails


def _refuse_unknown(rate: Rate) -> None:
    if not rate.known:
        raise PricingError(f"a cost cap needs the model's price, and it is unknown: {rate.unknown}")


class Meter:
    """Prices the calls of one chain and holds it to `max_cost` (USD; None: no cap)."""

    __slots__ = ("_rate", "max_cost", "model", "spent", "unknown")

    def __init__(self, model: str, max_cost: Cost | None = None) -> None:
        self.model = model
        self._rate = PRICES.known(model)
        if self._rate is None:  # looked up while the first call is made (it imports genai-prices)
            PRICES.warm(model)
        self.max_cost = None if max_cost is None else as_cost(max_cost)
        self.spent = ZERO  # what the calls priced so far cost
        self.unknown: str | None = None  # why a call's cost is unknown, once one is

    def priced(self, response: Any, model: str | None = None) -> UsageDetails:
        """The usage of one call (its ChatResponse, None when it failed before answering: nothing
        was reported, nothing is counted) with its cost, at the price of `model` (the model that
        made the call, when a fallback answered; else the chain's)."""
        usage = response.usage_details if response is not None else None
        if response is not None and response.additional_properties.get("batch"):  # a batch API's answer
            rate = PRICES.rate(model or self.model, batch=True)
        else:
            rate = self.rate if model is None or model == self.model else PRICES.rate(model)
        cost, reason = rate.cost(usage) if response is not None else (ZERO, None)
        hosted = usage.additional_counts.get("hosted_tool_calls") if usage is not None else None
        if hosted and cost is not None:  # billed per use beyond the tokens: never counted as 0
            cost, reason = (
                None,
                f"{hosted} hosted tool call(s) (web search, code execution...) have no known price",
            )
        if cost is None:
            self.unknown = self.unknown or reason
        else:
            self.spent += cost
        if usage is None:
            return UsageDetails(cost=cost, cost_reason=reason)
        return UsageDetails(
            usage.input_tokens,
            usage.output_tokens,
            usage.total_tokens,
            usage.additional_counts,
            cost,
            reason,
        )

    @property
    def rate(self) -> Rate:
        """How the chain's model is priced."""
        if self._rate is None:
            self._rate = PRICES.rate(self.model)
        return self._rate

    def check(self, responses: list[Any]) -> None:
        """Before a call: BudgetExceededError once the calls made cost `max_cost` or more (and
        PricingError before the first when the price is unknown: raised in the chain, not before
        it, so the chain's readers see it end)."""
        cap = self.max_cost
        if cap is None:
            return
        _refuse_unknown(self.rate)
        if self.unknown is not None:
            message = f"max_cost {usd(cap)} cannot be held: {self.unknown}"
        elif self.spent >= cap:
            message = f"max_cost {usd(cap)} reached: {len(responses)} call(s) cost {usd(self.spent)}"
        else:
            return
        raise BudgetExceededError(message, spent=self.spent, max_cost=cap, responses=responses)


Verdict = Literal["go", "wait", "stop"]


class Budget:
    """A map run's cap (USD). A row starts while what was spent plus the estimate of the rows in
    flight leaves room for one more; the estimate of a row is the dearest row so far (until one
    has finished, one row runs alone). So the cap is overshot by at most the rows in flight when
    it was crossed (dearer than any before them). In a batch run (`growing`), where a round's rows
    are all in flight at once, the rows in flight are also at most the rows finished so far: rounds
    grow 1, 1, 2, 4, ... within the remaining budget, and a cheap start cannot approve every row.
    `reached` is set once the cap stops the run; the rows not run are left for --resume. Pass one
    as `max_cost=` to read `spent` and `reached` afterwards."""

    def __init__(self, max_cost: Any) -> None:
        self.max_cost = as_cost(max_cost)
        self.spent = ZERO
        self.rows = 0  # rows finished
        self.in_flight = 0
        self.dearest: Decimal | None = None
        self.reached = False
        self.unknown: str | None = None  # a row's cost was unknown: the cap cannot be held
        self.growing = False  # a batch run: rows in flight at most the rows finished

    def check_rate(self, rate: Rate) -> None:
        """Refuse the run before any row when the model's price is unknown."""
        _refuse_unknown(rate)

    def room(self) -> Verdict:
        """Whether the next row may start now, must wait for a row in flight, or never will."""
        estimate = self.dearest
        if self.unknown is None and self.spent < self.max_cost:
            if estimate is None:
                return "go" if self.in_flight == 0 else "wait"
            if self.growing and self.in_flight >= self.rows:
                return "wait"
            if self.spent + (self.in_flight + 1) * estimate <= self.max_cost:
                return "go"
        if self.in_flight:
            return "wait"
        self.reached = True
        return "stop"

    def start(self) -> None:
        self.in_flight += 1

    def finish(self, usage: UsageDetails) -> None:
        """A started row ended (`usage`: what its chain used, cost included)."""
        self.in_flight -= 1
        self.rows += 1
        if usage.cost is None:
            self.unknown = self.unknown or usage.cost_reason or "a row's cost is unknown"
            return
        self.spent += usage.cost
        self.dearest = usage.cost if self.dearest is None else max(self.dearest, usage.cost)

    def summary(self) -> str:
        """One line for the run's summary when the cap stopped it ("" otherwise)."""
        if not self.reached:
            return ""
        if self.unknown is not None:
            return f"stopped: max cost {usd(self.max_cost)} cannot be held ({self.unknown})"
        return f"max cost {usd(self.max_cost)} reached ({usd(self.spent)} spent); --resume runs the rest"
