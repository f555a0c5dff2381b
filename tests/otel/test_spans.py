"""Traces and metrics (`cf.instrument`) with the real opentelemetry-sdk and its in-memory exporter:
the span tree of a tool chain, of an agent calling a subagent and of a map run; attributes under
the GenAI semantic conventions; errors; content only when asked, keys never."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

import chainform as cf
from chainform import _trace
from chainform.errors import ProviderError
from chainform.testing import ScriptedClient, tool_call

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

SECRET = "sk-live-0123456789abcdef0123"


class Traced:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.metrics = InMemoryMetricReader()
        self.meters = MeterProvider(metric_readers=[self.metrics])

    @property
    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        return [s for s in self.spans if s.name.startswith(prefix)]

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        assert parent.context is not None
        kids = [s for s in self.spans if s.parent is not None and s.parent.span_id == parent.context.span_id]
        return sorted(kids, key=lambda s: s.start_time or 0)

    def metric_points(self, name: str) -> list[Any]:
        data = self.metrics.get_metrics_data()
        assert data is not None
        return [
            point
            for resource in data.resource_metrics
            for scope in resource.scope_metrics
            for metric in scope.metrics
            if metric.name == name
            for point in metric.data.data_points
        ]


@pytest.fixture
def traced() -> Iterator[Traced]:
    t = Traced()
    cf.instrument(t.provider, meter_provider=t.meters)
    yield t
    cf.uninstrument()


def weather(city: str) -> dict[str, object]:
    """Current weather for a city."""
    return {"city": city, "temp_c": 21}


def test_tool_chain_with_a_retry_and_a_formatting_call(traced: Traced) -> None:
    client = ScriptedClient(
        [
            tool_call("weather", city="Paris"),
            "It is 21 degrees in Paris.",
            '{"city": "Paris"}',  # the formatting call's answer misses temp_c: a retry
            '{"city": "Paris", "temp_c": 21}',
        ]
    )
    chain = cf.Model(client).chain(
        "Weather in Paris?", tools=[weather], schema="city, temp_c int", strategy="deferred", log=False
    )
    assert chain.value == {"city": "Paris", "temp_c": 21}
    (root,) = traced.named("chain ")
    assert root.parent is None and root.name == "chain scripted"
    attrs = root.attributes or {}
    assert attrs["gen_ai.operation.name"] == "invoke_agent"
    assert attrs["chainform.strategy"] == "deferred"
    assert attrs["gen_ai.conversation.id"] == chain.conversation_id
    assert attrs["gen_ai.usage.input_tokens"] == chain.usage.input_tokens
    kids = traced.children(root)
    assert [s.name for s in kids] == [
        "chat scripted",
        "execute_tool weather",
        "chat scripted",
        "chat scripted",
        "chat scripted",
    ]
    chats = [s for s in kids if s.name.startswith("chat")]
    assert [s.attributes["chainform.purpose"] for s in chats] == ["chain", "chain", "format", "retry"]
    for span, call in zip(chats, chain.responses, strict=True):
        a = span.attributes or {}
        assert a["gen_ai.operation.name"] == "chat"
        assert a["gen_ai.request.model"] == "scripted" and a["gen_ai.response.model"] == "scripted"
        assert a["gen_ai.usage.input_tokens"] == call.usage.input_tokens
        assert a["gen_ai.usage.output_tokens"] == call.usage.output_tokens
        assert a["gen_ai.response.finish_reasons"]
        assert "gen_ai.input.messages" not in a  # content only with include_content=True
    tool = kids[1].attributes or {}
    assert tool["gen_ai.tool.name"] == "weather" and tool["gen_ai.operation.name"] == "execute_tool"
    assert "gen_ai.tool.call.arguments" not in tool
    tokens = traced.metric_points("gen_ai.client.token.usage")
    assert sum(p.sum for p in tokens) == chain.usage.total_tokens
    (duration,) = traced.metric_points("gen_ai.client.operation.duration")
    assert duration.count == 4
    # recorded outside the chain's context: the SDK's trace-based filter keeps no exemplar
    assert [p.exemplars for p in [*tokens, duration]] == [[]] * (len(tokens) + 1)


def test_agent_calling_a_subagent_nests_under_the_tool_call(traced: Traced) -> None:
    sub = ScriptedClient(['{"population": 2800000}'])
    agent = cf.Agent(cf.Model(sub), name="census", description="Population", output_schema="population int")
    parent = ScriptedClient([tool_call("census", task="Rome?"), "Rome: 2.8 million"])
    chain = cf.Model(parent).chain("How many in Rome?", tools=[agent], log=False)
    assert chain.text() == "Rome: 2.8 million"
    (root,) = traced.named("chain ")
    (tool,) = traced.named("execute_tool census")
    (inner,) = traced.named("invoke_agent census")
    assert [s.name for s in traced.children(root)] == [
        "chat scripted",
        "execute_tool census",
        "chat scripted",
    ]
    assert tool.parent is not None and root.context is not None
    assert tool.parent.span_id == root.context.span_id
    assert inner.parent is not None and tool.context is not None
    assert inner.parent.span_id == tool.context.span_id
    assert (inner.attributes or {})["gen_ai.agent.name"] == "census"
    assert [s.name for s in traced.children(inner)] == ["chat scripted"]


def test_map_run_has_one_span_per_row(traced: Traced) -> None:
    client = ScriptedClient(['{"n": 1}', '{"n": 2}', ProviderError("down", status=400)])
    results = list(
        cf.Model(client).map(["a", "b", "c"], schema="n int", concurrency=1, log=False, transport_retries=0)
    )
    assert sum(r.ok for r in results) == 2
    (run,) = traced.named("map scripted")
    rows = traced.children(run)
    assert sorted(s.name for s in rows) == ["map row 0", "map row 1", "map row 2"]
    for row in rows:
        (chain,) = traced.children(row)
        assert chain.name == "chain scripted"
        assert [s.name for s in traced.children(chain)] == ["chat scripted"]
    failed = [r for r in rows if r.status.status_code == StatusCode.ERROR]
    assert len(failed) == 1 and (failed[0].attributes or {})["error.type"] == "ProviderError"
    (chain,) = traced.children(failed[0])
    (chat,) = traced.children(chain)
    assert chain.status.status_code == chat.status.status_code == StatusCode.ERROR


def test_content_only_when_asked_and_keys_never(traced: Traced) -> None:
    cf.instrument(traced.provider, include_content=True, meter_provider=traced.meters)
    from chainform.keys import remember

    remember(SECRET)
    client = ScriptedClient([tool_call("weather", city=SECRET), f"The key is {SECRET}"])
    chain = cf.Model(client).chain(f"Use {SECRET}", system="Be brief.", tools=[weather], log=False)
    chain.text()
    everything = json.dumps([dict(s.attributes or {}) for s in traced.spans])
    assert SECRET not in everything
    first = traced.named("chat")[0].attributes or {}
    messages = json.loads(str(first["gen_ai.input.messages"]))
    assert messages[0]["role"] == "user" and "Use " in messages[0]["parts"][0]["content"]
    assert json.loads(str(first["gen_ai.system_instructions"]))[0]["content"] == "Be brief."
    assert json.loads(str(first["gen_ai.output.messages"]))[0]["parts"][0]["type"] == "tool_call"
    tool = traced.named("execute_tool")[0].attributes or {}
    assert "gen_ai.tool.call.arguments" in tool and "gen_ai.tool.call.result" in tool


def test_off_means_no_hooks() -> None:
    assert _trace.hooks is None
    cf.Model(ScriptedClient(["hi"])).prompt("hello", log=False).text()


def test_cost_is_recorded_when_the_usage_carries_one() -> None:
    from decimal import Decimal
    from types import SimpleNamespace

    from chainform.otel._spans import _usage

    usage = SimpleNamespace(input_tokens=10, output_tokens=2, additional_counts={}, cost=Decimal("0.00125"))
    assert _usage(usage) == {
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 2,
        "chainform.cost": 0.00125,
    }
    unknown = SimpleNamespace(input_tokens=10, output_tokens=None, additional_counts={}, cost=None)
    assert _usage(unknown) == {"gen_ai.usage.input_tokens": 10}


class _ChatOnly:
    """A sampler that drops every span but the model calls' (a chat span's parent is not recorded)."""

    def should_sample(self, context: Any, trace_id: int, name: str, *args: Any, **kw: Any) -> Any:
        from opentelemetry.sdk.trace.sampling import Decision, SamplingResult

        return SamplingResult(Decision.RECORD_AND_SAMPLE if name.startswith("chat ") else Decision.DROP)

    def get_description(self) -> str:
        return "chat only"


@pytest.mark.parametrize("sampler", ["off", "chat only"])
def test_unsampled_chains_still_count_in_metrics_and_sampled_calls_keep_their_attributes(
    sampler: str,
) -> None:
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    t = Traced()
    t.provider = TracerProvider(sampler=ALWAYS_OFF if sampler == "off" else _ChatOnly())  # type: ignore[arg-type]
    t.provider.add_span_processor(SimpleSpanProcessor(t.exporter))
    cf.instrument(t.provider, meter_provider=t.meters)
    try:
        client = ScriptedClient([tool_call("weather", city="Paris"), "21 degrees."])
        chain = cf.Model(client).chain("Weather in Paris?", tools=[weather], log=False)
        assert chain.text() == "21 degrees."
    finally:
        cf.uninstrument()
    tokens = t.metric_points("gen_ai.client.token.usage")
    assert sum(p.sum for p in tokens) == chain.usage.total_tokens
    assert sum(p.count for p in t.metric_points("gen_ai.client.operation.duration")) == 2
    if sampler == "off":
        assert t.spans == []
        return
    assert [s.name for s in t.spans] == ["chat scripted", "chat scripted"]
    for span, call in zip(t.spans, chain.responses, strict=True):
        a = span.attributes or {}
        assert a["chainform.purpose"] == "chain" and a["gen_ai.response.model"] == "scripted"
        assert a["gen_ai.usage.output_tokens"] == call.usage.output_tokens
        assert a["gen_ai.response.finish_reasons"]


MARKER = "card-4111-1111-prompt-content"


def _errors_text(traced: Traced) -> str:
    """Every span's status text and event attributes, as one string."""
    parts = []
    for span in traced.spans:
        parts.append(span.status.description or "")
        parts += [json.dumps(dict(event.attributes or {})) for event in span.events]
    return "\n".join(parts)


def charge(card: str) -> str:
    """Charge a card."""
    raise ValueError(f"declined: {card}")


def test_without_content_a_tools_exception_text_never_reaches_a_span(traced: Traced) -> None:
    client = ScriptedClient([tool_call("charge", card=MARKER), "done"])
    assert cf.Model(client).chain("Pay", tools=[charge], log=False).text() == "done"
    text = _errors_text(traced)
    (tool,) = traced.named("execute_tool")
    assert tool.status.status_code == StatusCode.ERROR and "ValueError" in text
    assert MARKER not in text


def test_without_content_a_structured_output_errors_answer_never_reaches_a_span(traced: Traced) -> None:
    client = ScriptedClient([f"not json {MARKER}"] * 6)
    with pytest.raises(cf.StructuredOutputError):
        cf.Model(client).chain("Give n", schema="n int", log=False).value
    text = _errors_text(traced)
    assert "StructuredOutputError" in text and MARKER not in text


def test_without_content_a_provider_error_echoing_the_prompt_never_reaches_a_span(traced: Traced) -> None:
    client = ScriptedClient([ProviderError(f"bad request: {MARKER}", status=400)])
    with pytest.raises(ProviderError):
        cf.Model(client).chain(f"Charge {MARKER}", log=False).text()
    text = _errors_text(traced)
    assert "ProviderError" in text and "HTTP 400" in text and MARKER not in text


def test_with_content_the_error_text_is_recorded(traced: Traced) -> None:
    cf.instrument(traced.provider, include_content=True, meter_provider=traced.meters)
    client = ScriptedClient([ProviderError(f"bad request: {MARKER}", status=400)])
    with pytest.raises(ProviderError):
        cf.Model(client).chain("Charge", log=False).text()
    assert MARKER in _errors_text(traced)
