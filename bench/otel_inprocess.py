"""Tracing's cost in one process: bench_chain's logged http chain (openai SDK → bench/loopback.py)
run in short alternating rounds with tracing off, on (chainform's hooks) and on with the bare SDK
replay (otel_replay.Replay), so every side sees the same heap, the same server and the same load.
Per side: CPU ms per chain (the whole process: the batch processor's thread and GC included),  each
thread's share of it (by thread name), the time in the garbage collector, and the hooks' thread ms per
chain (otel_replay.Timed), minima and medians over the rounds. `--delay S`: the server answers
each request S seconds late (a provider's think time); wall-clock ms per chain is then reported
too, a separate figure from the zero-latency one.

    PYTHONPATH=src .venv/bin/python bench/otel_inprocess.py [--rounds 16 --chains 100 --delay 0.005]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))


def thread_cpu() -> dict[str, float]:
    """CPU seconds used so far by each live thread of this process, by thread name."""
    out: dict[str, float] = {}
    for thread in threading.enumerate():
        if thread.ident is not None:
            try:
                clock = time.pthread_getcpuclockid(thread.ident)
                out[thread.name] = out.get(thread.name, 0.0) + time.clock_gettime(clock)
            except (OSError, ProcessLookupError):
                pass
    return out


def ratios(values: list[float], off: list[float]) -> dict[str, float]:
    """Each round's figure over the same round's "off": median, lowest and highest."""
    paired = [v / o for v, o in zip(values, off, strict=True)]
    return {k: round(f(paired), 4) for k, f in (("median", statistics.median), ("min", min), ("max", max))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--chains", type=int, default=100)
    parser.add_argument("--schema", action="store_true")
    parser.add_argument("--delay", type=float, default=0.0, help="the server's think time (seconds)")
    args = parser.parse_args()
    os.environ.setdefault("CHAINFORM_HOME", tempfile.mkdtemp(prefix="bench-otel-"))
    from _common import start_loopback
    from bench_chain import chainform_runner
    from bench_otel import instrument
    from otel_replay import Timed, capture

    from chainform import _trace

    instrument()
    hooks = _trace.hooks
    server, url = start_loopback("fast", *([str(args.delay)] if args.delay else []))
    in_gc = [0.0, 0.0]  # seconds spent in the collector, when the current one started

    def collector(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            in_gc[1] = time.perf_counter()
        else:
            in_gc[0] += time.perf_counter() - in_gc[1]

    gc.callbacks.append(collector)
    try:
        run = chainform_runner(url, args.schema)
        for _ in range(10):
            run()
        replay, _seen = capture(hooks, run)
        # CPU from the plain sides; the hooks' thread time from timed ones (the timing costs µs)
        sides: dict[str, Any] = {"off": None, "on": hooks, "on, bare sdk": replay}
        sides |= {"on (timed)": Timed(hooks), "on, bare sdk (timed)": Timed(replay)}
        cpu: dict[str, list[float]] = {name: [] for name in sides}
        threads = {name: list[dict[str, float]]() for name in sides}
        collecting = {name: list[float]() for name in sides}
        wall = {name: list[float]() for name in sides}
        thread: dict[str, list[float]] = {name: [] for name in sides if name.endswith("(timed)")}
        for _ in range(args.rounds):
            for name, side in sides.items():
                _trace.hooks = side
                if name in thread:
                    side.ms = 0.0
                in_gc[0] = 0.0
                started, own, clock = time.process_time(), thread_cpu(), time.perf_counter()
                for _ in range(args.chains):
                    run()
                per = 1000 / args.chains
                cpu[name].append((time.process_time() - started) * per)
                after = thread_cpu()
                threads[name].append({t: (after[t] - own.get(t, 0.0)) * per for t in after})
                wall[name].append((time.perf_counter() - clock) * per)
                collecting[name].append(in_gc[0] * per)
                if name in thread:
                    thread[name].append(side.ms / args.chains)
        _trace.hooks = hooks
    finally:
        server.kill()
        server.wait()

    def summary(values: list[float]) -> dict[str, float]:
        return {"min": round(min(values), 4), "median": round(statistics.median(values), 4)}

    off = cpu["off"]
    plain = [name for name in cpu if name not in thread]
    result = {
        "chain": "http tools+schema" if args.schema else "http tools",
        "rounds": args.rounds,
        "chains": args.chains,
        "cpu ms per chain": {name: summary(cpu[name]) for name in plain},
        "paired ratio to off (median and range of rounds)": {
            name: ratios(cpu[name], off) for name in plain if name != "off"
        },
        "cpu ms per chain by thread (median)": {
            name: {t: round(statistics.median(r.get(t, 0.0) for r in rs), 4) for t in rs[-1]}
            for name, rs in threads.items()
            if name in plain
        },
        "ms in the garbage collector per chain": {name: summary(collecting[name]) for name in plain},
        "hooks' thread ms per chain": {name: summary(values) for name, values in thread.items()},
    }
    if args.delay:
        result["server think time (s)"] = args.delay
        result["wall ms per chain"] = {name: summary(wall[name]) for name in plain}
        result["paired wall ratio to off (median and range of rounds)"] = {
            name: ratios(wall[name], wall["off"]) for name in plain if name != "off"
        }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
