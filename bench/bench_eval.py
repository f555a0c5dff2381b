"""How long scoring takes: 100,000 answers of a 10-field schema (integer, number with a tolerance,
strings, a date, a boolean, an enum, a nullable string, a nested object's two fields, an array of
strings) against their expected answers, about a third of the fields wrong, then the per-field
figures of the cell. A second run adds an array of three objects per row (aligned before scoring).

    .venv/bin/python bench/bench_eval.py [--rows 100000 --out eval.json]

No model is called for the scoring. A third run times the same 2,000 rows (`--map-rows`) through
`model.map` alone and through `evaluate` on a scripted model that answers at once (the worst case for
what an eval adds to its map: the map's own time is as small as it gets).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "total": {"type": "number"},
        "vendor": {"type": "string"},
        "date": {"type": "string", "format": "date"},
        "paid": {"type": "boolean"},
        "currency": {"enum": ["EUR", "USD", "GBP"]},
        "note": {"type": ["string", "null"]},
        "customer": {"type": "object", "properties": {"name": {"type": "string"}, "vat": {"type": "string"}}},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
}
LINES = {
    "type": "array",
    "items": {"type": "object", "properties": {"name": {"type": "string"}, "qty": {"type": "integer"}}},
}


def pair(n: int, rng: random.Random, lines: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    expected: dict[str, Any] = {
        "id": n, "total": 100.0 + n, "vendor": f"Shop {n % 97}", "date": f"2024-03-{1 + n % 28:02d}",
        "paid": n % 2 == 0, "currency": "EUR", "note": None if n % 3 else "late",
        "customer": {"name": f"Client {n % 13}", "vat": f"X{n}"}, "tags": ["a", "b", str(n % 5)],
    }  # fmt: skip
    if lines:
        expected["lines"] = [{"name": f"item {k}", "qty": k + 1} for k in range(3)]
    actual = json.loads(json.dumps(expected))
    for key in list(actual):
        if rng.random() < 0.33:
            value = actual[key]
            actual[key] = (
                value + 1 if isinstance(value, int) and not isinstance(value, bool)
                else value * 1.02 if isinstance(value, float)
                else value.upper() + "x" if isinstance(value, str)
                else list(reversed(value))[:-1] if isinstance(value, list)
                else None
            )  # fmt: skip
    return expected, actual


def measure(rows: int, lines: bool) -> dict[str, Any]:
    from chainform.evals import Options, compile_plan, score
    from chainform.evals._report import Cell, RowResult

    with contextlib.suppress(ImportError):  # imported once per process (about a second): not a cost per row
        import scipy.optimize  # noqa: F401

    schema = json.loads(json.dumps(SCHEMA))
    if lines:
        schema["properties"]["lines"] = LINES
    rng = random.Random(1)
    pairs = [pair(n, rng, lines) for n in range(rows)]
    plan = compile_plan(schema, Options(tolerance={"total": 0.01}))
    started, cpu = time.perf_counter(), time.process_time()
    outcomes = [score(plan, e, a) for e, a in pairs]
    scored, scored_cpu = time.perf_counter() - started, time.process_time() - cpu
    cell = Cell("m", "native", "p", "r", [RowResult(str(i), o, None) for i, o in enumerate(outcomes)])
    started, cpu = time.perf_counter(), time.process_time()
    figures = cell.fields()
    summed, summed_cpu = time.perf_counter() - started, time.process_time() - cpu
    return {
        "rows": rows,
        "fields": len(figures),
        "array_of_objects": lines,
        "score_seconds": round(scored, 3),
        "figures_seconds": round(summed, 3),
        "total_seconds": round(scored + summed, 3),
        "total_cpu_seconds": round(scored_cpu + summed_cpu, 3),
        "field_accuracy": round(cell.field_accuracy, 4),
    }


def overhead(rows: int) -> dict[str, Any]:
    """The same rows through `model.map` alone and through `evaluate` (which runs that map, then
    reads the log and scores): a scripted model answers at once, so this is the worst case."""
    import os
    import tempfile

    os.environ["CHAINFORM_HOME"] = tempfile.mkdtemp(prefix="bench-eval-")
    import chainform as cf
    from chainform.testing import ScriptedClient

    def reply(messages: Any, options: Any) -> str:
        n = int(messages[-1].text.rsplit(" ", 1)[-1])
        return json.dumps({"id": n, "total": n / 2})

    data = [{"text": f"order {n}", "expected": {"id": n, "total": n / 2 if n % 3 else 0}} for n in range(rows)]
    inputs = [{"text": row["text"]} for row in data]

    def model() -> Any:
        return cf.Model(ScriptedClient([reply] * rows), name="scripted")

    schema = "id int, total float"
    started = time.perf_counter()
    list(model().map(inputs, prompt="Extract: {text}", schema=schema, strategy="native"))
    mapped = time.perf_counter() - started
    started = time.perf_counter()
    cf.evaluate(data, schema=schema, prompt="Extract: {text}", models=[model()], strategies=["native"])
    evaluated = time.perf_counter() - started
    return {
        "rows": rows,
        "map_seconds": round(mapped, 3),
        "eval_seconds": round(evaluated, 3),
        "added": round(evaluated / mapped - 1, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--map-rows", type=int, default=2000, help="rows of the map-vs-eval run")
    args = parser.parse_args()
    results = [measure(args.rows, lines=False), measure(args.rows, lines=True), overhead(args.map_rows)]
    text = json.dumps(results, indent=2)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
