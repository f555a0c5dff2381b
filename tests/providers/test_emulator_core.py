"""The emulator core: lifecycle, recording, script handling, faults and the wire-format plugin API."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from typing import Any, ClassVar

import httpx
import pytest

from chainform.testing import tool_call
from chainform.testing.emulator import (
    DropConnection,
    Emulator,
    Fault,
    MalformedEvent,
    RecordedRequest,
    Reply,
    Stall,
    StreamEvent,
    Usage,
    WireFormat,
    discover_formats,
)


class EchoFormat(WireFormat):
    """A minimal plugin: proves a format can be added without touching the core."""

    name: ClassVar[str] = "echo"
    routes: ClassVar[tuple[str, ...]] = (r"/echo/(?P<model>[^/:]+):say",)

    def render(self, reply: Reply, request: RecordedRequest) -> dict[str, Any]:
        assert reply.usage is not None
        return {"model": request.path_params["model"], "text": reply.text, "out": reply.usage.output_tokens}

    def render_stream(self, reply: Reply, request: RecordedRequest) -> list[StreamEvent]:
        return [StreamEvent({"delta": piece}, event="delta") for piece in reply.chunks(reply.text)]


def post(emu: Emulator, path: str, body: Any, **kwargs: Any) -> httpx.Response:
    return httpx.post(emu.base_url + path, json=body, timeout=5, **kwargs)


def test_emulator_binds_loopback_and_always_stops() -> None:
    with Emulator(["hi"], formats=[EchoFormat()]) as emu:
        port = emu.port
        assert emu.base_url == f"http://127.0.0.1:{port}"
        assert post(emu, "/echo/m1:say", {}).status_code == 200
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass
    with pytest.raises(RuntimeError, match="not running"):
        _ = emu.base_url


def test_emulator_stops_even_when_the_test_body_raises() -> None:
    emu = Emulator(["x"], formats=[EchoFormat()])
    with pytest.raises(ZeroDivisionError), emu:
        port = emu.port
        1 / 0
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
        pass


def test_emulator_records_path_headers_query_and_json_body() -> None:
    with Emulator(["hello world"], formats=[EchoFormat()]) as emu:
        response = post(emu, "/echo/tiny:say?alt=sse", {"q": 1}, headers={"X-Custom": "yes"})
        assert response.json() == {"model": "tiny", "text": "hello world", "out": 2}
        assert response.headers["x-request-id"] == "req_emu_1"
    (request,) = emu.requests
    assert (request.method, request.path, request.query) == ("POST", "/echo/tiny:say", {"alt": "sse"})
    assert request.headers["x-custom"] == "yes"
    assert request.body == {"q": 1}
    assert request.wire_format == "echo"
    assert request.path_params == {"model": "tiny"}


def test_emulator_callable_items_see_the_request() -> None:
    seen: list[RecordedRequest] = []

    def reply(request: RecordedRequest) -> str:
        seen.append(request)
        return f"you said {request.json['q']}"

    with Emulator([reply], formats=[EchoFormat()]) as emu:
        assert post(emu, "/echo/m:say", {"q": "hi"}).json()["text"] == "you said hi"
    assert seen == emu.requests


def test_emulator_script_exhaustion_and_unknown_routes_are_clear_errors() -> None:
    with Emulator([], formats=[EchoFormat()]) as emu:
        exhausted = post(emu, "/echo/m:say", {})
        assert exhausted.status_code == 500
        assert exhausted.headers["x-should-retry"] == "false"
        assert "script exhausted" in exhausted.json()["error"]["message"]
        missing = post(emu, "/nowhere", {})
        assert missing.status_code == 404
        assert "/echo/" in missing.json()["error"]["message"]
    assert len(emu.errors) == 2


def test_emulator_fault_sets_status_and_retry_after() -> None:
    with Emulator(
        [Fault(429, retry_after=2, message="slow down"), Fault(503, retry_after=0.25)], formats=[EchoFormat()]
    ) as emu:
        first = post(emu, "/echo/m:say", {})
        assert first.status_code == 429
        assert first.headers["retry-after"] == "2"
        assert first.json()["error"]["message"] == "slow down"
        second = post(emu, "/echo/m:say", {})
        assert (second.status_code, second.headers["retry-after"]) == (503, "0.25")


def test_emulator_streams_events_with_chunked_framing() -> None:
    with (
        Emulator([Reply(["abcdefgh"], chunk_size=3)], formats=[EchoFormat()]) as emu,
        httpx.stream("POST", emu.base_url + "/echo/m:say", json={"stream": True}, timeout=5) as r,
    ):
        assert r.headers["transfer-encoding"] == "chunked"
        lines = [line for line in r.iter_lines() if line.startswith("data: ")]
    assert [json.loads(line[6:])["delta"] for line in lines] == ["abc", "def", "gh"]


def test_emulator_counts_each_stall_once_what_comes_before_it_is_sent() -> None:
    """`wait_for_stalls(n)`: a test moves its client's clock on from there. A stall before the
    answer counts at once; one mid-stream once the events before it are out (read here before the
    count is asked for), `every` from its first pause on. Stopping the emulator ends every pause."""
    script = [
        Stall(600),
        Stall(600, reply="abcdefgh", after_events=1),
        Stall(600, reply="abcd", after_events=1, every=True),
    ]
    with Emulator(script, formats=[EchoFormat()], chunk_size=2) as emu:
        assert emu.stalls == 0

        def hang() -> None:  # cut short by the emulator's stop
            with contextlib.suppress(httpx.HTTPError):
                post(emu, "/echo/m:say", {})

        hung = threading.Thread(target=hang)
        hung.start()
        assert emu.wait_for_stalls(1) == 1
        with httpx.stream("POST", emu.base_url + "/echo/m:say", json={"stream": True}, timeout=5) as r:
            lines = r.iter_lines()
            assert next(line for line in lines if line.startswith("data: ")) == 'data: {"delta": "ab"}'
            assert emu.wait_for_stalls(2) == 2
        with httpx.stream("POST", emu.base_url + "/echo/m:say", json={"stream": True}, timeout=5):
            assert emu.wait_for_stalls(3) == 3
    hung.join()
    assert emu.stalls == 3  # the stop ended each pause, and no stream went on to another


def test_emulator_malformed_event_and_dropped_connection() -> None:
    script = [MalformedEvent(after_events=1, reply="abcdef"), DropConnection(after_events=1, reply="abcdef")]
    with Emulator(script, formats=[EchoFormat()], chunk_size=2) as emu:
        with httpx.stream("POST", emu.base_url + "/echo/m:say", json={"stream": True}, timeout=5) as r:
            data = [line[6:] for line in r.iter_lines() if line.startswith("data: ")]
        assert json.loads(data[0]) == {"delta": "ab"}
        with pytest.raises(json.JSONDecodeError):
            json.loads(data[1])
        with (
            pytest.raises(httpx.RemoteProtocolError),
            httpx.stream("POST", emu.base_url + "/echo/m:say", json={"stream": True}, timeout=5) as r,
        ):
            list(r.iter_lines())


def test_emulator_usage_is_estimated_unless_scripted() -> None:
    scripted = Reply(["a b"], usage=Usage(10, 7, cached_input_tokens=3))
    with Emulator(["one two three", scripted, [tool_call("f", x=1)]], formats=[EchoFormat()]) as emu:
        assert post(emu, "/echo/m:say", {}).json()["out"] == 3
        assert post(emu, "/echo/m:say", {}).json()["out"] == 7
        assert post(emu, "/echo/m:say", {}).json()["out"] >= 1


def test_emulator_rejects_bad_script_parts() -> None:
    with Emulator([[object()]], formats=[EchoFormat()]) as emu:
        response = post(emu, "/echo/m:say", {})
    assert response.status_code == 500
    assert "bad script item" in response.json()["error"]["message"]


def test_emulator_discovers_builtin_wire_formats() -> None:
    names = {f.name for f in discover_formats()}
    assert {"openai-chat", "openai-responses"} <= names
