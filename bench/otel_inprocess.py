"""Tracing's cost in one process: bench_chain's logged http chain (openai SDK → bench/loopback.py)
run in short alternating rounds with tracing off, on (chainform's hooks) and on with the bare SDK
replay (otel_replay.Replay), so every side sees the same heap, the same server and the same load.
Per side: CPU ms per chain (the whole process: the batch processor's thread and GC included) and
the hooks' thread ms per chain (otel_replay.Timed), minima and medians over the rounds.

    PYTHONPATH=src .venv/bin/python bench/otel_inprocess.py [--rounds 16 --chains 100]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=16)
    parser.add_argument("--chains", type=int, default=100)
    parser.add_argument("--schema", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("CHAINFORM_HOME", tempfile.mkdtemp(prefix="bench-otel-"))
    from _common import start_loopback
    from bench_chain import chainform_runner
    from bench_otel import instrument
    from otel_replay import Timed, capture

    from chainform import _trace

    instrument()
    hooks = _trace.hooks
    server, url = start_loopback("fast")
    try:
        run = chainform_runner(url, args.schema)
        for _ in range(10):
            run()
        replay, _seen = capture(hooks, run)
        sides: dict[str, Any] = {"off": None, "on": Timed(hooks), "on, bare sdk": Timed(replay)}
        cpu: dict[str, list[float]] = {name: [] for name in sides}
        thread: dict[str, list[float]] = {name: [] for name in sides if sides[name] is not None}
        for _ in range(args.rounds):
            for name, side in sides.items():
                _trace.hooks = side
                if side is not None:
                    side.ms = 0.0
                started = time.process_time()
                for _ in range(args.chains):
                    run()
                cpu[name].append((time.process_time() - started) / args.chains * 1000)
                if side is not None:
                    thread[name].append(side.ms / args.chains)
        _trace.hooks = hooks
    finally:
        server.kill()
        server.wait()

    def summary(values: list[float]) -> dict[str, float]:
        return {"min": round(min(values), 4), "median": round(statistics.median(values), 4)}

    off = cpu["off"]
    result = {
        "chain": "http tools+schema" if args.schema else "http tools",
        "rounds": args.rounds,
        "chains": args.chains,
        "cpu ms per chain": {name: summary(values) for name, values in cpu.items()},
        "paired ratio to off (median of rounds)": {
            name: round(statistics.median(v / o for v, o in zip(values, off, strict=True)), 3)
            for name, values in cpu.items()
            if name != "off"
        },
        "hooks' thread ms per chain": {name: summary(values) for name, values in thread.items()},
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
