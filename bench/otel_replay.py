"""The OpenTelemetry SDK's own share of what tracing costs a chain (bench_otel.py).

`capture` runs one chain through chainform's hooks and notes what they gave the SDK: every span's
name, kind and attributes, every metric point's value and attribute set, and the chain's totals.
`Replay` is a stand-in for the hooks that makes exactly those spans and points through the same
tracer and instruments with no chainform code (no reading of the engine's objects, no attribute
building): a chain run with `Replay` installed pays the SDK's cost alone, in situ. `hot_loop`
times the hooks and the replay given the same chain's objects, back to back.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any

from opentelemetry import context, trace
from opentelemetry.trace import SpanKind

from chainform.otel._spans import _NO_SPAN  # the context chainform records metric points in


class _Current:
    def __init__(self, tracer: Any, name: str, attributes: dict[str, Any], totals: dict[str, Any]) -> None:
        self.span = tracer.start_span(name, attributes=attributes)
        self.totals = totals

    def __enter__(self) -> Any:
        self.token = context.attach(trace.set_span_in_context(self.span))
        return self.span

    def __exit__(self, *exc: Any) -> None:
        if self.totals:
            self.span.set_attributes(self.totals)
        context.detach(self.token)
        self.span.end()


class Replay:
    """The hooks' SDK calls for one captured chain, made again for every chain (see module doc)."""

    def __init__(self, tracer: Any, spans: list[tuple[str, dict[str, Any], Any]], points: list[Any]) -> None:
        (self.chain_name, self.chain_attributes, chain_span), *inner = spans
        self.totals = {k: v for k, v in chain_span.attributes.items() if k not in self.chain_attributes}
        self.chats = [(name, attrs) for name, attrs, _ in inner if name.startswith("chat ")]
        self.tools = [(name, attrs) for name, attrs, _ in inner if name.startswith("execute_tool ")]
        self.points = [points[i : i + 3] for i in range(0, len(points), 3)]
        self.tracer = tracer
        self.turn = self.tool_turn = 0

    def chain(self, run: Any, agent: str | None) -> _Current:
        self.turn = self.tool_turn = 0
        return _Current(self.tracer, self.chain_name, self.chain_attributes, self.totals)

    def call(self, call: Any) -> None:
        name, attributes = self.chats[self.turn]
        end = time.time_ns()
        span = self.tracer.start_span(
            name, kind=SpanKind.CLIENT, attributes=attributes, start_time=end - 1000
        )
        span.end(end_time=end)
        for record, value, point in self.points[self.turn]:
            record(value, point, context=_NO_SPAN)
        self.turn += 1

    async def tool(self, call: Any, work: Any) -> Any:
        name, attributes = self.tools[self.tool_turn]
        self.tool_turn += 1
        with _Current(self.tracer, name, attributes, {}):
            return await work


def capture(hooks: Any, run_chain: Any) -> tuple[Replay, dict[str, Any]]:
    """Run one chain (`run_chain()`) through `hooks`, noting what they gave the SDK; returns the
    replay and the engine's objects the hooks were given (run, calls, tool)."""
    from chainform import _trace

    spans: list[tuple[str, dict[str, Any], Any]] = []
    points: list[tuple[Any, Any, dict[str, Any]]] = []
    seen: dict[str, Any] = {"calls": [], "tools": []}
    tracer, start_span = hooks.tracer, hooks.tracer.start_span

    def spy(name: str, *args: Any, **kw: Any) -> Any:
        span = start_span(name, *args, **kw)
        spans.append((name, dict(kw.get("attributes") or {}), span))
        return span

    def recorder(instrument: Any) -> Any:
        record = instrument.record
        return lambda value, attributes, context=None: points.append((record, value, dict(attributes)))

    class Seen:
        def chain(self, run: Any, agent: str | None) -> Any:
            seen["run"] = run
            return hooks.chain(run, agent)

        def call(self, call: Any) -> None:
            seen["calls"].append(call)
            hooks.call(call)

        async def tool(self, call: Any, work: Any) -> Any:
            seen["tools"].append(call)
            return await hooks.tool(call, work)

    tracer.start_span = spy
    hooks.duration.record, hooks.tokens.record = recorder(hooks.duration), recorder(hooks.tokens)
    _trace.hooks = Seen()  # type: ignore[assignment]
    try:
        run_chain()
    finally:
        _trace.hooks = hooks
        del tracer.start_span, hooks.duration.record, hooks.tokens.record
    return Replay(tracer, spans, points), seen


def hot_loop(hooks: Any, replay: Replay, seen: dict[str, Any], loops: int) -> dict[str, float]:
    """µs per chain, best of 5 alternating rounds: the hooks given the captured chain's objects,
    and the replay of their SDK calls; the difference is chainform's own code."""

    async def done() -> int:
        return 1

    def through(h: Any) -> None:
        calls, tools = list(seen["calls"]), list(seen["tools"])
        with h.chain(seen["run"], None):
            h.call(calls.pop(0))
            for tool in tools:
                with contextlib.suppress(StopIteration):
                    h.tool(tool, done()).send(None)
            for call in calls:
                h.call(call)

    best = {"hooks": float("inf"), "bare sdk": float("inf")}
    for _ in range(5):
        for side, h in (("hooks", hooks), ("bare sdk", replay)):
            started = time.process_time()
            for _ in range(loops):
                through(h)
            best[side] = min(best[side], (time.process_time() - started) / loops * 1e6)
    return {
        "hot loop: hooks (us)": round(best["hooks"], 1),
        "hot loop: bare sdk (us)": round(best["bare sdk"], 1),
        "hot loop: chainform's own (us)": round(best["hooks"] - best["bare sdk"], 1),
    }


class _TimedBlock:
    """A chain's block under `Timed` (one class for all: making a class per chain cost ~13 µs and
    left cyclic garbage, which the whole-process figures counted as tracing's)."""

    __slots__ = ("agent", "inner", "run", "timed")

    def __init__(self, timed: Timed, run: Any, agent: str | None) -> None:
        self.timed, self.run, self.agent = timed, run, agent

    def __enter__(self) -> Any:
        started = time.thread_time()
        self.inner = self.timed.hooks.chain(self.run, self.agent)
        span = self.inner.__enter__()
        self.timed.ms += (time.thread_time() - started) * 1000
        return span

    def __exit__(self, *exc: Any) -> Any:
        started = time.thread_time()
        out = self.inner.__exit__(*exc)
        self.timed.ms += (time.thread_time() - started) * 1000
        return out


class Timed:
    """Hooks (chainform's or a `Replay`) with the thread CPU time spent inside them summed in `ms`
    (a tool's own work excluded): what the hooks cost in situ, unblurred by other threads. The
    timing itself costs a few µs a chain, so whole-process figures are taken without it."""

    def __init__(self, hooks: Any) -> None:
        self.hooks = hooks
        self.ms = 0.0

    def chain(self, run: Any, agent: str | None) -> Any:
        return _TimedBlock(self, run, agent)

    def call(self, call: Any) -> None:
        started = time.thread_time()
        self.hooks.call(call)
        self.ms += (time.thread_time() - started) * 1000

    async def tool(self, call: Any, work: Any) -> Any:
        started, resumed = time.thread_time(), [0.0]

        async def paused() -> Any:
            self.ms += (time.thread_time() - started) * 1000
            value = await work
            resumed[0] = time.thread_time()
            return value

        value = await self.hooks.tool(call, paused())
        self.ms += (time.thread_time() - resumed[0]) * 1000
        return value
