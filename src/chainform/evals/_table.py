"""The report in the terminal: one table of cells, one of fields (rich renderables). The texts of
a cell's row and of a field's figures are shared with the HTML report."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from chainform.evals._eval_report import EvalReport
from chainform.evals._report import Cell, FieldFigures, value_text, wrong_fields

COLUMNS = (
    "cell", "ran", "valid", "rows right", "field acc", "valid acc", "calls/row", "tokens", "cost/row",
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
        "?" if cell.valid_field_accuracy is None else percent(cell.valid_field_accuracy),
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


MAX_WRONG_SHOWN = 30
"""Lines of the terminal's table of wrong fields at most (`--csv`, `--html`: every one)."""


def safe(text: str) -> str:
    """`text` as a terminal can print it: characters UTF-8 cannot encode (lone surrogates) escaped."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def wrong_lines(report: EvalReport) -> list[tuple[str, str, str, str, str, str]]:
    """Every field not right, as (cell, row, field, status, expected, answered) texts; a row whose
    chain failed is one line (field `*`, its error as the answer)."""
    out = []
    for cell in report.cells:
        for row in cell.rows:
            if row.error is not None:
                out.append((cell.name, row.key, "*", row.error_phase or "error", "", row.error))
                continue
            for path, status, expected, answered in wrong_fields(row):
                out.append(
                    (cell.name, row.key, path, status, value_text(expected, 60), value_text(answered, 60))
                )
    return out


def tables(report: EvalReport) -> list[Any]:
    """The cells table, the per-field table, then the fields not right (expected against answered)."""
    from rich.table import Table
    from rich.text import Text

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
    lines = wrong_lines(report)
    if not lines:
        return [cells, fields]
    shown = (
        f"first {MAX_WRONG_SHOWN} of {len(lines)}; --csv or --html: all"
        if len(lines) > MAX_WRONG_SHOWN
        else ""
    )
    wrong = Table(title=f"fields not right{f' ({shown})' if shown else ''}", title_justify="left")
    for column in ("cell", "row", "field", "status", "expected", "answered"):
        wrong.add_column(column)
    for line in lines[:MAX_WRONG_SHOWN]:
        wrong.add_row(*(Text(safe(text)) for text in line))  # model output: never read as markup
    return [cells, fields, wrong]


def render(report: EvalReport, console: Any) -> None:
    for table in tables(report):
        console.print(table)


__all__ = [
    "COLUMNS",
    "MAX_WRONG_SHOWN",
    "cell_texts",
    "field_text",
    "money",
    "percent",
    "render",
    "safe",
    "tables",
    "wrong_lines",
]
