"""`EvalReport`: every cell of one eval, kept as one JSON file, and the checks a test makes on it."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from chainform.evals._report import Cell

FORMAT = 1  # the version of the report's JSON; a reader refuses another


@dataclass
class EvalReport:
    """The result of `chainform.evaluate` / `chainform eval`: one `Cell` per model x strategy x prompt,
    all sharing `eval_id`. `to_dict()` is what `--json` prints and what `chainform eval show` reads."""

    eval_id: str
    schema: dict[str, Any]
    cells: list[Cell]
    created_at: float = field(default_factory=time.time)
    settings: dict[str, Any] = field(default_factory=dict)

    def cell(self, model: str | None = None, strategy: str | None = None) -> Cell:
        """The one cell of `model` (and `strategy`), e.g. `report.cell("openai/gpt-4.1", "native")`."""
        found = [
            c
            for c in self.cells
            if (model is None or c.model == model) and (strategy is None or c.strategy == strategy)
        ]
        if len(found) != 1:
            raise KeyError(f"{len(found)} cells match model={model!r} strategy={strategy!r}; name one")
        return found[0]

    @property
    def stopped_by_cost(self) -> bool:
        """`max_cost` stopped the eval: some rows were never run (a resume with a higher cap runs them)."""
        return any(r.error_phase == "not-run" for cell in self.cells for r in cell.rows)

    def shortfalls(
        self,
        *,
        field_accuracy: float | Mapping[str, float] | None = None,
        valid: float | None = None,
        rows_right: float | None = None,
    ) -> list[str]:
        """One line per cell and figure below its floor (`assert_at_least`'s checks, as text); a
        field the report does not have raises KeyError naming the fields it has."""
        problems: list[str] = []
        for cell in self.cells:
            if valid is not None and cell.valid_rate < valid:
                problems.append(f"{cell.name}: valid {cell.valid_rate:.1%} < {valid:.1%}")
            if rows_right is not None and cell.right_rate < rows_right:
                problems.append(f"{cell.name}: rows right {cell.right_rate:.1%} < {rows_right:.1%}")
            if isinstance(field_accuracy, Mapping):
                figures = cell.fields()
                for path, least in field_accuracy.items():
                    if path not in figures:
                        raise KeyError(f"no field {path!r} in the report (fields: {', '.join(figures)})")
                    got = figures[path].accuracy
                    if got < least:
                        problems.append(f"{cell.name}: field {path!r} accuracy {got:.1%} < {least:.1%}")
            elif field_accuracy is not None and cell.field_accuracy < field_accuracy:
                problems.append(
                    f"{cell.name}: field accuracy {cell.field_accuracy:.1%} < {field_accuracy:.1%}"
                )
        return problems

    def assert_at_least(
        self,
        *,
        field_accuracy: float | Mapping[str, float] | None = None,
        valid: float | None = None,
        rows_right: float | None = None,
    ) -> None:
        """Raise AssertionError (one line per shortfall, naming the cell and field) unless every cell has
        at least `valid` schema-valid rows, `rows_right` fully right rows (fractions), and
        `field_accuracy` overall (a float) or per field (`{"total": 0.9, ...}`)."""
        problems = self.shortfalls(field_accuracy=field_accuracy, valid=valid, rows_right=rows_right)
        if problems:
            raise AssertionError(f"eval {self.eval_id} falls short:\n  " + "\n  ".join(problems))

    def to_dict(self, *, rows: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "format": FORMAT,
            "eval_id": self.eval_id,
            "created_at": self.created_at,
            "settings": self.settings,
            "stopped_by_cost": self.stopped_by_cost,
            "cells": [cell.summary() for cell in self.cells],
        }
        if rows:
            out["schema"] = self.schema
            out["results"] = [cell.to_dict() for cell in self.cells]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalReport:
        if data.get("format") != FORMAT:
            raise ValueError(
                f"an eval report of format {data.get('format')!r}; this chainform reads {FORMAT}"
            )
        return cls(
            data["eval_id"],
            data["schema"],
            [Cell.from_dict(c) for c in data["results"]],
            data["created_at"],
            data.get("settings", {}),
        )


__all__ = ["EvalReport"]
