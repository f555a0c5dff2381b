"""Token usage that adds up across calls, retries and providers."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any


def _add_opt(a: int | None, b: int | None) -> int | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


@dataclass
class UsageDetails:
    """Token counts of one or many calls. `None` means "not reported", which is not zero.

    `cost` is what the calls cost in USD (chainform.pricing prices each call of a chain); `None`
    when any part of it is unknown, and then `cost_reason` says why. Unknown is never counted as 0.
    """

    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    additional_counts: dict[str, int] = field(default_factory=dict)
    cost: Decimal | None = None
    cost_reason: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.total_tokens is None and (self.input_tokens is not None or self.output_tokens is not None):
            self.total_tokens = (self.input_tokens or 0) + (self.output_tokens or 0)

    def __add__(self, other: UsageDetails | None) -> UsageDetails:
        if other is None:
            return UsageDetails(
                self.input_tokens,
                self.output_tokens,
                self.total_tokens,
                dict(self.additional_counts),
                self.cost,
                self.cost_reason,
            )
        counts = dict(self.additional_counts)
        for key, value in other.additional_counts.items():
            counts[key] = counts.get(key, 0) + value
        mine, theirs = self.cost, other.cost
        cost = mine + theirs if mine is not None and theirs is not None else None
        return UsageDetails(
            input_tokens=_add_opt(self.input_tokens, other.input_tokens),
            output_tokens=_add_opt(self.output_tokens, other.output_tokens),
            total_tokens=_add_opt(self.total_tokens, other.total_tokens),
            additional_counts=counts,
            cost=cost,
            cost_reason=None if cost is not None else self.cost_reason or other.cost_reason,
        )

    __radd__ = __add__

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
        }
        if self.additional_counts:
            out["additional_counts"] = dict(self.additional_counts)
        if self.cost is not None:
            out["cost"] = str(self.cost)
        elif self.cost_reason:
            out["cost"], out["cost_reason"] = None, self.cost_reason
        return out
