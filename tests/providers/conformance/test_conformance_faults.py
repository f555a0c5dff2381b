"""Conformance, what goes wrong: each emulator fault through each transport's real SDK.

Every fault becomes a typed error with the same `kind`, `status`, `retryable` and request id on
every adapter, is retried (or not) by the one policy, and keeps the key out of the message; a
stream that breaks after it started keeps what arrived. One row per transport runs these
(conformance_table.transports); the profile does not change how a transport fails.
"""

from __future__ import annotations

import time

import pytest
from conformance_table import Row

import chainform as cf
from chainform.testing.emulator import (
    CutStream,
    DropConnection,
    Emulator,
    Fault,
    MalformedEvent,
    Reply,
    Stall,
)
from chainform.types import TextReasoningContent
from virtual_time import SkewedTime

TEXT = "0123456789abcdefghijklmnopqrstuvwxyz"
READ_ON_THE_LOOP = 2.0  # a read timeout the test moves the clock past at each stall (SkewedTime)


def test_rate_limit_with_retry_after_is_retried(transport: Row, emu: Emulator) -> None:
    emu.add(Fault(429, retry_after=0.01, message="slow down"), "recovered")
    assert transport.model(emu).prompt("x", log=False).text() == "recovered"
    assert len(emu.requests) == 2


@pytest.mark.parametrize(
    ("status", "kind", "retried"),
    [
        (400, "bad_request", False),
        (401, "auth", False),
        (403, "auth", False),
        (404, "bad_request", False),
        (429, "rate_limit", True),
        (500, "server", True),
        (503, "server", True),
    ],
)
def test_http_error_kind_and_retry(
    transport: Row, emu: Emulator, status: int, kind: str, retried: bool
) -> None:
    """The one retry policy: the SDK retries what `retryable` says, once here (max_retries=1)."""
    echo = f"emulated {status}; key {transport.key}"  # a provider that quotes the key back
    emu.add(*[Fault(status, message=echo)] * 2)
    with pytest.raises(cf.ProviderError) as info:
        transport.model(emu).prompt("x", log=False).text()
    error = info.value
    assert (error.status, error.kind, error.retryable) == (status, kind, retried)
    assert len(emu.requests) == (2 if retried else 1)
    assert error.request_id == emu.requests[-1].request_id
    assert f"emulated {status}" in error.provider_message
    assert f"HTTP {status}" in str(error) and error.request_id in str(error)
    assert error.provider and transport.name.startswith(error.provider)
    if transport.secret:
        assert transport.secret not in str(error) + repr(error) + error.provider_message


def test_timeout_is_retried_then_typed(transport: Row, emu: Emulator, skewed: SkewedTime) -> None:
    """A read stall is timed out by the SDK's own timeout over a real socket, retried once, then
    typed. Where the SDK keeps its timeouts on the loop's clock, the test moves that clock on by
    the read timeout at each stall (virtual_time.SkewedTime) instead of waiting it out, so the read
    timeout can be long (2 s): only a test process stalled for that long before "recovered" comes
    would time it out too. botocore's are its sockets' own, real seconds: 0.3 s there. Connecting
    may take 5 s, so a stalled test process cannot turn an attempt into a connect timeout before
    its request is sent (it then never reaches the emulator's count)."""
    read = READ_ON_THE_LOOP if transport.timeouts_on_the_loop else 0.3
    emu.add(Stall(30), "recovered", Stall(30), Stall(30))
    model = transport.async_model(emu, timeout=(5, read))
    with skewed.moving_on(emu, read, enabled=transport.timeouts_on_the_loop):
        assert skewed.run(model.prompt("x", log=False).text()) == "recovered"
        with pytest.raises(cf.ProviderError) as info:
            skewed.run(model.prompt("x", log=False).text())
    skewed.run(model.aclose())
    assert (info.value.kind, info.value.status, info.value.retryable) == ("timeout", None, True)
    assert len(emu.wait_for_requests(4)) == 4  # the last one, given up on, may still be unread


def test_stall_mid_stream_is_a_typed_timeout_keeping_what_arrived(
    transport: Row, emu: Emulator, skewed: SkewedTime
) -> None:
    """A server that goes silent in the middle of a stream ends in chainform's own read timeout,
    whatever the SDK's: kind "timeout", retryable, the text already shown kept (issue 28 item 2).
    The clock moved on by the read timeout at the stall where the SDK keeps it on the loop (as
    above; the stall begins once the events before it are in the client's socket)."""
    read = READ_ON_THE_LOOP if transport.timeouts_on_the_loop else 0.5
    emu.add(Stall(30, reply=TEXT, after_events=7))
    model = transport.async_model(emu, timeout=(1, read))
    received: list[str] = []

    async def read_all() -> None:
        async for chunk in model.prompt("x", log=False):
            received.append(chunk)

    started = time.monotonic()
    with (
        skewed.moving_on(emu, read, enabled=transport.timeouts_on_the_loop),
        pytest.raises(cf.StreamInterruptedError) as info,
    ):
        skewed.run(read_all())
    skewed.run(model.aclose())
    assert time.monotonic() - started < 10  # not the SDK's 60-600 s, nor the server's 30
    error = info.value
    assert (error.kind, error.status, error.retryable) == ("timeout", None, True)
    assert "read timeout" in str(error)
    partial = error.partial_response
    assert partial is not None and partial.text and TEXT.startswith(partial.text) and partial.text != TEXT
    assert "".join(received) == partial.text
    assert len(emu.requests) == 1


def test_stall_before_a_reply_without_streaming_is_a_typed_timeout(
    transport: Row, emu: Emulator, skewed: SkewedTime
) -> None:
    """The clock moved on by the timeout at each stall where the SDK keeps it on the loop (as above)."""
    timeout = READ_ON_THE_LOOP if transport.timeouts_on_the_loop else 0.4
    emu.add(*[Stall(30)] * 2)
    model = transport.async_model(emu, timeout=timeout)
    started = time.monotonic()
    with (
        skewed.moving_on(emu, timeout, enabled=transport.timeouts_on_the_loop),
        pytest.raises(cf.ProviderError) as info,
    ):
        skewed.run(model.prompt("x", stream=False, log=False).text())
    skewed.run(model.aclose())
    assert time.monotonic() - started < 10
    assert (info.value.kind, info.value.status, info.value.retryable) == ("timeout", None, True)
    assert not isinstance(info.value, cf.StreamInterruptedError)


def test_a_slow_steady_stream_longer_than_the_read_timeout_completes(
    sdk_row: Row, emu: Emulator, skewed: SkewedTime
) -> None:
    """The read timeout is the server's silence, not the answer's length: every event comes within
    it, the whole answer takes longer. Once per SDK client (`sdk_row`): what is proven here is that
    the SDK's own socket timeouts, as the adapter hands them over, are per read (chainform's idle
    clock is proven the same in test_adapter_skeleton). Gaps of 0.05 s under a read timeout of
    2.5 s. Where the SDK keeps its timeouts on the loop's clock, each gap is the test moving that
    clock on (`release`: the server sends the next event once the move is made), so the answer
    lasts 2.65 s on that clock and next to nothing in real time; botocore's gaps are real seconds,
    so that only a test process stalled for 2.4 s between two events reads as a silent server."""
    long = TEXT * 6  # 54 events of 4 characters
    on_the_loop = sdk_row.timeouts_on_the_loop
    emu.add(Stall(60 if on_the_loop else 0.05, reply=long, after_events=1, every=True))
    model = sdk_row.async_model(emu, timeout=2.5)
    started = skewed.time()
    with skewed.moving_on(emu, 0.05, enabled=on_the_loop, release=True):
        text = skewed.run(_joined(model.prompt("x", log=False)))
    skewed.run(model.aclose())
    assert text == long
    assert skewed.time() - started > 2.5  # 53 gaps of 0.05 s


async def _joined(chain: cf.AsyncChainResponse) -> str:
    return "".join([chunk async for chunk in chain])


@pytest.mark.parametrize("mid_event", [False, True], ids=["between-events", "mid-event"])
def test_a_stream_that_ends_cleanly_too_soon_is_interrupted(
    transport: Row, emu: Emulator, mid_event: bool
) -> None:
    """A body that ends without its terminal event (no error on the wire) is no answer: a typed
    StreamInterruptedError holding the partial text, never a success (issue 28 item 1)."""
    emu.add(CutStream(after_events=5, reply=TEXT, mid_event=mid_event))
    with pytest.raises(cf.StreamInterruptedError) as info:
        list(transport.model(emu).prompt("x", log=False))
    partial = info.value.partial_response
    assert partial is not None and TEXT.startswith(partial.text) and partial.text != TEXT
    assert len(emu.requests) == 1


def test_connection_dropped_before_a_reply_is_retried_then_typed(transport: Row, emu: Emulator) -> None:
    model = transport.model(emu)
    if transport.retries_drop:
        emu.add(DropConnection(after_events=0), "recovered")
        assert model.prompt("x", log=False).text() == "recovered"
    emu.add(*[DropConnection(after_events=0)] * 2)
    with pytest.raises(cf.ProviderError) as info:
        model.prompt("x", log=False).text()
    assert (info.value.kind, info.value.status, info.value.retryable) == ("connection", None, True)
    assert len(emu.requests) == (4 if transport.retries_drop else 1)


@pytest.mark.parametrize(
    "fault",
    [DropConnection(after_events=7, reply=TEXT), MalformedEvent(after_events=7, reply=TEXT)],
    ids=["dropped", "bad-json"],
)
def test_broken_stream_keeps_what_arrived(transport: Row, emu: Emulator, fault: object) -> None:
    """A stream that breaks after it started is not retried; the text already shown is kept."""
    emu.add(fault)
    chain = transport.model(emu).prompt("x", log=False)
    received: list[str] = []
    with pytest.raises(cf.StreamInterruptedError) as info:
        for chunk in chain:
            received.append(chunk)
    partial = info.value.partial_response
    assert partial is not None and partial.text and TEXT.startswith(partial.text) and partial.text != TEXT
    assert "".join(received) == partial.text
    assert info.value.kind == "connection" and info.value.status is None
    assert len(emu.requests) == 1


def test_bad_json_without_streaming_is_a_provider_error(transport: Row, emu: Emulator) -> None:
    emu.add(*[MalformedEvent(reply=TEXT)] * 2)
    with pytest.raises(cf.ProviderError) as info:
        transport.model(emu).prompt("x", stream=False, log=False).text()
    error = info.value  # what a stream's bad event gives: not retried by the SDK, typed alike
    assert (error.kind, error.status, error.retryable) == ("connection", None, True)
    assert len(emu.requests) == 1


def test_finish_reason_and_reasoning(transport: Row, emu: Emulator) -> None:
    emu.add(Reply([TextReasoningContent("think first"), "truncat"], finish_reason="length"))
    chain = transport.model(emu).prompt("x", log=False)
    assert chain.text() == "truncat"
    response = chain.responses[0].response
    assert response is not None
    assert (response.finish_reason, response.reasoning) == (cf.FinishReason.LENGTH, "think first")
