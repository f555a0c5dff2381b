"""The report as CSV (`--csv PATH`): one line per cell, row and field, with the field's status,
its counts and the expected and answered values as JSON text; a row whose chain failed carries its
error on each of its lines. Values are model output and data: a cell a spreadsheet would read as a
formula is written with a leading `'`."""

from __future__ import annotations

import csv
import io
import re

from chainform.evals._eval_report import EvalReport
from chainform.evals._report import value_at, value_text

HEADER = (
    "eval_id", "cell", "model", "strategy", "prompt", "row", "field", "status", "right", "total",
    "expected", "answered", "error",
)  # fmt: skip

_FORMULA = re.compile(r"[=+\-@\t\r]")
_NUMBER = re.compile(r"-(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


def csv_text(report: EvalReport) -> str:
    """Every cell's every row and field as CSV text (with HEADER first)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    for cell in report.cells:
        for row in cell.rows:
            for path, outcome in row.fields.items():
                whole = path.split("[]", 1)[0]
                answered = "" if row.error else value_text(value_at(row.actual, whole), 10_000)
                writer.writerow(
                    _plain(text)
                    for text in (
                        report.eval_id, cell.name, cell.model, cell.strategy, cell.prompt_label or cell.prompt,
                        row.label, path, outcome.status, str(outcome.right), str(outcome.total),
                        value_text(value_at(row.expected, whole), 10_000), answered, row.error or "",
                    )
                )  # fmt: skip
    return out.getvalue()


def _plain(text: str) -> str:
    """`text` with a leading `'` where a spreadsheet would read it as a formula: `-2+3+cmd|...` is
    one, so a leading `-` is left alone only on a number."""
    return "'" + text if _FORMULA.match(text) and not _NUMBER.fullmatch(text) else text


__all__ = ["HEADER", "csv_text"]
