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
from collections.abc import Awaitable, Callable
from functools import lru_cache
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
# otherwise keep an exemplar per point (about a tenth of the SDK's work for a chain). Not an empty
# Context: that is falsy, and the SDK records with the current one instead (`context or ...`).
_NO_SPAN = trace.set_span_in_context(trace.INVALID_SPAN, otel_context.Context())
_TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304]
_SECOND_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]


@lru_cache(maxsize=256)
def split_name(name: str | None) -> tuple[str, str]:
    """(gen_ai.provider.name, gen_ai.request.model) for a chainform model name."""
    provider, _, model = (name or "").partition("/")
    if not model:
        return _PROVIDERS.get(provider, provider or "unknown"), provider
    return _PROVIDERS.get(provider, provider), model


class _Current:
    """A span current in this context while the block runs; an exception marks it failed.

    One plain context manager instead of the SDK's start_as_current_span (a decorated generator
    around use_span, another generator) under a generator of ours: the span and the context token
    are all it holds. `done` runs before the span ends (a chain's totals)."""

    __slots__ = ("content", "done", "span", "token")

    def __init__(self, span: Any, content: bool, done: Callable[[Any], None] | None = None) -> None:
        self.span = span
        self.content = content
        self.done = done
        self.token: Any = None

    def __enter__(self) -> Any:
        self.token = otel_context.attach(trace.set_span_in_context(self.span))
        return self.span

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> None:
        span = self.span
        try:
            if exc is not None and span.is_recording():
                _failed(span, exc, self.content)
            if self.done is not None:
                self.done(span)
        finally:
            otel_context.detach(self.token)
            span.end()


class Spans:
    """The hooks of chainform/_trace.py, writing spans and metrics through OpenTelemetry.

    The tracer and instruments are fetched once; a model's metric attribute sets are built once
    and reused (`_points`); span attributes go to the span at its start in one dict; nothing is
    built for a span the sampler does not record."""

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
        self._point_sets: dict[tuple[Any, ...], _Points] = {}

    # -- a chain or agent run -----------------------------------------------------------------

    def chain(self, run: Any, agent: str | None) -> _Current:
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
        span = self.tracer.start_span(name, attributes=attributes)
        return _Current(span, self.content, lambda span: _chain_totals(span, run))

    # -- a model call -------------------------------------------------------------------------

    def call(self, call: Any) -> None:
        """A finished call: its span is written after the fact, from its start to now."""
        end = time.time_ns()
        start = end - int(call.duration_ms * 1_000_000)
        response = call.response
        response_model = response.model_id if response is not None else None
        points = self._points(call.model, response_model, call.failed)
        if _sampled_out(trace.get_current_span()):
            # the chain was not sampled: the call's span is not either (parent-based sampling),
            # so only the attributes a sampler reads are given, the rest built only if it records
            span = self.tracer.start_span(
                points.name, kind=SpanKind.CLIENT, attributes=points.base, start_time=start
            )
            if span.is_recording():
                span.set_attributes(self._call_attributes(call, points))
        else:
            span = self.tracer.start_span(
                points.name,
                kind=SpanKind.CLIENT,
                attributes=self._call_attributes(call, points),
                start_time=start,
            )
        if call.failed and span.is_recording():
            # the error's text may echo the prompt (a provider's body): only with content
            said = scrub(call.error or call.failed)[:500] if self.content else call.failed
            span.set_status(Status(StatusCode.ERROR, said))
        span.end(end_time=end)
        self.duration.record(call.duration_ms / 1000, points.base, context=_NO_SPAN)
        usage = call.usage
        if usage.input_tokens is not None:
            self.tokens.record(usage.input_tokens, points.input, context=_NO_SPAN)
        if usage.output_tokens is not None:
            self.tokens.record(usage.output_tokens, points.output, context=_NO_SPAN)

    def _points(self, model_name: str | None, response_model: str | None, failed: str | None) -> _Points:
        key = (model_name, response_model, failed)
        points = self._point_sets.get(key)
        if points is None:
            if len(self._point_sets) >= 1024:  # bounded: answering models and error kinds are few
                self._point_sets.clear()
            points = self._point_sets[key] = _Points(model_name, response_model, failed)
        return points

    def _call_attributes(self, call: Any, points: _Points) -> dict[str, Any]:
        attributes: dict[str, Any] = {**points.base, "chainform.purpose": call.purpose}
        if call.strategy:
            attributes["chainform.strategy"] = call.strategy
        response = call.response
        if response is not None:
            if response.response_id:
                attributes["gen_ai.response.id"] = response.response_id
            if response.finish_reason:
                attributes["gen_ai.response.finish_reasons"] = (str(response.finish_reason),)
        _usage(call.usage, attributes)
        if self.content:
            attributes.update(_content(call))
        return attributes

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
        span = self.tracer.start_span(f"execute_tool {call.name}", attributes=attributes)
        with _Current(span, self.content):
            value = await work
            if self.content and span.is_recording():
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

    def map_row(self, run: Any, key: str) -> _Current:
        parent = trace.set_span_in_context(run)
        return _Current(
            self.tracer.start_span(f"map row {key}", parent, attributes={"chainform.map.row": key}),
            self.content,
        )

    def map_done(self, run: Any, error: BaseException | None) -> None:
        if error is not None and run.is_recording():
            _failed(run, error, self.content)
        run.end()


class _Points:
    """What every call of one (model, answering model, error) shares: the span's name and the
    attribute sets its metric points are recorded with, built once (never changed after)."""

    __slots__ = ("base", "input", "name", "output")

    def __init__(self, model_name: str | None, response_model: str | None, failed: str | None) -> None:
        provider, model = split_name(model_name)
        self.name = f"chat {model}"
        self.base: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
        }
        if response_model:
            self.base["gen_ai.response.model"] = response_model
        if failed:
            self.base["error.type"] = failed
        self.input = {**self.base, "gen_ai.token.type": "input"}
        self.output = {**self.base, "gen_ai.token.type": "output"}


def _sampled_out(parent: Any) -> bool:
    """The current span is a real one that the sampler dropped."""
    return not parent.is_recording() and parent.get_span_context().is_valid


def _failed(span: Any, exc: BaseException, content: bool) -> None:
    """The span marked failed. Its status and event carry the error's text (keys masked) only with
    content: a tool's exception quotes its arguments, a StructuredOutputError the answer, a
    provider's body the prompt. Without, only what holds no content: the type, a status, a kind."""
    name = type(exc).__name__
    message = scrub(str(exc))[:500] if content else _content_free(exc)
    span.set_status(Status(StatusCode.ERROR, f"{name}: {message}" if content else message))
    span.set_attribute("error.type", name)
    span.add_event("exception", {"exception.type": name, "exception.message": message})


def _content_free(exc: BaseException) -> str:
    """`ProviderError (HTTP 400, bad_request)`: the type, and a provider error's status and kind."""
    status = getattr(exc, "status", None)
    kind = getattr(exc, "kind", None)
    bits = [f"HTTP {status}" if isinstance(status, int) else "", kind if isinstance(kind, str) else ""]
    shown = ", ".join(bit for bit in bits if bit)
    return f"{type(exc).__name__} ({shown})" if shown else type(exc).__name__


def _usage(usage: Any, out: dict[str, Any] | None = None) -> dict[str, Any]:
    """The usage attributes of `usage` (written into `out` when given)."""
    if out is None:
        out = {}
    if usage.input_tokens is not None:
        out["gen_ai.usage.input_tokens"] = usage.input_tokens
    if usage.output_tokens is not None:
        out["gen_ai.usage.output_tokens"] = usage.output_tokens
    counts = usage.additional_counts
    if counts:
        for key, name in _CACHE.items():
            if counts.get(key):
                out[name] = counts[key]
    cost = getattr(usage, "cost", None)  # USD (a Decimal), set by the price table when it knows the model
    if cost is not None:
        out["chainform.cost"] = float(cost)
    return out


def _chain_totals(span: Any, run: Any) -> None:
    """The chain's usage summed over its calls, the answering model and the strategy: set once."""
    if not span.is_recording():
        return
    attributes: dict[str, Any] = {}
    calls = run.calls
    if calls:
        total = calls[0].usage
        for call in calls[1:]:
            total = total + call.usage
        _usage(total, attributes)
        if calls[-1].model:
            attributes["gen_ai.response.model"] = split_name(calls[-1].model)[1]
    if run.choice is not None:
        attributes["chainform.strategy"] = run.choice.name
    if attributes:
        span.set_attributes(attributes)


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
