"""The report in the terminal: one table of cells, one of fields (rich renderables). The texts of
a cell's row and of a field's figures are shared with the HTML report."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from chainform.evals._eval_report import EvalReport
from chainform.evals._report import Cell, FieldFigures

COLUMNS = (
    "cell", "ran", "valid", "rows right", "field acc", "calls/row", "tokens", "cost/row",
    "cost/right row", "p50 ms", "p95 ms", "errors",
)  # fmt: skip
_LEFT = frozenset({"cell", "ran", "calls/row", "errors"})


def money(value: Decimal | None) -> str:
    """USD with four significant digits; "?" when a price is unknown."""
    return "?" if value is None else f"${value:.4g}" if value else "$0"


def percent(value: float) -> str:
    return f"{value:.1%}"


def ms(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f}"


def cell_texts(cell: Cell) -> list[str]:
    """The cell's figures as the texts of COLUMNS."""
    calls = " ".join(f"{k} {v:.2g}" for k, v in cell.calls_per_row().items()) or "?"
    errors = ", ".join(f"{k} {v}" for k, v in cell.summary()["errors"].items())
    unpriced = f" ({cell.unpriced_rows} unpriced)" if cell.unpriced_rows and cell.cost is not None else ""
    return [
        cell.name,
        ",".join(cell.strategies_ran) or "?",
        percent(cell.valid_rate),
        f"{cell.rows_right}/{cell.n}",
        percent(cell.field_accuracy),
        calls,
        str(cell.tokens),
        money(cell.cost_per_row) + unpriced,
        money(cell.cost_per_correct_row) + unpriced,
        ms(cell.latency(0.5)),
        ms(cell.latency(0.95)),
        errors,
    ]


def field_text(figures: FieldFigures) -> str:
    """Accuracy; for an array also its items' precision, recall and F1."""
    text = percent(figures.accuracy)
    if figures.is_array:
        text += f" P{figures.precision:.2f} R{figures.recall:.2f} F1 {figures.f1:.2f}"
    return text


def tables(report: EvalReport) -> list[Any]:
    """The cells table, then the per-field table."""
    from rich.table import Table

    cells = Table(title=f"eval {report.eval_id}", title_justify="left")
    for column in COLUMNS:
        cells.add_column(column, justify="left" if column in _LEFT else "right")
    for cell in report.cells:
        cells.add_row(*cell_texts(cell))
    fields = Table(title="field accuracy (arrays: accuracy, P/R/F1 of items)", title_justify="left")
    fields.add_column("field")
    for cell in report.cells:
        fields.add_column(cell.name, justify="right")
    figures = [cell.fields() for cell in report.cells]
    for path in figures[0] if figures else {}:
        fields.add_row(path, *(field_text(per_cell[path]) for per_cell in figures))
    return [cells, fields]


def render(report: EvalReport, console: Any) -> None:
    for table in tables(report):
        console.print(table)


__all__ = ["COLUMNS", "cell_texts", "field_text", "money", "percent", "render", "tables"]
