"""What tracing costs a chain: CPU ms per chain (bench_engine's chain on ScriptedClient: a tool
call turn + an answer turn, without and with a schema; and bench_chain's logged chainform chain
through the openai SDK to the loopback server, "http"), with tracing off, off on another source
tree (`--against`, e.g. main's src/ before this change; `--against-on` measures it with tracing
on too), and on (`cf.instrument` with the real opentelemetry-sdk set up as a deployment sets it
up: a TracerProvider with the default sampler and a BatchSpanProcessor at its default settings,
a MeterProvider with a PeriodicExportingMetricReader at its default interval; both exporters drop
what they are given, so no network or serialisation is counted, only what the process pays).

"on, bare sdk" (http chains only): tracing on, with chainform's hooks replaced by a replay of the
SDK calls they made for one captured chain of the same kind (bench/otel_replay.py): the same spans,
attributes and metric points through the same providers with no chainform code, so "on, bare sdk"
- "off" is the SDK's own cost in situ and "on" - "on, bare sdk" is chainform's. The "on" processes
also time the hooks and the replay back to back in a hot loop ("hot loop: ..." in µs per chain).
In the "on" and "on, bare sdk" processes, after the timed chains, half as many more run with the
hooks wrapped (otel_replay.Timed) to sum the thread CPU time spent inside them ("...: hooks'
thread ms" per chain): chainform's hooks against the replay, in situ, without the noise of the
whole process's time; the wrapper's own cost (a few µs a chain) is in both, and in neither CPU
figure.

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


def providers() -> tuple[Any, Any]:
    """A TracerProvider and MeterProvider as a service sets them up, with exporters that drop."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import (
        MetricExporter,
        MetricExportResult,
        PeriodicExportingMetricReader,
    )
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class DroppedSpans(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    class DroppedMetrics(MetricExporter):
        def export(
            self, metrics_data: Any, timeout_millis: float = 10_000, **kwargs: Any
        ) -> MetricExportResult:
            return MetricExportResult.SUCCESS

        def force_flush(self, timeout_millis: float = 10_000) -> bool:
            return True

        def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
            pass

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(DroppedSpans()))
    meter_provider = MeterProvider(metric_readers=[PeriodicExportingMetricReader(DroppedMetrics())])
    return tracer_provider, meter_provider


def instrument() -> tuple[Any, Any]:
    import chainform as cf

    tracer_provider, meter_provider = providers()
    cf.instrument(tracer_provider, meter_provider=meter_provider)
    return tracer_provider, meter_provider


def measure_http(chains: int, mode: str = "off") -> dict[str, float]:
    """CPU ms per chain through the openai SDK to bench/loopback.py (its own process), logged:
    bench_chain's chainform row, the chain a service would run. `mode` "bare": the hooks replaced
    by the replay of one captured chain's SDK calls; "on": the hot loop timed after the chains."""
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
            if mode != "off":
                from otel_replay import Timed, capture, hot_loop

                from chainform import _trace

                hooks = _trace.hooks
                replay, seen = capture(hooks, run)
                if mode == "on" and not schema:
                    out.update(hot_loop(hooks, replay, seen, chains))
                side = replay if mode == "bare" else hooks
                _trace.hooks = side  # type: ignore[assignment]
            started = time.process_time()
            for _ in range(chains):
                run()
            out[variant] = round((time.process_time() - started) / chains * 1000, 4)
            if mode != "off":
                timed = Timed(side)  # after, apart: the timing's own cost stays out of the CPU figure
                _trace.hooks = timed  # type: ignore[assignment]
                for _ in range(chains // 2):
                    run()
                out[f"{variant}: hooks' thread ms"] = round(timed.ms / (chains // 2), 4)
                _trace.hooks = hooks
        return out
    finally:
        server.kill()
        server.wait()


def table(results: dict[str, Any]) -> str:
    """The markdown table bench/report.py shows: CPU ms per chain off and on, and the ratios."""
    best, ratios = results["min_cpu_ms"], results["ratios"]
    keys = ("off / against", "against on / against off", "on / against on")
    extra = [k for k in keys if k in ratios["tools"]]
    head = [
        "chain",
        "off (ms)",
        "on (ms)",
        "on - off (ms)",
        "on / off",
        "on, bare sdk (ms)",
        "bare sdk / off",
    ]
    lines = ["| " + " | ".join(head + extra) + " |", "|" + "---|" * len(head + extra)]
    for variant in best["off"]:
        r = ratios[variant]
        row = [variant, best["off"][variant], best["on"][variant], r["on - off (ms)"], r["on / off"]]
        row += [best["on, bare sdk"].get(variant, "-"), r.get("bare sdk / off", "-"), *(r[k] for k in extra)]
        lines.append("| " + " | ".join(str(v) for v in row) + " |")
    hot = {k: v for k, v in best["on"].items() if k.startswith("hot loop")}
    if hot:
        lines.append("\n" + ", ".join(f"{k}: {v}" for k, v in hot.items()))
    for variant in best["on, bare sdk"]:
        if variant.endswith("thread ms"):
            own, sdk = best["on"][variant], best["on, bare sdk"][variant]
            before = best.get("against (on)", {}).get(variant)
            was = f", the other tree's hooks {before}" if before is not None else ""
            lines.append(f"\n{variant} per chain: chainform's hooks {own}{was}, the bare SDK replay {sdk}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=400)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--against", help="another source tree, measured with tracing off")
    parser.add_argument("--against-on", action="store_true", help="measure --against with tracing on too")
    parser.add_argument("--once", choices=("off", "on", "bare"), help=argparse.SUPPRESS)
    parser.add_argument("--out")
    args = parser.parse_args()
    if args.once:
        from bench_engine import measure

        if args.once != "off":
            instrument()
        engine = measure(args.chains) if args.once != "bare" else {}
        print(json.dumps({**engine, **measure_http(args.chains, args.once)}))
        return
    sides: dict[str, tuple[str | None, str]] = {
        "off": (None, "off"),
        "on": (None, "on"),
        "on, bare sdk": (None, "bare"),
    }
    if args.against:
        sides["against (off)"] = (args.against, "off")
        if args.against_on:
            sides["against (on)"] = (args.against, "on")
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in sides}
    for _ in range(args.pairs):
        for name, (src, mode) in sides.items():
            env = dict(os.environ, PYTHONPATH=src) if src else dict(os.environ)
            cmd = [sys.executable, __file__, "--once", mode, "--chains", str(args.chains)]
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    best = {name: {v: min(r[v] for r in rs) for v in rs[0]} for name, rs in runs.items()}
    ratios = {v: {"on / off": round(best["on"][v] / best["off"][v], 3)} for v in best["off"]}
    for v in ratios:
        ratios[v]["on - off (ms)"] = round(best["on"][v] - best["off"][v], 4)
        if v in best["on, bare sdk"]:
            bare = best["on, bare sdk"][v]
            ratios[v]["bare sdk / off"] = round(bare / best["off"][v], 3)
            ratios[v]["bare sdk - off (ms)"] = round(bare - best["off"][v], 4)
        if args.against:
            ratios[v]["off / against"] = round(best["off"][v] / best["against (off)"][v], 3)
        if args.against_on:
            ratios[v]["against on / against off"] = round(
                best["against (on)"][v] / best["against (off)"][v], 3
            )
            ratios[v]["on / against on"] = round(best["on"][v] / best["against (on)"][v], 3)
    result = {"chains": args.chains, "pairs": args.pairs, "min_cpu_ms": best, "ratios": ratios, "runs": runs}
    text = json.dumps(result, indent=2)
    if args.out:
        Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
