"""What an eval found: `EvalReport` (one per eval) of `Cell`s (one per model x strategy x prompt)
of `RowResult`s (one per data row). Every figure is computed from the rows, so a report read back
from its JSON says exactly what it said when it was made."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from decimal import Decimal
from typing import Any

from chainform.evals._score import Outcome
from chainform.evals._tools import TOOLS


@dataclass
class RowResult:
    """One row of one cell: its outcomes per field, and what the row's chain cost and took."""

    key: str
    fields: dict[str, Outcome]
    expected: Any
    actual: Any = None
    error: str | None = None  # "phase: Type: message" of a failed chain
    error_phase: str | None = None
    tokens: int = 0
    cost: str | None = None  # USD as text (exact); None: unknown
    latency_ms: float | None = None
    calls: dict[str, int] = field(default_factory=dict)  # logged calls by purpose
    call_ids: list[str] = field(default_factory=list)
    strategy: str | None = None
    conversation_id: str | None = None
    judged: list[str] = field(default_factory=list)  # fields the judge model found right
    repeat: int | None = None  # which run of the row, from 0, when each row ran several times
    agrees: dict[str, bool] = field(default_factory=dict)  # run 0: does every run give the field one value
    tools_wrong: list[str] = field(default_factory=list)  # tools called that `expected_tools` did not want
    tools_missed: list[str] = field(default_factory=list)  # expected tool calls not made
    expected_tools: Any = None  # the row's expected tool calls (`_tools.Expectation.to_json()`), if any
    rubric: dict[str, str] = field(
        default_factory=dict
    )  # field: "pass: reason" / "fail: reason" of the judge

    def charge(self, meta: dict[str, Any], name: str, error: dict[str, Any] | None) -> None:
        """Add one judge call (a map line's `_map` meta) to the row: counted, its tokens and cost
        added; a failed one (`error`) named in `judge_errors` under the field `name`."""
        self.calls["judge"] = self.calls.get("judge", 0) + 1
        self.tokens += int(meta.get("tokens") or 0)
        cost = meta.get("cost")
        self.cost = None if self.cost is None or cost is None else str(Decimal(self.cost) + Decimal(cost))
        if meta.get("retried"):
            self.calls["resent"] = self.calls.get("resent", 0) + int(meta["retried"])
        if error is not None:
            self.judge_errors.append(
                f"{name}: {error.get('phase')}: {error.get('type')}: {error.get('message')}"
            )

    @property
    def run_key(self) -> str:
        """The key of this run in the map's files."""
        return run_key(self.key, self.repeat)

    @property
    def label(self) -> str:
        """The row's key, and which run of it when each row ran several times."""
        return self.key if self.repeat is None else f"{self.key} #{self.repeat + 1}"

    # "field: phase: Type: message" of each failed judge call
    judge_errors: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        """The chain gave a schema-valid answer."""
        return self.error is None

    @property
    def right(self) -> bool:
        return self.error is None and all(o.status == "right" for o in self.fields.values())

    def to_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in _ROW_FIELDS}
        out["fields"] = {path: list(o) for path, o in self.fields.items()}
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RowResult:
        data = dict(data)
        data["fields"] = {path: Outcome(*o) for path, o in data["fields"].items()}
        return cls(**data)


_ROW_FIELDS = tuple(f.name for f in dataclass_fields(RowResult))


@dataclass
class FieldFigures:
    """A field over a cell's rows: `accuracy` (right / total); arrays also precision, recall, F1
    of their items (micro-averaged over the rows)."""

    right: int
    total: int
    tp: int = 0
    fp: int = 0
    fn: int = 0
    is_array: bool = False
    statuses: dict[str, int] = field(default_factory=dict)

    @property
    def accuracy(self) -> float:
        return self.right / self.total if self.total else 1.0  # nothing to get wrong (no item anywhere)

    @property
    def precision(self) -> float:
        """Of the items answered, the share right (no item answered: 1 when none was expected, else 0)."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else float(self.fn == 0)

    @property
    def recall(self) -> float:
        """Of the items expected, the share found (none expected: 1 when none was answered, else 0)."""
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else float(self.fp == 0)

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0


@dataclass
class Cell:
    """One model x strategy x prompt of an eval: one map run (`run_id`) over every row."""

    model: str
    strategy: str
    prompt: str
    run_id: str
    rows: list[RowResult]
    arrays: list[str] = field(default_factory=list)  # which field paths are arrays

    @property
    def name(self) -> str:
        return f"{self.model} / {self.strategy}" + (f" / {self.prompt_label}" if self.prompt_label else "")

    prompt_label: str = ""
    repeats: int = 1  # runs of each row

    def by_row(self) -> dict[str, list[RowResult]]:
        """Each data row's runs, in the order of the data."""
        out: dict[str, list[RowResult]] = {}
        for row in self.rows:
            out.setdefault(row.key, []).append(row)
        return out

    def pass_at(self, k: int) -> float:
        """pass@k: the chance that at least one of k runs of a row, drawn from its `repeats` runs, is
        right (the unbiased estimate `1 - C(n - c, k) / C(n, k)`), averaged over the rows; at k =
        repeats, the share of rows right at least once."""
        return self._mean_over_rows(lambda n, c: 1 - math.comb(n - c, k) / math.comb(n, k), k)

    def pass_all(self, k: int) -> float:
        """pass^k: the chance that k runs of a row, drawn from its runs, are all right
        (`C(c, k) / C(n, k)`), averaged over the rows; at k = repeats, the share of rows always right."""
        return self._mean_over_rows(lambda n, c: math.comb(c, k) / math.comb(n, k), k)

    def _mean_over_rows(self, chance: Callable[[int, int], float], k: int) -> float:
        runs = self.by_row()
        if not runs or not 1 <= k <= self.repeats:
            return 0.0
        return sum(chance(len(r), sum(x.right for x in r)) for r in runs.values()) / len(runs)

    def tool_mistakes(self) -> dict[str, dict[str, int]]:
        """Tools wrongly called and expected calls missed, each counted over the rows (most first)."""
        wrong: dict[str, int] = {}
        missed: dict[str, int] = {}
        for row in self.rows:
            for name in row.tools_wrong:
                wrong[name] = wrong.get(name, 0) + 1
            for name in row.tools_missed:
                missed[name] = missed.get(name, 0) + 1
        return {
            "wrongly_called": dict(sorted(wrong.items(), key=lambda kv: (-kv[1], kv[0]))),
            "missed": dict(sorted(missed.items(), key=lambda kv: (-kv[1], kv[0]))),
        }

    def agreement(self) -> dict[str, float]:
        """Per field: the share of rows whose runs all gave it the same value (by the field's own
        rule, each run against the first; a run that failed agrees with nothing)."""
        firsts = [row for row in self.rows if row.repeat == 0]
        paths: dict[str, int] = {}
        for row in firsts:
            for path, same in row.agrees.items():
                paths[path] = paths.get(path, 0) + same
        return {path: count / len(firsts) for path, count in paths.items()} if firsts else {}

    @property
    def n(self) -> int:
        return len(self.rows)

    @property
    def valid_rate(self) -> float:
        return sum(r.valid for r in self.rows) / self.n if self.n else 0.0

    @property
    def rows_right(self) -> int:
        return sum(r.right for r in self.rows)

    @property
    def right_rate(self) -> float:
        return self.rows_right / self.n if self.n else 0.0

    def fields(self, *, valid_only: bool = False) -> dict[str, FieldFigures]:
        """Each field's figures over the rows (`valid_only`: over the rows with a valid answer)."""
        sums: dict[str, list[int]] = {}  # path: right, total, tp, fp, fn
        statuses: dict[str, dict[str, int]] = {}
        for row in self.rows:
            if valid_only and not row.valid:
                continue
            for path, (status, right, total, tp, fp, fn) in row.fields.items():
                acc = sums.get(path)
                if acc is None:
                    acc = sums[path] = [0, 0, 0, 0, 0]
                    statuses[path] = {}
                acc[0] += right
                acc[1] += total
                acc[2] += tp
                acc[3] += fp
                acc[4] += fn
                counts = statuses[path]
                counts[status] = counts.get(status, 0) + 1
        return {
            path: FieldFigures(acc[0], acc[1], acc[2], acc[3], acc[4], path in self.arrays, statuses[path])
            for path, acc in sums.items()
        }

    @property
    def field_accuracy(self) -> float:
        """The mean of the fields' accuracies: each field counts once, however many items it has."""
        figures = self.fields()
        return sum(f.accuracy for f in figures.values()) / len(figures) if figures else 0.0

    @property
    def valid_field_accuracy(self) -> float | None:
        """`field_accuracy` over the rows with a valid answer only: how right the answers are, apart
        from the calls that failed (None when no row has one)."""
        figures = self.fields(valid_only=True)
        return sum(f.accuracy for f in figures.values()) / len(figures) if figures else None

    def calls_per_row(self) -> dict[str, float]:
        counts: dict[str, int] = {}
        for row in self.rows:
            for purpose, count in row.calls.items():
                counts[purpose] = counts.get(purpose, 0) + count
        return {purpose: count / self.n for purpose, count in sorted(counts.items())} if self.n else {}

    @property
    def tokens(self) -> int:
        return sum(r.tokens for r in self.rows)

    @property
    def ran(self) -> list[RowResult]:
        """The rows that were sent (not those `--max-cost` left unrun)."""
        return [r for r in self.rows if r.error_phase != "not-run"]

    @property
    def cost(self) -> Decimal | None:
        """USD over the rows that ran, those of known cost (a cut stream's row may have none:
        `unpriced_rows` counts them); None when no row that ran has a known cost."""
        known = [Decimal(r.cost) for r in self.ran if r.cost is not None]
        if not known and self.ran:
            return None
        return sum(known, Decimal(0))

    @property
    def unpriced_rows(self) -> int:
        """Rows that ran whose cost is unknown (left out of the cost figures)."""
        return sum(1 for r in self.ran if r.cost is None)

    @property
    def cost_per_row(self) -> Decimal | None:
        """USD per row that ran and whose cost is known."""
        cost, priced = self.cost, len(self.ran) - self.unpriced_rows
        return None if cost is None or not priced else cost / priced

    @property
    def cost_per_correct_row(self) -> Decimal | None:
        """Everything the cell spent over the rows it got fully right (None: none right, or unpriced)."""
        cost = self.cost
        return None if cost is None or not self.rows_right else cost / self.rows_right

    def latency(self, quantile: float) -> float | None:
        """Nearest-rank quantile of the rows' latencies (ms, the sum of a row's logged calls)."""
        values = sorted(r.latency_ms for r in self.rows if r.latency_ms is not None)
        if not values:
            return None
        return values[max(math.ceil(quantile * len(values)) - 1, 0)]

    @property
    def strategies_ran(self) -> list[str]:
        return sorted({r.strategy for r in self.rows if r.strategy})

    def summary(self) -> dict[str, Any]:
        """The figures of the cell (what `--json` prints per cell, beside its rows)."""
        cost, per_row, per_right = self.cost, self.cost_per_row, self.cost_per_correct_row
        return (
            {
                "model": self.model,
                "strategy": self.strategy,
                "strategy_ran": self.strategies_ran,
                "prompt": self.prompt,
                "run_id": self.run_id,
                "rows": self.n,
                "valid_rate": self.valid_rate,
                "rows_right": self.rows_right,
                "right_rate": self.right_rate,
                "field_accuracy": self.field_accuracy,
                "valid_field_accuracy": self.valid_field_accuracy,
                "fields": {
                    path: {"accuracy": f.accuracy, "right": f.right, "total": f.total, "statuses": f.statuses}
                    | ({"precision": f.precision, "recall": f.recall, "f1": f.f1} if f.is_array else {})
                    for path, f in self.fields().items()
                },
                "calls_per_row": self.calls_per_row(),
                "tokens": self.tokens,
                "cost": None if cost is None else str(cost),
                "cost_per_row": None if per_row is None else str(per_row),
                "cost_per_correct_row": None if per_right is None else str(per_right),
                "unpriced_rows": self.unpriced_rows,
                "not_run": self.n - len(self.ran),
                "latency_p50_ms": self.latency(0.5),
                "latency_p95_ms": self.latency(0.95),
                "errors": _count(
                    [r.error_phase for r in self.rows if r.error_phase]
                    + ["judge" for r in self.rows for _ in r.judge_errors]
                ),
            }
            | (self._repeat_summary() if self.repeats > 1 else {})
            | ({"tools": self.tool_mistakes()} if TOOLS in self.arrays else {})
        )

    def _repeat_summary(self) -> dict[str, Any]:
        ks = range(1, self.repeats + 1)
        return {
            "repeats": self.repeats,
            "pass_at_k": {str(k): self.pass_at(k) for k in ks},
            "pass_all_k": {str(k): self.pass_all(k) for k in ks},
            "agreement": self.agreement(),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "strategy": self.strategy,
            "prompt": self.prompt,
            "prompt_label": self.prompt_label,
            "run_id": self.run_id,
            "arrays": self.arrays,
            "repeats": self.repeats,
            "rows": [r.to_dict() for r in self.rows],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Cell:
        rows = [RowResult.from_dict(r) for r in data["rows"]]
        return cls(
            data["model"],
            data["strategy"],
            data["prompt"],
            data["run_id"],
            rows,
            data["arrays"],
            data.get("prompt_label", ""),
            data.get("repeats", 1),
        )


def wrong_fields(row: RowResult) -> list[tuple[str, str, Any, Any]]:
    """The row's fields not right: (path, status, expected, answered); an item field
    (`items[].qty`) shows its array's values (`items`), a rubric field the judge's reason as the
    expected side, the trajectory its expected calls against those wrongly made and missed."""
    out = []
    for path, outcome in row.fields.items():
        if outcome.status == "right":
            continue
        if path == TOOLS:  # the expected calls, against what was wrongly called and missed
            answered = {"wrongly called": row.tools_wrong, "missed": row.tools_missed}
            out.append((path, outcome.status, row.expected_tools, answered))
            continue
        whole = path.split("[]", 1)[0]
        expected = row.rubric.get(path, value_at(row.expected, whole))  # a rubric field: the judge's reason
        out.append((path, outcome.status, expected, value_at(row.actual, whole)))
    return out


def value_text(value: Any, limit: int = 200) -> str:
    """A value as short JSON text for a report (cut at `limit` characters, marked with an ellipsis)."""
    import json

    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def run_key(key: str, repeat: int | None) -> str:
    """The map's key of one run of a row: the row's own key when each row runs once."""
    return key if repeat is None else f"{key}{_RUN}{repeat + 1}"


_RUN = "\x1e"  # between a row's key and its run's number


def value_at(value: Any, path: str) -> Any:
    """The value at a dotted path of nested objects (None where there is none)."""
    if path == "value" and not isinstance(value, dict):  # a schema whose root is not an object
        return value
    for part in path.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _count(items: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return out


__all__ = ["Cell", "FieldFigures", "RowResult", "run_key", "value_at", "value_text", "wrong_fields"]
