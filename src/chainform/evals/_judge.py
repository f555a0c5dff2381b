"""`--judge MODEL`: a model decides whether a free-text answer says what the expected one says.

Off by default. Only fields the rules scored `wrong` (both present, the texts differ even once
normalised) are sent, one call each, as a map run of their own (`judge-N.jsonl` beside the cell's
rows, so `--resume` sends none twice, and asks again those that failed); a verdict of "same" turns
the field right; a failed judge call leaves the field as the rules scored it and is counted under
`judge` in the cell's errors. The judge's calls
are priced like every other call: their tokens and cost are added to the row's, under `judge` in
calls per row, so cost per right row includes them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from chainform.evals._cells import MapJob, read_lines
from chainform.evals._errors import EvalInputError
from chainform.evals._plan import Leaf, Node, walk
from chainform.evals._report import Cell, RowResult, value_at
from chainform.evals._score import Outcome

PROMPT = (
    "Two values of the field {field} of a record: the expected one and an answer.\n"
    "Expected: {expected}\nAnswer: {answer}\n"
    "Do they say the same thing (wording, spelling and abbreviations aside)? Reply with same: true or false."
)
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"same": {"type": "boolean"}},
    "required": ["same"],
}
_SEP = "\x1f"  # between a row's key and a field's path in a judge row's key


def free_text_fields(plan: Node, wanted: Sequence[str] | None, option: str = "--judge-field") -> list[str]:
    """The string fields (no format, no enum, outside arrays) the judge reads: all, or `wanted`
    (one that is none of them is refused, naming `option`)."""
    free = [n.path for n in walk(plan) if isinstance(n, Leaf) and n.kind == "string" and "[]" not in n.path]
    if wanted is None:
        return free
    for path in wanted:
        if path not in free:
            raise EvalInputError(
                f"{option} names {path!r}, which is no free-text field (free-text fields: {', '.join(free)})"
            )
    return list(wanted)


def judge_job(model: Any, path: Path, cell: Cell, fields: Sequence[str], **map_options: Any) -> MapJob:
    """The judge's map run over each wrong free-text field of the cell's rows."""
    items = [
        (
            f"{row.run_key}{_SEP}{name}",
            {
                "field": name,
                "expected": value_at(row.expected, name),
                "answer": value_at(row.actual, name),
            },
        )
        for row in cell.rows
        for name in fields
        if row.fields.get(name, Outcome("right")).status == "wrong"
    ]
    return MapJob(model, path, items, {"prompt": PROMPT, "schema": SCHEMA, **map_options})


def apply_verdicts(path: Path, cell: Cell, still: Callable[[RowResult, str], bool] | None = None) -> None:
    """The judge's verdicts kept in `path`, applied to the cell's rows (and its calls priced into
    them); with `still`, only those of which `still(row, field)` says they still hold (a rescore)."""
    rows = {row.run_key: row for row in cell.rows}
    for key, line in read_lines(path).items():
        row_key, _, name = key.rpartition(_SEP)
        row = rows.get(row_key)
        if row is None or (still is not None and not still(row, name)):
            continue
        row.charge(line["_map"], name, line.get("error"))
        if "error" in line:  # no verdict: the field stays as the rules scored it, the failure counted
            continue
        value = line.get("value")
        if isinstance(value, dict) and value.get("same") is True:
            row.fields[name] = Outcome("right", 1)
            row.judged.append(name)


__all__ = ["PROMPT", "SCHEMA", "apply_verdicts", "free_text_fields", "judge_job"]
