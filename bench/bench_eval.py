"""How long scoring takes: 100,000 answers of a 10-field schema (integer, number with a tolerance,
strings, a date, a boolean, an enum, a nullable string, a nested object's two fields, an array of
strings) against their expected answers, about a third of the fields wrong, then the per-field
figures of the cell. A second run adds an array of three objects per row (aligned before scoring).

    .venv/bin/python bench/bench_eval.py [--rows 100000 --out eval.json]

No model is called for the scoring. Then the same 2,000 rows (`--map-rows`) go through `model.map`
alone and through `evaluate`, interleaved `--rounds` times, on a scripted model that answers at once
(the worst case for what an eval adds to its map: the map's own time is as small as it gets) and on
one that thinks `--delay` seconds (20 ms) a call; the last lines print eval/map for both.
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


def overhead(rows: int, delay: float, rounds: int) -> dict[str, Any]:
    """The same rows through `model.map` alone and through `evaluate` (which runs that map, then
    reads the log and scores), `rounds` times each, interleaved after a warm-up; a scripted model
    answers each call `delay` seconds late (0: the worst case for what an eval adds). Medians."""
    import asyncio
    import os
    import statistics
    import tempfile

    os.environ["CHAINFORM_HOME"] = tempfile.mkdtemp(prefix="bench-eval-")  # never the user's own log
    import chainform as cf
    from chainform.testing import ScriptedClient

    class Late(ScriptedClient):
        """A scripted model that thinks `delay` seconds before each answer (without holding the loop)."""

        async def _stream(self, messages: Any, options: Any) -> Any:
            await asyncio.sleep(delay)
            async for update in super()._stream(messages, options):
                yield update

    def reply(messages: Any, options: Any) -> str:
        n = int(messages[-1].text.rsplit(" ", 1)[-1])
        return json.dumps({"id": n, "total": n / 2})

    def run(kind: str, n: int) -> tuple[float, float, float]:
        """Wall seconds, process CPU seconds, and CPU seconds of this thread: an eval's own work (reading
        the rows, writing and reading its lines, scoring, the log, the report) runs here, while the
        model calls of both runs run on chainform's loop thread."""
        data = [
            {"text": f"order {k}", "expected": {"id": k, "total": k / 2 if k % 3 else 0}} for k in range(n)
        ]
        model = cf.Model(Late([reply] * n), name="scripted")
        schema, prompt = "id int, total float", "Extract: {text}"
        started, cpu, own = time.perf_counter(), time.process_time(), time.thread_time()
        if kind == "map":  # each result read and dropped, as the eval's own map does once its line is written
            inputs = [{"text": row["text"]} for row in data]
            for _result in model.map(inputs, prompt=prompt, schema=schema, strategy="native"):
                pass
        else:
            cf.evaluate(data, schema=schema, prompt=prompt, models=[model], strategies=["native"])
        return time.perf_counter() - started, time.process_time() - cpu, time.thread_time() - own

    run("map", 50), run("eval", 50)  # warm-up: imports and first-call set-up are no cost per row
    times: dict[str, list[tuple[float, float, float]]] = {"map": [], "eval": []}
    for _ in range(rounds):
        for kind in times:
            times[kind].append(run(kind, rows))
    wall = {kind: statistics.median(t[0] for t in got) for kind, got in times.items()}
    cpu = {kind: statistics.median(t[1] for t in got) for kind, got in times.items()}
    caller = {kind: statistics.median(t[2] for t in got) for kind, got in times.items()}
    return {
        "rows": rows,
        "delay_ms": round(delay * 1000),
        "rounds": rounds,
        "map_seconds": round(wall["map"], 3),
        "eval_seconds": round(wall["eval"], 3),
        "ratio": round(wall["eval"] / wall["map"], 3),
        "added_ms_per_row": round((wall["eval"] - wall["map"]) / rows * 1000, 3),
        "map_cpu_seconds": round(cpu["map"], 3),
        "eval_cpu_seconds": round(cpu["eval"], 3),
        "cpu_ratio": round(cpu["eval"] / cpu["map"], 3),
        "caller_cpu_added_ms_per_row": round((caller["eval"] - caller["map"]) / rows * 1000, 3),
        "load_average": os.getloadavg()[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--map-rows", type=int, default=2000, help="rows of the map-vs-eval runs")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved map and eval runs (medians)")
    parser.add_argument("--delay", type=float, default=0.02, help="think time (s) of the second map-vs-eval")
    parser.add_argument("--only-overhead", action="store_true", help="skip the scoring runs")
    args = parser.parse_args()
    results = [] if args.only_overhead else [measure(args.rows, lines=False), measure(args.rows, lines=True)]
    timed = [overhead(args.map_rows, delay, args.rounds) for delay in (0.0, args.delay)]
    results += timed
    text = json.dumps(results, indent=2)
    print(text)
    for r in timed:
        print(
            f"eval/map at {r['delay_ms']} ms think time, {r['rows']} rows: wall {r['ratio']:.3f} "
            f"({r['added_ms_per_row']:+.3f} ms a row), CPU {r['cpu_ratio']:.3f} "
            f"(calling thread {r['caller_cpu_added_ms_per_row']:+.3f} ms a row), load average {r['load_average']:.1f}"
        )
    if args.out is not None:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    sys.exit(main())
