"""Two cells compared row by row: the difference in rows right with a paired bootstrap confidence
interval, McNemar's exact test on the rows one got right and the other not, and the fields that
got worse. Pure functions of two `Cell`s that share their rows' keys."""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from typing import Any

from chainform.evals._errors import EvalInputError
from chainform.evals._report import Cell

SEED = 20240601
RESAMPLES = 10_000
"""Bootstrap resamples (`resamples`, `--resamples`)."""


@dataclass
class Comparison:
    """B against A (`difference` = B's share of rows right minus A's)."""

    a: str
    b: str
    rows: int
    a_right: int
    b_right: int
    only_a: int  # rows A got right and B did not
    only_b: int
    difference: float
    low: float  # the 95% interval of the difference (paired bootstrap, percentile)
    high: float
    p_value: float  # McNemar's exact (binomial, two-sided)
    worse_fields: dict[str, tuple[float, float]]  # field: (A's accuracy, B's), where B's is lower
    worse_rows: list[str]  # keys of rows A got right and B did not
    better_fields: dict[str, tuple[float, float]] = field(default_factory=dict)  # where B's is higher
    better_rows: list[str] = field(default_factory=list)  # keys of rows B got right and A did not
    expected_differ: list[str] = field(
        default_factory=list
    )  # keys whose expected answers differ (force=True)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


def compare(
    a: Cell,
    b: Cell,
    *,
    seed: int = SEED,
    resamples: int = RESAMPLES,
    level: float = 0.95,
    labels: tuple[str, str] | None = None,
    force: bool = False,
) -> Comparison:
    """Compare two cells over the rows both have: their keys must match, and so must each row's
    expected answer unless `force` (then `expected_differ` names the rows whose answers differ).
    `labels` name the cells in the result (default: their names)."""
    label_a, label_b = labels or (a.name, b.name)
    right_a = {row.label: row.right for row in a.rows}  # each run of a row apart
    right_b = {row.label: row.right for row in b.rows}
    if set(right_a) != set(right_b):
        raise EvalInputError(
            f"{label_a} and {label_b} did not score the same rows; compare cells of the same data"
        )
    expected_b = {row.key: row.expected for row in b.rows}
    differ = sorted(row.key for row in a.rows if _canonical(row.expected) != _canonical(expected_b[row.key]))
    if differ and not force:
        shown = ", ".join(differ[:5]) + (f" and {len(differ) - 5} more" if len(differ) > 5 else "")
        raise EvalInputError(
            f"{label_a} and {label_b} scored different expected answers ({len(differ)} rows differ: "
            f"{shown}); compare evals of the same data, or pass --force"
        )
    keys = sorted(right_a)
    diffs = [int(right_b[k]) - int(right_a[k]) for k in keys]
    low, high = bootstrap_interval(diffs, seed=seed, resamples=resamples, level=level)
    only_a = sum(1 for d in diffs if d < 0)
    only_b = sum(1 for d in diffs if d > 0)
    fields_a, fields_b = a.fields(), b.fields()
    pairs = {
        path: (fields_a[path].accuracy, fields_b[path].accuracy) for path in fields_a if path in fields_b
    }
    worse = {path: pair for path, pair in pairs.items() if pair[1] < pair[0]}
    better = {path: pair for path, pair in pairs.items() if pair[1] > pair[0]}
    return Comparison(
        label_a,
        label_b,
        len(keys),
        sum(right_a.values()),
        sum(right_b.values()),
        only_a,
        only_b,
        sum(diffs) / len(diffs) if diffs else 0.0,
        low,
        high,
        mcnemar(only_a, only_b),
        worse,
        [k for k, d in zip(keys, diffs, strict=False) if d < 0],
        better,
        [k for k, d in zip(keys, diffs, strict=False) if d > 0],
        differ,
    )


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def bootstrap_interval(diffs: list[int], *, seed: int, resamples: int, level: float) -> tuple[float, float]:
    """Percentile interval of the mean of `diffs` resampled with replacement (`random.Random(seed)`)."""
    if not diffs:
        return (0.0, 0.0)
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(rng.choices(diffs, k=n)) / n for _ in range(resamples))
    tail = (1 - level) / 2
    return means[int(tail * resamples)], means[min(math.ceil((1 - tail) * resamples) - 1, resamples - 1)]


def mcnemar(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value: the binomial tail of min(b, c) in b + c draws at 1/2."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n
    return float(min(1.0, 2 * tail))


__all__ = ["RESAMPLES", "SEED", "Comparison", "bootstrap_interval", "compare", "mcnemar"]
