"""The spans and metrics of chainform's runs, under OpenTelemetry's GenAI semantic conventions.

    chain MODEL / invoke_agent NAME      one chain or agent run
      chat MODEL                         each model call (purpose chain / retry / format)
      execute_tool NAME                  each tool call (a subagent's run nests inside it)
    map MODEL                            one map run
      map row KEY                        each row, holding that row's chain

Installed into chainform/_trace.py by `chainform.instrument()`. Attributes are written here by
their names (the semantic-conventions package is not needed). Content (prompts, answers, tool
arguments and results) is recorded only with `include_content=True`, and every string that
reaches a span goes through `keys.scrub` first: a key never appears in a span.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.metrics import MeterProvider, get_meter_provider
from opentelemetry.trace import SpanKind, Status, StatusCode, TracerProvider

from chainform.keys import scrub

T = TypeVar("T")

_PROVIDERS = {
    "gemini": "gcp.gemini",
    "bedrock": "aws.bedrock",
    "azure": "azure.ai.openai",
    "local": "chainform",
}
_CACHE = {
    "cache_read_input_tokens": "gen_ai.usage.cache_read.input_tokens",
    "cache_creation_input_tokens": "gen_ai.usage.cache_creation.input_tokens",
}
# Metric points are recorded outside the span's context: the SDK's default exemplar filter would
# otherwise keep an exemplar per point, which doubled a call's tracing cost.
_NO_SPAN = otel_context.Context()
_TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304]
_SECOND_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]


def split_name(name: str | None) -> tuple[str, str]:
    """(gen_ai.provider.name, gen_ai.request.model) for a chainform model name."""
    provider, _, model = (name or "").partition("/")
    if not model:
        return _PROVIDERS.get(provider, provider or "unknown"), provider
    return _PROVIDERS.get(provider, provider), model


class Spans:
    """The hooks of chainform/_trace.py, writing spans and metrics through OpenTelemetry."""

    def __init__(
        self,
        tracer_provider: TracerProvider | None,
        meter_provider: MeterProvider | None,
        include_content: bool,
    ) -> None:
        from chainform._version import __version__

        self.tracer = trace.get_tracer("chainform", __version__, tracer_provider=tracer_provider)
        meter = (meter_provider or get_meter_provider()).get_meter("chainform", __version__)
        self.tokens = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Tokens used by each model call",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="Duration of each model call",
            explicit_bucket_boundaries_advisory=_SECOND_BUCKETS,
        )
        self.content = include_content

    # -- a chain or agent run -----------------------------------------------------------------

    @contextmanager
    def chain(self, run: Any, agent: str | None) -> Iterator[Any]:
        provider, model = split_name(run.model_name)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
            "gen_ai.conversation.id": run.conversation_id,
            "chainform.chain_id": run.chain_id,
        }
        if agent:
            attributes["gen_ai.agent.name"] = agent
        name = f"invoke_agent {agent}" if agent else f"chain {run.model_name}"
        with self._current(name, attributes) as span:
            try:
                yield span
            finally:
                _chain_totals(span, run)

    @contextmanager
    def _current(self, name: str, attributes: dict[str, Any], context: Any = None) -> Iterator[Any]:
        """A span current in this context while the block runs; an exception marks it failed."""
        with self.tracer.start_as_current_span(
            name,
            context=context,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                yield span
            except BaseException as exc:
                _failed(span, exc)
                raise

    # -- a model call -------------------------------------------------------------------------

    def call(self, call: Any) -> None:
        """A finished call: its span is written after the fact, from its start to now."""
        end = time.time_ns()
        start = end - int(call.duration_ms * 1_000_000)
        provider, model = split_name(call.model)
        base = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
        }
        attributes: dict[str, Any] = {**base, "chainform.purpose": call.purpose}
        if call.strategy:
            attributes["chainform.strategy"] = call.strategy
        response = call.response
        if response is not None:
            if response.model_id:
                attributes["gen_ai.response.model"] = base["gen_ai.response.model"] = response.model_id
            if response.response_id:
                attributes["gen_ai.response.id"] = response.response_id
            if response.finish_reason:
                attributes["gen_ai.response.finish_reasons"] = (str(response.finish_reason),)
        usage = call.usage
        attributes.update(_usage(usage))
        if self.content:
            attributes.update(_content(call))
        if call.failed:
            attributes["error.type"] = base["error.type"] = call.failed
        span = self.tracer.start_span(
            f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes, start_time=start
        )
        if call.failed:
            span.set_status(Status(StatusCode.ERROR, scrub(call.error or call.failed)[:500]))
        span.end(end_time=end)
        self.duration.record(call.duration_ms / 1000, base, context=_NO_SPAN)
        for kind, count in (("input", usage.input_tokens), ("output", usage.output_tokens)):
            if count is not None:
                self.tokens.record(count, {**base, "gen_ai.token.type": kind}, context=_NO_SPAN)

    # -- a tool call --------------------------------------------------------------------------

    async def tool(self, call: Any, work: Awaitable[T]) -> T:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.call_id,
            "gen_ai.tool.type": "function",
        }
        if self.content:
            attributes["gen_ai.tool.call.arguments"] = _json(call.arguments)
        with self._current(f"execute_tool {call.name}", attributes) as span:
            value = await work
            if self.content:
                span.set_attribute("gen_ai.tool.call.result", _json(value))
            return value

    # -- a map run and its rows ---------------------------------------------------------------

    def map_run(self, model: str, run_id: str) -> Any:
        provider, name = split_name(model)
        attributes = {
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": name,
            "chainform.map.run_id": run_id,
        }
        return self.tracer.start_span(f"map {model}", attributes=attributes)

    @contextmanager
    def map_row(self, run: Any, key: str) -> Iterator[Any]:
        with self._current(
            f"map row {key}", {"chainform.map.row": key}, trace.set_span_in_context(run)
        ) as span:
            yield span

    def map_done(self, run: Any, error: BaseException | None) -> None:
        if error is not None:
            _failed(run, error)
        run.end()


def _failed(span: Any, exc: BaseException) -> None:
    message = scrub(str(exc))[:500]
    span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {message}"))
    span.set_attribute("error.type", type(exc).__name__)
    span.add_event("exception", {"exception.type": type(exc).__name__, "exception.message": message})


def _usage(usage: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if usage.input_tokens is not None:
        out["gen_ai.usage.input_tokens"] = usage.input_tokens
    if usage.output_tokens is not None:
        out["gen_ai.usage.output_tokens"] = usage.output_tokens
    for key, name in _CACHE.items():
        if usage.additional_counts.get(key):
            out[name] = usage.additional_counts[key]
    cost = getattr(usage, "cost", None)  # USD (a Decimal), set by the price table when it knows the model
    if cost is not None:
        out["chainform.cost"] = float(cost)
    return out


def _chain_totals(span: Any, run: Any) -> None:
    total: Any = None
    for call in run.calls:
        total = call.usage if total is None else total + call.usage
    if total is not None:
        span.set_attributes(_usage(total))
    if run.calls and run.calls[-1].model:
        span.set_attribute("gen_ai.response.model", split_name(run.calls[-1].model)[1])
    if run.choice is not None:
        span.set_attribute("chainform.strategy", run.choice.name)


def _json(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = str(value)
    return scrub(text)


def _parts(message: Any) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for content in message.contents:
        kind = getattr(content, "type", "")
        if kind == "text":
            parts.append({"type": "text", "content": content.text})
        elif kind == "function_call":
            parts.append(
                {
                    "type": "tool_call",
                    "id": content.call_id,
                    "name": content.name,
                    "arguments": content.arguments,
                }
            )
        elif kind == "function_result":
            parts.append(
                {"type": "tool_call_response", "id": content.call_id, "response": content.result_text()}
            )
    return parts


def _messages(messages: Any) -> str:
    return _json([{"role": str(m.role), "parts": _parts(m)} for m in messages if str(m.role) != "system"])


def _content(call: Any) -> dict[str, Any]:
    out = {"gen_ai.input.messages": _messages(call.messages)}
    system = [m.text for m in call.messages if str(m.role) == "system"]
    if system:
        out["gen_ai.system_instructions"] = _json([{"type": "text", "content": text} for text in system])
    if call.response is not None:
        out["gen_ai.output.messages"] = _messages(call.response.messages)
    return out
