"""What tracing costs a chain: CPU ms per chain (bench_engine's chain on ScriptedClient: a tool
call turn + an answer turn, without and with a schema; and bench_chain's logged chainform chain
through the openai SDK to the loopback server, "http"), with tracing off, off on another source
tree (`--against`, e.g. main's src/ before this change), and on (`cf.instrument` with the real
opentelemetry-sdk: a BatchSpanProcessor whose exporter drops the spans, and a MeterProvider).

The sides alternate in rounds of fresh processes (`--pairs`); each side's minimum is the least
disturbed figure on a shared machine, and the ratios compare minima of the same run.

    .venv/bin/python bench/bench_otel.py [--chains 400 --pairs 5 --against ../main/src]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))


def instrument() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    import chainform as cf

    class Dropped(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(Dropped()))
    cf.instrument(provider, meter_provider=MeterProvider(metric_readers=[InMemoryMetricReader()]))


def measure_http(chains: int) -> dict[str, float]:
    """CPU ms per chain through the openai SDK to bench/loopback.py (its own process), logged:
    bench_chain's chainform row, the chain a service would run."""
    import tempfile
    import time

    from _common import start_loopback
    from bench_chain import chainform_runner

    os.environ.setdefault("CHAINFORM_HOME", tempfile.mkdtemp(prefix="bench-otel-"))
    server, url = start_loopback("fast")
    try:
        out: dict[str, float] = {}
        for variant, schema in (("http tools", False), ("http tools+schema", True)):
            run = chainform_runner(url, schema)
            for _ in range(5):
                run()
            started = time.process_time()
            for _ in range(chains):
                run()
            out[variant] = round((time.process_time() - started) / chains * 1000, 4)
        return out
    finally:
        server.kill()
        server.wait()


def table(results: dict[str, Any]) -> str:
    """The markdown table bench/report.py shows: CPU ms per chain off and on, and the ratios."""
    best, ratios = results["min_cpu_ms"], results["ratios"]
    against = "against (off)" in best
    head = ["chain", "off (ms)", "on (ms)", "on / off"] + (["off / against"] if against else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for variant in best["off"]:
        row = [variant, best["off"][variant], best["on"][variant], ratios[variant]["on / off"]]
        if against:
            row.append(ratios[variant]["off / against"])
        lines.append("| " + " | ".join(str(v) for v in row) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=400)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--against", help="another source tree, measured with tracing off")
    parser.add_argument("--once", choices=("off", "on"), help=argparse.SUPPRESS)
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.once:
        from bench_engine import measure

        if args.once == "on":
            instrument()
        print(json.dumps({**measure(args.chains), **measure_http(args.chains)}))
        return
    sides: dict[str, tuple[str | None, str]] = {"off": (None, "off"), "on": (None, "on")}
    if args.against:
        sides["against (off)"] = (args.against, "off")
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    for _ in range(args.pairs):
        for name, (src, mode) in sides.items():
            env = dict(os.environ, PYTHONPATH=src) if src else dict(os.environ)
            cmd = [sys.executable, __file__, "--once", mode, "--chains", str(args.chains)]
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    best = {name: {v: min(r[v] for r in rs) for v in rs[0]} for name, rs in runs.items()}
    ratios = {v: {"on / off": round(best["on"][v] / best["off"][v], 3)} for v in best["off"]}
    if args.against:
        for v in ratios:
            ratios[v]["off / against"] = round(best["off"][v] / best["against (off)"][v], 3)
    result = {"chains": args.chains, "pairs": args.pairs, "min_cpu_ms": best, "ratios": ratios, "runs": runs}
    text = json.dumps(result, indent=2)
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
