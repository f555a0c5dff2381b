"""The CLI's `--otel`: spans over OTLP/HTTP to a loopback receiver the test starts, decoded as a
collector would; a missing package or an unreachable collector."""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from click.testing import CliRunner
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from chainform import _trace
from chainform.cli import cli
from chainform.store import Store
from chainform.testing import tool_call
from chainform.testing.emulator import Emulator

KEY = "sk-test-otel-0123456789abcdef"


class Receiver(ThreadingHTTPServer):
    """An OTLP/HTTP collector on 127.0.0.1: keeps each POST's path and body."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, bytes]] = []
        received = self.posts

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                received.append((self.path, body))
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", "0")
                self.end_headers()

        super().__init__(("127.0.0.1", 0), Handler)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def weather(city: str) -> dict[str, object]:
    """Current weather for a city."""
    return {"city": city, "temp_c": 21}


def _argv(emulator: Emulator, tmp_path: Any, *extra: str) -> list[str]:
    tools = tmp_path / "tools.py"
    tools.write_text('def weather(city: str) -> dict:\n    "Weather."\n    return {"temp_c": 21}\n')
    return [
        "Weather in Paris?",
        "-m",
        "openai/gpt-4.1-mini",
        "--base-url",
        emulator.base_url + "/v1",
        "--profile",
        "openai",  # the emulator plays OpenAI
        "--key",
        KEY,
        "--functions",
        str(tools),
        "--schema",
        "temp_c int",
        *extra,
    ]


def test_spans_reach_a_collector_over_otlp_http(
    emulator: Emulator, receiver: Receiver, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{receiver.server_port}")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "weather-service")
    emulator.add(tool_call("weather", city="Paris"), '{"temp_c": 21}')
    done = CliRunner().invoke(cli, _argv(emulator, tmp_path, "--otel"))
    assert done.exit_code == 0, done.output
    assert _trace.hooks is None  # the command stopped its tracing when it ended
    traces = [body for path, body in receiver.posts if path == "/v1/traces"]
    assert traces, receiver.posts
    assert all(KEY.encode() not in body for _, body in receiver.posts)
    spans, service = [], None
    for body in traces:
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            service = {a.key: a.value.string_value for a in resource.resource.attributes}["service.name"]
            spans += [span for scope in resource.scope_spans for span in scope.spans]
    assert service == "weather-service"
    names = sorted(span.name for span in spans)
    assert names == [
        "chain openai/gpt-4.1-mini",
        "chat gpt-4.1-mini",
        "chat gpt-4.1-mini",
        "execute_tool weather",
    ]
    (root,) = [s for s in spans if s.name.startswith("chain")]
    assert all(s.parent_span_id == root.span_id for s in spans if s is not root)
    chat = next(s for s in spans if s.name.startswith("chat"))
    attrs = {a.key: a.value for a in chat.attributes}
    assert attrs["gen_ai.provider.name"].string_value == "openai"
    assert attrs["gen_ai.request.model"].string_value == "gpt-4.1-mini"
    assert attrs["gen_ai.usage.input_tokens"].int_value > 0
    assert attrs["chainform.cost"].double_value > 0  # the price table's cost of the call, in USD
    assert any(path == "/v1/metrics" for path, _ in receiver.posts)


def _closed_port() -> int:
    """A port on 127.0.0.1 nobody listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_unreachable_collector_warns_and_the_chain_still_answers(
    emulator: Emulator, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = _closed_port()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    monkeypatch.setenv("CHAINFORM_OTEL", "1")
    emulator.add(tool_call("weather", city="Paris"), '{"temp_c": 21}')
    with pytest.warns(UserWarning, match=f"could not send traces to http://127.0.0.1:{port}"):
        done = CliRunner().invoke(cli, _argv(emulator, tmp_path))
    assert done.exit_code == 0, done.output
    assert json.loads(done.output) == {"temp_c": 21}
    with Store() as store:
        assert len(store.recent(n=None)) == 2


def test_otel_without_the_packages_or_a_collector_is_a_usage_error(
    emulator: Emulator, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    done = CliRunner().invoke(cli, _argv(emulator, tmp_path, "--otel"))
    assert done.exit_code == 2 and "OTEL_EXPORTER_OTLP_ENDPOINT" in done.output
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)  # as if it were not installed
    done = CliRunner().invoke(cli, _argv(emulator, tmp_path, "--otel"))
    assert done.exit_code == 2 and "chainform[otel-export]" in done.output
    assert emulator.requests == []  # nothing was sent


@pytest.fixture
def silent_collector() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        yield listener.getsockname()[1]


@pytest.mark.parametrize("timeout", [None, "abc"])
def test_a_collector_that_never_answers_does_not_hold_the_exit_past_the_bound(
    emulator: Emulator,
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
    silent_collector: int,
    timeout: str | None,
) -> None:
    import time

    import opentelemetry.exporter.otlp.proto.http.metric_exporter  # imported before the timing
    import opentelemetry.exporter.otlp.proto.http.trace_exporter
    import opentelemetry.sdk.metrics  # noqa: F401

    from chainform.otel._export import DEFAULT_TIMEOUT

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{silent_collector}")
    if timeout is None:
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", timeout)
    emulator.add('{"temp_c": 21}')
    started = time.monotonic()
    with pytest.warns(UserWarning, match=f"could not send traces to http://127.0.0.1:{silent_collector}"):
        done = CliRunner().invoke(cli, _argv(emulator, tmp_path, "--otel"))
    took = time.monotonic() - started
    assert done.exit_code == 0, done.output
    assert took < 3 * DEFAULT_TIMEOUT, f"the exit waited {took:.1f} s for the collector"


def test_the_exit_goes_on_only_once_the_exporters_warning_is_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """The exporter's thread fails an export just as the exit's wait runs out (both are bounded by
    the same timeout): whichever gives the warning, the other returns only once it is out, so the
    command never ends between the exporter's decision to warn and its warning."""
    from types import SimpleNamespace

    from chainform.otel import _export

    issued: list[str] = []
    writing, release = threading.Event(), threading.Event()

    def slow_warn(text: str, stacklevel: int) -> None:  # the exporter's thread, descheduled mid-warning
        writing.set()
        release.wait(60)
        issued.append(text)

    monkeypatch.setattr(_export, "warnings", SimpleNamespace(warn=slow_warn))
    once = _export.OneWarning("http://127.0.0.1:4318")
    exporter = threading.Thread(target=once.warn)
    exporter.start()
    assert writing.wait(60)
    seen_at_exit: list[str] = []

    def exit_wait_ran_out() -> None:
        once.warn(": no answer within 3 s")
        seen_at_exit.extend(issued)  # what the command has said by the time it goes on

    exiting = threading.Thread(target=exit_wait_ran_out)
    exiting.start()
    exiting.join(0.5)  # the lock holds it (or, without one, it has long gone on): either way, release
    release.set()
    exporter.join(60)
    exiting.join(60)
    assert seen_at_exit == issued == ["chainform: could not send traces to http://127.0.0.1:4318"]


@pytest.mark.parametrize(
    ("value", "seconds"), [("abc", 3.0), ("nan", 3.0), ("-1", 3.0), ("1.5", 1.5), ("20", 10.0), ("inf", 3.0)]
)
def test_the_otlp_timeout_from_the_environment_keeps_its_cap(
    monkeypatch: pytest.MonkeyPatch, value: str, seconds: float
) -> None:
    from chainform.otel._export import export_timeout

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", value)
    assert export_timeout() == seconds


def test_the_collector_endpoints_credentials_are_masked_in_the_warning(
    emulator: Emulator, tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = _closed_port()
    endpoint = f"http://otel-user:otlp-pass-5e6f@127.0.0.1:{port}/?token=otlp-tok-9a8b"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    emulator.add('{"temp_c": 21}')
    with pytest.warns(UserWarning) as caught:
        done = CliRunner().invoke(cli, _argv(emulator, tmp_path, "--otel"))
    assert done.exit_code == 0, done.output
    text = " ".join(str(w.message) for w in caught) + done.output
    assert f"127.0.0.1:{port}" in text
    assert "otlp-pass-5e6f" not in text and "otlp-tok-9a8b" not in text
