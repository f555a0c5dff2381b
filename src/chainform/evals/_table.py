"""The report in the terminal: one table of cells, one of fields (rich renderables). The texts of
a cell's row and of a field's figures are shared with the HTML report."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from chainform.evals._eval_report import EvalReport
from chainform.evals._report import Cell, FieldFigures, value_text, wrong_fields
from chainform.evals._tools import TOOLS

COLUMNS = (
    "cell", "ran", "valid", "rows right", "field acc", "valid acc", "calls/row", "tokens", "cost/row",
    "cost/right row", "p50 ms", "p95 ms", "errors",
)  # fmt: skip
_LEFT = frozenset({"cell", "ran", "calls/row", "errors"})


def columns(cells: list[Cell]) -> list[str]:
    """COLUMNS, with pass@k and pass^k after `rows right` when rows ran several times (k: the runs)."""
    k = max((cell.repeats for cell in cells), default=1)
    extra = [f"pass@{k}", f"pass^{k}"] if k > 1 else []
    at = COLUMNS.index("rows right") + 1
    return [*COLUMNS[:at], *extra, *COLUMNS[at:]]


def money(value: Decimal | None) -> str:
    """USD with four significant digits; "?" when a price is unknown."""
    return "?" if value is None else f"${value:.4g}" if value else "$0"


def percent(value: float) -> str:
    return f"{value:.1%}"


def ms(value: float | None) -> str:
    return "?" if value is None else f"{value:.0f}"


def cell_texts(cell: Cell, repeats: int = 1) -> list[str]:
    """The cell's figures as the texts of `columns()` (COLUMNS, and pass@k and pass^k at k = `repeats`
    when more than 1)."""
    calls = " ".join(f"{k} {v:.2g}" for k, v in cell.calls_per_row().items()) or "?"
    errors = ", ".join(f"{k} {v}" for k, v in cell.summary()["errors"].items())
    unpriced = f" ({cell.unpriced_rows} unpriced)" if cell.unpriced_rows and cell.cost is not None else ""
    return [
        cell.name,
        ",".join(cell.strategies_ran) or "?",
        percent(cell.valid_rate),
        f"{cell.rows_right}/{cell.n}",
        *((percent(cell.pass_at(repeats)), percent(cell.pass_all(repeats))) if repeats > 1 else ()),
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


def field_text(figures: FieldFigures, agreement: float | None = None) -> str:
    """Accuracy; for an array also its items' precision, recall and F1; with repeats, the share of
    rows whose runs agree on it."""
    text = percent(figures.accuracy)
    if figures.is_array:
        text += f" P{figures.precision:.2f} R{figures.recall:.2f} F1 {figures.f1:.2f}"
    if agreement is not None:
        text += f" agree {percent(agreement)}"
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
                out.append((cell.name, row.label, "*", row.error_phase or "error", "", row.error))
                continue
            for path, status, expected, answered in wrong_fields(row):
                out.append(
                    (cell.name, row.label, path, status, value_text(expected, 60), value_text(answered, 60))
                )
    return out


def _same(text: str) -> str:
    return text


def tables(report: EvalReport, untrusted: Callable[[str], str] = _same) -> list[Any]:
    """The cells table, the per-field table, then the fields not right (expected against answered);
    `untrusted` is applied to those texts of the data and the model (the CLI makes them inert on a
    terminal)."""
    from rich.table import Table
    from rich.text import Text

    cells = Table(title=f"eval {report.eval_id}", title_justify="left")
    heads = columns(report.cells)
    for column in heads:
        cells.add_column(column, justify="left" if column in _LEFT else "right")
    repeats = max((cell.repeats for cell in report.cells), default=1)
    for cell in report.cells:
        cells.add_row(*cell_texts(cell, repeats))
    title = "field accuracy (arrays: accuracy, P/R/F1 of items" + (
        "; agree: rows whose runs all gave one value)" if repeats > 1 else ")"
    )
    fields = Table(title=title, title_justify="left")
    fields.add_column("field")
    for cell in report.cells:
        fields.add_column(cell.name, justify="right")
    figures = [cell.fields() for cell in report.cells]
    agreements = [cell.agreement() if cell.repeats > 1 else {} for cell in report.cells]
    for path in figures[0] if figures else {}:
        texts = (field_text(f[path], a.get(path)) for f, a in zip(figures, agreements, strict=True))
        fields.add_row(path, *texts)
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
        wrong.add_row(*(Text(untrusted(safe(text))) for text in line))  # model output: never read as markup
    return [cells, fields, wrong]


def tool_lines(cell: Cell) -> list[str]:
    """What a cell's rows got wrong of their expected tool calls, e.g. "wrongly called: lookup 2"."""
    if TOOLS not in cell.arrays:
        return []
    mistakes = cell.tool_mistakes()
    out = []
    for title, key in (("wrongly called", "wrongly_called"), ("missed", "missed")):
        counts = mistakes[key]
        out.append(f"{title}: " + (", ".join(f"{name} {n}" for name, n in counts.items()) or "none"))
    return out


def render(report: EvalReport, console: Any, untrusted: Callable[[str], str] = _same) -> None:
    for table in tables(report, untrusted):
        console.print(table)
    for cell in report.cells:
        lines = tool_lines(cell)
        if lines:
            console.print(f"{cell.name}: tools " + "; ".join(lines), markup=False, highlight=False)


__all__ = [
    "COLUMNS",
    "MAX_WRONG_SHOWN",
    "cell_texts",
    "columns",
    "field_text",
    "money",
    "percent",
    "render",
    "safe",
    "tables",
    "tool_lines",
    "wrong_lines",
]
