"""The report in the terminal: one table of cells, one of fields (rich renderables)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from chainform.evals._eval_report import EvalReport


def money(value: Decimal | None) -> str:
    """USD with four significant digits; "?" when a price is unknown."""
    return "?" if value is None else f"${value:.4g}" if value else "$0"


def percent(value: float) -> str:
    return f"{value:.1%}"


def ms(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f}"


def tables(report: EvalReport) -> list[Any]:
    """The cells table, then the per-field table."""
    from rich.table import Table

    cells = Table(title=f"eval {report.eval_id}", title_justify="left")
    for column in (
        "cell",
        "ran",
        "valid",
        "rows right",
        "field acc",
        "calls/row",
        "tokens",
        "cost/row",
        "cost/right row",
        "p50 ms",
        "p95 ms",
        "errors",
    ):
        cells.add_column(
            column, justify="left" if column in ("cell", "ran", "calls/row", "errors") else "right"
        )
    for cell in report.cells:
        calls = " ".join(f"{k} {v:.2g}" for k, v in cell.calls_per_row().items()) or "?"
        errors = ", ".join(f"{k} {v}" for k, v in cell.summary()["errors"].items())
        cells.add_row(
            cell.name,
            ",".join(cell.strategies_ran) or "?",
            percent(cell.valid_rate),
            f"{cell.rows_right}/{cell.n}",
            percent(cell.field_accuracy),
            calls,
            str(cell.tokens),
            money(cell.cost_per_row),
            money(cell.cost_per_correct_row),
            ms(cell.latency(0.5)),
            ms(cell.latency(0.95)),
            errors,
        )
    fields = Table(title="field accuracy (arrays: accuracy, P/R/F1 of items)", title_justify="left")
    fields.add_column("field")
    for cell in report.cells:
        fields.add_column(cell.name, justify="right")
    figures = [cell.fields() for cell in report.cells]
    for path in figures[0] if figures else {}:
        texts = []
        for per_cell in figures:
            f = per_cell[path]
            text = percent(f.accuracy)
            if f.is_array:
                text += f" P{f.precision:.2f} R{f.recall:.2f} F1 {f.f1:.2f}"
            texts.append(text)
        fields.add_row(path, *texts)
    return [cells, fields]


def render(report: EvalReport, console: Any) -> None:
    for table in tables(report):
        console.print(table)


__all__ = ["money", "percent", "render", "tables"]
