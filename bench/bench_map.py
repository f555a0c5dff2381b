"""`model.amap` throughput: against a hand-written asyncio + AsyncOpenAI loop, and concurrency scaling.

Every row is one chain: prompt -> `get_weather` tool call -> the tool runs -> a schema answer
(two HTTP calls), on bench/loopback.py's fast OpenAI-compatible server in its own process.

1. Zero think time: rows/s of `amap(concurrency=C)` (log off, and log on) against the peer, an
   `asyncio.Semaphore(C)` + `gather` loop on the official `AsyncOpenAI` doing the same two calls
   and validating the same pydantic model. Interleaved rounds, shuffled order, median rows/s.
2. Each reply 200 ms late: rows/s of `amap` at concurrency 1 and 32 (the same rows per worker).

    .venv/bin/python bench/bench_map.py [--rounds 5 --rows 200 --out FILE]

3. `--cpu [--against SRC ...]`: client CPU ms per row (the steady figure on a shared machine, where
   wall-clock ratios are noisy) of the peer and of `amap` with log off and on, at zero think time;
   with `--against` (e.g. main's `src/`) each of `--pairs` rounds runs this tree and SRC one after
   the other, each in a fresh process, so the two trees see the same load. Prints a JSON summary
   with medians, minima, CPU ratios (peer / amap) and the load average before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _common import emit, median, start_loopback, versions
from bench_chain import (
    MODEL,
    PROMPT,
    RESPONSE_FORMAT,
    WEATHER_TOOL,
    Answer,
    _sdk_messages_after_call,
    check,
    get_weather,
)

CONCURRENCY = 16
PEER = "asyncio + AsyncOpenAI loop"


async def peer(base_url: str, rows: int, concurrency: int) -> list[Answer]:
    import openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)
    gate = asyncio.Semaphore(concurrency)

    async def one() -> Answer:
        async with gate:
            messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
            for _ in range(5):
                reply = await client.chat.completions.create(
                    model=MODEL, messages=messages, tools=[WEATHER_TOOL], response_format=RESPONSE_FORMAT
                )
                message = reply.choices[0].message
                if not message.tool_calls:
                    return Answer.model_validate_json(message.content or "")
                _sdk_messages_after_call(messages, [c.model_dump() for c in message.tool_calls])
            raise RuntimeError("no answer")

    try:
        return list(await asyncio.gather(*(one() for _ in range(rows))))
    finally:
        await client.close()


_MODELS: dict[str, Any] = {}


async def chainform(base_url: str, rows: int, concurrency: int, log: bool) -> list[Any]:
    import chainform as cf

    # one model per server, as a program keeps it: an openai SDK client dropped without close()
    # can stall a later client's requests when it is garbage-collected (seen with openai + httpx)
    model = _MODELS.get(base_url)
    if model is None:
        model = _MODELS[base_url] = cf.get_async_model(
            f"openai/{MODEL}", base_url=base_url, key="bench", max_retries=0, profile="openai"
        )
    results = model.amap(
        [PROMPT] * rows, tools=[get_weather], schema=Answer, concurrency=concurrency, log=log
    )
    out = []
    async for result in results:
        if result.error is not None:
            raise RuntimeError(result.error.message)
        out.append(result.value)
    return out


_LOOP = asyncio.new_event_loop()  # one loop for every run: SDK clients are closed on the loop they used


CPU_MS: dict[str, list[float]] = {}


def rate(run: Any, rows: int, name: str = "") -> float:
    """Rows per second of wall clock; the client's CPU ms per row is kept in CPU_MS[name]."""
    started, cpu = time.perf_counter(), time.process_time()
    answers = _LOOP.run_until_complete(run)
    seconds = time.perf_counter() - started
    CPU_MS.setdefault(name, []).append((time.process_time() - cpu) * 1000 / rows)
    assert len(answers) == rows
    for answer in answers:
        check(answer, schema=True)
    return rows / seconds


def zero_think_time(rounds: int, rows: int) -> dict[str, Any]:
    proc, base_url = start_loopback("fast")
    runs = {
        PEER: lambda n: peer(base_url, n, CONCURRENCY),
        "chainform amap (log=False)": lambda n: chainform(base_url, n, CONCURRENCY, False),
        "chainform amap": lambda n: chainform(base_url, n, CONCURRENCY, True),
    }
    samples: dict[str, list[float]] = {name: [] for name in runs}
    try:
        for run in runs.values():  # warm-up: imports, the first connections, the log file
            rate(run(20), 20)
        for _ in range(rounds):
            order = list(runs)
            random.shuffle(order)
            for name in order:
                samples[name].append(rate(runs[name](rows), rows, name))
    finally:
        proc.kill()
        proc.wait()
    base = median(samples[PEER])
    return {
        name: {
            "rows_per_s": round(median(values), 1),
            "min": round(min(values), 1),
            "max": round(max(values), 1),
            "vs_peer": round(median(values) / base, 3),
            "cpu_ms_per_row": round(median(CPU_MS[name]), 2),
        }
        for name, values in samples.items()
    }


def with_delay(delay: float, per_worker: int) -> dict[str, Any]:
    """amap and the peer at concurrency 1 and 32, the same rows per worker."""
    proc, base_url = start_loopback("fast", str(delay))
    out: dict[str, Any] = {}
    try:
        rate(chainform(base_url, 4, 4, False), 4)  # warm-up
        for name, run in (
            ("chainform amap", lambda n, c: chainform(base_url, n, c, False)),
            (PEER, lambda n, c: peer(base_url, n, c)),
        ):
            speeds = {c: rate(run(per_worker * c, c), per_worker * c) for c in (1, 32)}
            out[name] = {
                "rows_1": per_worker,
                "rows_32": per_worker * 32,
                "rows_per_s_1": round(speeds[1], 2),
                "rows_per_s_32": round(speeds[32], 2),
                "speedup": round(speeds[32] / speeds[1], 1),
            }
    finally:
        proc.kill()
        proc.wait()
    return out


def table(result: dict[str, Any]) -> str:
    """The markdown docs/benchmarks.md shows (bench/report.py calls this)."""
    zero = result["zero_think_time"]
    lines = [
        f"{result['rows']} rows a run, concurrency {result['concurrency']}, median of {result['rounds']} "
        "interleaved rounds; every row is a chain of two HTTP calls (tool call, then a schema answer).",
        "",
        "| zero think time | rows/s (median) | min | max | ratio to the asyncio + AsyncOpenAI loop "
        "| client CPU ms per row |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in zero.items():
        lines.append(
            f"| {name} | {r['rows_per_s']} | {r['min']} | {r['max']} | **{r['vs_peer']:.2f}** "
            f"| {r['cpu_ms_per_row']} |"
        )
    lines += [
        "",
        f"| each reply {int(result['delay_s'] * 1000)} ms late | rows/s, concurrency 1 | "
        "rows/s, concurrency 32 | speed-up 32 vs 1 |",
        "|---|---|---|---|",
    ]
    for name, r in result["delay"].items():
        label = f"{name} (log=False)" if name != PEER else name
        lines.append(
            f"| {label} | {r['rows_per_s_1']} ({r['rows_1']} rows) | {r['rows_per_s_32']} "
            f"({r['rows_32']} rows) | **{r['speedup']}x** |"
        )
    return "\n".join(lines)


def cpu_once(rows: int, rounds: int) -> dict[str, list[float]]:
    """CPU ms per row of each run (peer, amap log off, amap log on), interleaved, in this process."""
    proc, base_url = start_loopback("fast")
    runs = {
        PEER: lambda n: peer(base_url, n, CONCURRENCY),
        "amap log=False": lambda n: chainform(base_url, n, CONCURRENCY, False),
        "amap log=True": lambda n: chainform(base_url, n, CONCURRENCY, True),
    }
    try:
        for run in runs.values():  # warm-up
            rate(run(20), 20, "warm-up")
        for _ in range(rounds):
            order = list(runs)
            random.shuffle(order)
            for name in order:
                rate(runs[name](rows), rows, name)
    finally:
        proc.kill()
        proc.wait()
    return {name: CPU_MS[name] for name in runs}


def cpu_ab(rows: int, rounds: int, pairs: int, against: list[str]) -> dict[str, Any]:
    """Client CPU ms per row, this tree against other source trees, alternating fresh processes."""
    import json
    import subprocess

    sides = {"this tree": str(Path(__file__).resolve().parents[1] / "src")}
    sides.update({src: str(Path(src).resolve()) for src in against})
    samples: dict[str, dict[str, list[float]]] = {side: {} for side in sides}
    stalled: dict[str, int] = {side: 0 for side in sides}
    load_before = os.getloadavg()
    for _ in range(pairs):
        for side, src in sides.items():
            cmd = [sys.executable, __file__, "--cpu-once", "--rows", str(rows), "--rounds", str(rounds)]
            env = dict(os.environ, PYTHONPATH=src)
            try:  # a run that stalls (the HTTP client waiting on a reply it never reads) is counted
                out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True, timeout=300)
            except subprocess.TimeoutExpired:
                stalled[side] += 1
                continue
            for name, values in json.loads(out.stdout).items():
                samples[side].setdefault(name, []).extend(values)
    result: dict[str, Any] = {"rows": rows, "rounds": rounds, "pairs": pairs, "concurrency": CONCURRENCY}
    for side, runs in samples.items():
        peer_ms = median(runs[PEER])
        result[side] = {
            name: {
                "cpu_ms_per_row": round(median(values), 3),
                "min": round(min(values), 3),
                "peer_cpu_over_this": round(peer_ms / median(values), 3),
            }
            for name, values in runs.items()
        }
    result["stalled_processes"] = stalled
    result["load_average_before"] = [round(x, 2) for x in load_before]
    result["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--rows", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--per-worker", type=int, default=8)
    parser.add_argument("--out")
    parser.add_argument("--cpu", action="store_true", help="client CPU ms per row only (A/B-able)")
    parser.add_argument(
        "--against", action="append", default=[], help="with --cpu: another source tree (repeatable)"
    )
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--cpu-once", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ["CHAINFORM_HOME"] = tempfile.mkdtemp(prefix="chainform-bench-map-")
    if args.cpu_once:
        print(__import__("json").dumps(cpu_once(args.rows, args.rounds)))
        return
    if args.cpu:
        emit(cpu_ab(args.rows, args.rounds, args.pairs, args.against), args.out)
        return
    result = {
        "rows": args.rows,
        "rounds": args.rounds,
        "concurrency": CONCURRENCY,
        "zero_think_time": zero_think_time(args.rounds, args.rows),
        "delay_s": args.delay,
        "delay": with_delay(args.delay, args.per_worker),
        "versions": versions("chainform", "openai"),
    }
    emit(result, args.out)
    print(table(result), file=sys.stderr)


if __name__ == "__main__":
    main()
