"""What the logged calls cost, summed by model, day or conversation (`chainform logs cost`).

Costs are logged as exact decimal text, so they are summed here as Decimals rather than by SQLite
(whose SUM would add them as floats). A call logged with no cost (its price was unknown, or it was
logged before costs were) is counted apart, never as 0.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chainform.store._store import Store

GROUPS = ("model", "day", "conversation")


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
    """One CostTotal per group of `by` (names from GROUPS), dearest first, for calls since then."""
    sql = "SELECT model, created_at, conversation_id, cost FROM responses"
    args: list[Any] = []
    if since is not None:
        sql += " WHERE created_at >= ?"
        args.append(since)
    totals: dict[tuple[str, ...], CostTotal] = {}
    with store._read() as db:
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
