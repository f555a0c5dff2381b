"""Rows for `model.map`: lazy readers for JSONL, CSV and plain lines, keys, and prompt templates.

Everything here is a generator, so a 50,000-line file is never held in memory. A row that cannot
be read or filled in becomes a row with an `input` error instead of stopping the run.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from chainform.errors import ChainformError


class MapInputError(ChainformError, ValueError):
    """A row could not be read or its prompt could not be filled in (bad JSON, a missing field)."""


@dataclass
class Row:
    """One input: its position, its key (for resume) and the data its prompt is filled from."""

    index: int
    key: str
    data: str | dict[str, Any]
    error: MapInputError | None = None

    def prompt(self, template: str | None) -> str:
        """The prompt for this row: `template` filled from its fields, or the row's own text."""
        if template is None:
            if isinstance(self.data, str):
                return self.data
            raise MapInputError("rows are objects: give a prompt template such as 'Summarize: {text}'")
        try:
            return template.format_map(self.data if isinstance(self.data, dict) else {"text": self.data})
        except KeyError as exc:
            raise MapInputError(f"the prompt template names {exc}, which this row does not have") from None
        except (ValueError, IndexError, AttributeError) as exc:
            raise MapInputError(f"cannot fill the prompt template: {exc}") from None


def record_of(data: str | dict[str, Any]) -> dict[str, Any]:
    """A row as a JSON object: plain strings become `{"text": ...}` (what `{text}` fills from)."""
    return dict(data) if isinstance(data, dict) else {"text": data}


def rows(data: Iterable[Any], id_field: str | None = None, start: int = 0) -> Iterator[Row]:
    """Number the inputs (from `start`) and key them by `id_field` (when given) or by position."""
    for index, item in enumerate(data, start):
        if isinstance(item, Row):
            yield item
            continue
        error = None
        key = str(index)
        if isinstance(item, MapInputError):
            error, item = item, ""
        elif not isinstance(item, str | dict):
            error, item = MapInputError(f"an input must be a str or a dict, got {type(item).__name__}"), ""
        elif id_field is not None:
            if isinstance(item, dict) and item.get(id_field) not in (None, ""):
                key = str(item[id_field])
            else:
                error = MapInputError(f"the row has no {id_field!r} field to key it by")
        yield Row(index, key, item, error)


def read_file(path: str, fmt: str | None = None) -> Iterator[str | dict[str, Any] | MapInputError]:
    """Lazily read INPUT: `.jsonl`/`.json` lines, `.csv` rows, or `-`/other: one prompt per line."""
    kind = fmt or _format_of(path)
    handle: TextIO = sys.stdin if path == "-" else open(path, encoding="utf-8", newline="")  # noqa: SIM115
    try:
        if kind == "csv":
            yield from csv.DictReader(handle)
        elif kind == "jsonl":
            yield from _jsonl(handle)
        else:
            for line in handle:
                text = line.rstrip("\r\n")
                if text.strip():
                    yield text
    finally:
        if handle is not sys.stdin:
            handle.close()


def count_rows(path: str, fmt: str | None = None) -> int | None:
    """How many rows INPUT holds (for the progress bar's ETA); None for stdin."""
    if path == "-":
        return None
    if (fmt or _format_of(path)) == "csv":
        return sum(1 for _ in read_file(path, "csv"))
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip())


def _jsonl(handle: io.TextIOBase | TextIO) -> Iterator[dict[str, Any] | MapInputError]:
    for number, line in enumerate(handle, 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as exc:
            yield MapInputError(f"line {number} is not JSON: {exc}")
            continue
        yield value if isinstance(value, dict) else MapInputError(f"line {number} is not a JSON object")


def _format_of(path: str) -> str:
    suffix = Path(path).suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    if suffix == ".csv":
        return "csv"
    return "lines"
