"""One map run of an eval, committed row by row to a JSONL file (the map's own commit record):
`--resume` skips every key already there, so each row is sent once even after a kill -9."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

KEY = "_chainform_eval_key"
"""The field each row gives the map to key it by: the row's key in the data, whatever rows a resume skips."""


def run_map(
    model: Any,
    path: Path,
    items: Sequence[tuple[str, dict[str, Any]]],
    *,
    resume: bool,
    budget: Any = None,
    retry_errors: bool = False,
    on_start: Callable[[set[str]], None] | None = None,
    on_line: Callable[[dict[str, Any]], None] | None = None,
    **map_options: Any,
) -> str:
    """Map `items` ((key, fields) pairs) into `path`, skipping keys already there; returns the run id.
    A failed row stays failed on resume (it is a result of the eval, not a row still to do) unless
    `retry_errors` (a judge's failed call is no verdict: a resume asks again). `on_start(done_keys)`
    is called before the first row, `on_line(line)` after each row is committed."""
    from chainform._map._jsonl import JsonlSink, line_for
    from chainform.store import new_id

    sink = JsonlSink(path)
    sink.prepare(resume=resume, retry_errors=retry_errors)
    run_id = sink.run_id or new_id()
    todo = [{**fields, KEY: key} for key, fields in items if key not in sink.done]
    if on_start is not None:
        on_start(set(sink.done))
    try:
        if todo:
            if budget is not None:
                map_options["max_cost"] = budget
            for result in model.map(todo, id_field=KEY, run_id=run_id, **map_options):
                line = line_for(result, run_id, {})
                sink.commit(line)
                if on_line is not None:
                    on_line(line)
    finally:
        sink.close()
    return run_id


def read_lines(path: Path) -> dict[str, dict[str, Any]]:
    """The committed lines of a run, by key."""
    out: dict[str, dict[str, Any]] = {}
    if path.is_file():
        with open(path, encoding="utf-8") as handle:
            for raw in handle:
                if raw.strip():
                    line = json.loads(raw)
                    out[str(line["_map"]["key"])] = line
    return out


__all__ = ["KEY", "read_lines", "run_map"]
