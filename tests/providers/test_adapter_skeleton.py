"""The adapter skeleton's own contract (clients/_adapter.py): what every adapter gets without writing it.

A minimal wire over an in-test event stream stands for an SDK, so that each promise of the
skeleton (stream loop, failure typing, key hygiene, closing, option checks, profile lookup, turn
merging, reasoning replay) is checked once, apart from any provider's wire format.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest

from chainform.clients._adapter import Endpoint, ProviderClient, sdk_error
from chainform.clients._errors import StreamGuard
from chainform.clients._hooks import SdkHooks, attach
from chainform.clients._wire import StreamState, merge_turns, replay_reasoning
from chainform.errors import ChainformError, ProviderError, StreamInterruptedError, UnsupportedOptionError
from chainform.types import (
    ChatOptions,
    ChatResponseUpdate,
    FunctionSpec,
    Message,
    ModelProfile,
    TextContent,
    TextReasoningContent,
    Timeout,
    ToolMode,
)
from virtual_time import VirtualTime

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

SECRET = "sk-skeleton-0123456789"
PROFILES = {
    "fake-1": ModelProfile(
        name="fake-1", unsupported_options=frozenset({"seed"}), supports_tool_choice_required=False
    )
}
TOOL = FunctionSpec("lookup", "Look a word up.", {"type": "object", "properties": {}})


class SDKFailure(Exception):
    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Events:
    """An SDK stream: yields its events, then raises `fail` if given; records whether it was closed."""

    def __init__(self, events: list[str], fail: Exception | None = None) -> None:
        self.events = list(events)
        self.fail = fail
        self.closed = False
        self.touch: Any = None  # touches its call's clock, as the SDK client's HTTP hooks do

    def opened_for(self, clocks: Any, call: str | None) -> None:
        self.touch = lambda: clocks.touch(call)

    def __aiter__(self) -> Events:
        return self

    async def __anext__(self) -> str:
        if self.events:
            return self.events.pop(0)
        if self.fail is not None:
            raise self.fail
        raise StopAsyncIteration

    async def close(self) -> None:
        self.closed = True


class Whole:
    """The HTTP response of an SDK stream whose server answered whole (`stream.response`)."""

    def __init__(self, body: bytes, content_type: str = "application/json") -> None:
        self.headers = {"content-type": content_type}
        self.body = body

    async def aread(self) -> bytes:
        return self.body


class State(StreamState):
    closing_event = "done"

    def whole(self, body: Any) -> list[ChatResponseUpdate] | None:
        if not isinstance(body, dict) or "text" not in body:
            return None
        return [self.update([TextContent(body["text"])])]

    def translate_one(self, event: str) -> ChatResponseUpdate | None:
        if event == "done":
            self.finished = True
            return None
        if event == "bug":
            raise KeyError("a bug in translation")
        return self.update([TextContent(event)])


class FakeWire:
    """The wire of a fake provider: the SDK call hands out the test's stream."""

    def __init__(self, endpoint: Endpoint, stream: Events | Exception) -> None:
        self.endpoint = endpoint
        self.stream = stream
        self.opened = 0

    def build_request(self, messages: Any, options: ChatOptions) -> dict[str, Any]:
        self.endpoint.check_options(options)
        return {}

    def reader(self, request: dict[str, Any]) -> StreamState:
        return State()

    async def open_stream(
        self, sdk: Any, request: dict[str, Any], reader: StreamState, guard: StreamGuard
    ) -> Events:
        self.opened += 1
        if isinstance(self.stream, Exception):
            raise self.stream
        self.stream.opened_for(self.endpoint.clocks, request.get("call"))
        return self.stream

    def tagged(self, request: dict[str, Any], call: str) -> dict[str, Any]:
        return {**request, "call": call}

    def error(self, exc: Exception, guard: StreamGuard, opened: bool) -> ChainformError:
        if not isinstance(exc, SDKFailure):
            return sdk_error(exc, guard, opened)
        return guard.error(f"sdk said: {exc}", status=exc.status)


class Adapter(ProviderClient):
    """A fake provider's client: the skeleton composed with `FakeWire`."""

    wire: FakeWire

    def __init__(
        self,
        stream: Events | Exception,
        model: str = "fake-1",
        wire: type[FakeWire] = FakeWire,
        **kwargs: Any,
    ) -> None:
        middleware = kwargs.pop("middleware", ())
        endpoint = Endpoint.for_model(model, "fake", PROFILES, ModelProfile(), secret=SECRET, **kwargs)
        sdk = attach(SimpleNamespace(), SdkHooks())  # an SDK client chainform built, hooks and all
        super().__init__(endpoint, wire(endpoint, stream), sdk, middleware=middleware)

    @property
    def opened(self) -> int:
        return self.wire.opened


async def test_skeleton_streams_translates_and_closes() -> None:
    events = Events(["Hel", "lo", "done"])
    response = await Adapter(events).get_response([Message.user("hi")])
    assert response.text == "Hello"
    assert events.closed


async def test_skeleton_break_after_data_keeps_the_partial_response_without_the_key() -> None:
    events = Events(["Hel"], fail=SDKFailure(f"connection reset, key {SECRET}"))
    with pytest.raises(StreamInterruptedError) as info:
        await Adapter(events).get_response([Message.user("hi")])
    error = info.value
    assert error.partial_response is not None and error.partial_response.text == "Hel"
    assert SECRET not in str(error) and error.__cause__ is None  # no chained SDK exception either
    assert error.retryable and error.kind == "connection" and error.provider == "fake"
    assert events.closed


@pytest.mark.parametrize(
    ("status", "retryable", "kind"), [(503, True, "server"), (501, False, "server"), (401, False, "auth")]
)
async def test_skeleton_failure_before_data_follows_the_one_status_policy(
    status: int, retryable: bool, kind: str
) -> None:
    with pytest.raises(ProviderError) as info:
        await Adapter(SDKFailure("refused", status)).get_response([Message.user("hi")])
    assert type(info.value) is ProviderError
    assert (info.value.status, info.value.retryable, info.value.kind) == (status, retryable, kind)


async def test_skeleton_stream_without_its_closing_event_is_an_error() -> None:
    with pytest.raises(StreamInterruptedError, match="stream ended before done") as info:
        await Adapter(Events(["partial"])).get_response([Message.user("hi")])
    assert info.value.partial_response is not None and info.value.partial_response.text == "partial"
    with pytest.raises(ProviderError, match="empty stream") as empty:  # no event: not an answer
        await Adapter(Events([])).get_response([Message.user("hi")])
    assert empty.value.kind == "streaming_rejected" and type(empty.value) is ProviderError
    assert not empty.value.retryable  # a refusal: sent again, it gets the same


async def test_skeleton_reads_a_whole_body_that_answered_a_streamed_request() -> None:
    """A gateway that ignores `stream: true` sends the whole answer: read whole, not taken for an
    empty stream; a JSON body that is no answer, or no JSON, is a typed error; an event stream
    whose content type is not JSON is read as events."""
    events = Events([])
    events.response = Whole(b'{"text": "all at once"}')  # type: ignore[attr-defined]
    assert (await Adapter(events).get_response([Message.user("hi")])).text == "all at once"
    assert events.closed
    for body in (b'{"error": "no"}', b"<html>"):
        events = Events([])
        events.response = Whole(body)  # type: ignore[attr-defined]
        with pytest.raises(ProviderError, match="malformed response body") as info:
            await Adapter(events).get_response([Message.user("hi")])
        assert type(info.value) is ProviderError and events.closed
    streamed = Events(["Hi", "done"])
    streamed.response = Whole(b"", "text/event-stream")  # type: ignore[attr-defined]
    assert (await Adapter(streamed).get_response([Message.user("hi")])).text == "Hi"


async def test_skeleton_sdk_refusing_the_request_before_sending_is_a_bad_request() -> None:
    """An SDK's ValueError before anything was sent (google-genai: "contents are required") is the
    request's fault: bad_request, not retried as if the connection had failed."""
    with pytest.raises(ProviderError, match="request refused: ValueError: contents are required") as info:
        await Adapter(ValueError("contents are required")).get_response([Message.user("hi")])
    assert (info.value.kind, info.value.retryable) == ("bad_request", False)


async def test_skeleton_translation_bug_is_not_disguised_as_a_provider_failure() -> None:
    events = Events(["ok", "bug"])
    with pytest.raises(KeyError, match="a bug in translation"):
        await Adapter(events).get_response([Message.user("hi")])
    assert events.closed


async def test_skeleton_refuses_options_by_name_before_anything_is_sent() -> None:
    adapter = Adapter(Events(["done"]))
    with pytest.raises(UnsupportedOptionError, match="seed=1"):
        await adapter.get_response([Message.user("hi")], ChatOptions(seed=1))
    required = ChatOptions(tools=[TOOL], tool_mode=ToolMode.REQUIRED_ANY)
    with pytest.raises(UnsupportedOptionError, match="cannot be made to call a tool"):
        await adapter.get_response([Message.user("hi")], required)
    assert adapter.opened == 0


def test_skeleton_profile_lookup_and_repr() -> None:
    assert Adapter(Events([])).profile is PROFILES["fake-1"]
    assert Adapter(Events([]), "fake-1-20250101").profile.unsupported_options == {"seed"}  # same family
    assert Adapter(Events([]), "other").profile.name == "other"  # the unknown profile, renamed
    mine = ModelProfile(name="mine")
    assert Adapter(Events([]), profile=mine).profile is mine
    assert repr(Adapter(Events([]))) == "Adapter(model='fake-1', provider='fake')" and SECRET not in repr(
        Adapter(Events([]))
    )


def test_skeleton_merges_turns_and_replays_only_signed_reasoning() -> None:
    def encode(message: Message, role: str) -> list[dict[str, Any]]:
        return [{"text": c.text} for c in message.contents if isinstance(c, TextContent)]

    turns = merge_turns(
        [Message.user("a"), Message.user("b"), Message.assistant([]), Message.assistant("c")], encode
    )
    assert turns == [
        {"role": "user", "content": [{"text": "a"}, {"text": "b"}]},
        {"role": "assistant", "content": [{"text": "c"}]},
    ]

    def replay(content: TextReasoningContent, role: str) -> dict[str, Any] | None:
        return replay_reasoning(
            content, role, signed=lambda t, s: {"thought": t, "sig": s}, redacted=lambda d: {"hidden": d}
        )

    assert replay(TextReasoningContent("why", "sig"), "assistant") == {"thought": "why", "sig": "sig"}
    assert replay(TextReasoningContent("", "blob"), "assistant") == {"hidden": "blob"}
    assert replay(TextReasoningContent("why"), "assistant") is None  # unsigned: not accepted back
    assert replay(TextReasoningContent("why", "sig"), "user") is None


class Paced(Events):
    """An SDK stream that waits `gap` seconds before each event (forever after `hang_after`), and
    touches the call's clock `pings` times during each wait, as an HTTP hook does for each chunk
    of bytes that brings no event (a keep-alive the SDK hides)."""

    def __init__(self, events: list[str], gap: float, hang_after: int | None = None, pings: int = 0) -> None:
        super().__init__(events)
        self.gap, self.hang_after, self.pings, self.sent = gap, hang_after, pings, 0

    async def __anext__(self) -> str:
        if self.hang_after is not None and self.sent >= self.hang_after:
            await asyncio.Event().wait()  # a server that stopped sending, connection still open
        for _ in range(self.pings + 1):
            await asyncio.sleep(self.gap / (self.pings + 1))
            self.touch()
        self.sent += 1
        return await super().__anext__()


def test_skeleton_ends_a_silent_stream_in_a_typed_timeout_keeping_what_arrived(virtual: VirtualTime) -> None:
    """On virtual time (virtual_time.py): two events 0.1 s apart, then silence; the read limit ends
    the call 0.3 s after the last event, neither sooner nor at the opening limit (1.3 s)."""
    events = Paced(["Hel", "lo", "done"], gap=0.1, hang_after=2)
    with pytest.raises(StreamInterruptedError) as info:
        virtual.run(Adapter(events, timeout=(1, 0.3)).get_response([Message.user("hi")]))
    assert virtual.time() == pytest.approx(0.1 + 0.1 + 0.3)
    error = info.value
    assert (error.kind, error.status, error.retryable) == ("timeout", None, True)
    assert "sent nothing for 0.3 s" in str(error)
    assert error.partial_response is not None and error.partial_response.text == "Hello"
    assert events.closed


def test_skeleton_times_out_an_sdk_call_that_never_opens(virtual: VirtualTime) -> None:
    """On virtual time: cut at the opening limit (connect + read), no real second waited."""

    class Never(FakeWire):
        async def open_stream(
            self, sdk: Any, request: dict[str, Any], reader: StreamState, guard: StreamGuard
        ) -> Events:
            await asyncio.Event().wait()
            raise AssertionError("unreachable")

    with pytest.raises(ProviderError) as info:
        virtual.run(Adapter(Events([]), wire=Never, timeout=(0.1, 0.2)).get_response([Message.user("hi")]))
    assert type(info.value) is ProviderError and info.value.kind == "timeout" and info.value.retryable
    assert "no answer within 0.3 s" in str(info.value)
    assert virtual.time() == pytest.approx(0.1 + 0.2)


def test_skeleton_read_timeout_is_silence_not_the_length_of_the_answer(virtual: VirtualTime) -> None:
    """On virtual time: events 0.15 s apart under a 0.3 s read timeout, 1.2 s in all, never cut; a
    gap of 0.5 s kept alive by a touch every 0.1 s (chunks of bytes without an event) is not
    silence either. The same gaps without the touches are."""
    steady = Paced(["a", "b", "c", "d", "e", "f", "g", "done"], gap=0.15)
    assert virtual.run(Adapter(steady, timeout=(1, 0.3)).get_response([])).text == "abcdefg"
    assert virtual.time() >= 8 * 0.15  # four times the read timeout
    pinged = Paced(["a", "b", "done"], gap=0.5, pings=4)
    assert virtual.run(Adapter(pinged, timeout=(1, 0.3)).get_response([])).text == "ab"
    silent = Paced(["a", "b", "done"], gap=0.5)
    with pytest.raises(StreamInterruptedError, match=r"sent nothing for 0\.3 s"):
        virtual.run(Adapter(silent, timeout=(1, 0.3)).get_response([]))


def test_each_call_through_one_sdk_client_keeps_its_own_idle_clock(virtual: VirtualTime) -> None:
    """Two calls at once through one SDK client, whose hooks share one table of clocks: the touches
    of the first (bytes without an event) keep only the first alive; the second, silent as long,
    times out. Each request names its call to the hooks (`tagged`), no context variable."""
    pinged = Paced(["a", "b", "done"], gap=0.5, pings=4)
    silent = Paced(["x", "y", "done"], gap=0.5)

    class Two(FakeWire):
        async def open_stream(
            self, sdk: Any, request: dict[str, Any], reader: StreamState, guard: StreamGuard
        ) -> Events:
            self.stream = pinged if self.opened == 0 else silent
            return await super().open_stream(sdk, request, reader, guard)

    adapter = Adapter(Events([]), wire=Two, timeout=(1, 0.3))

    async def both() -> list[Any]:
        calls = (adapter.get_response([]), adapter.get_response([]))
        return list(await asyncio.gather(*calls, return_exceptions=True))

    first, second = virtual.run(both())
    assert first.text == "ab"
    assert isinstance(second, StreamInterruptedError) and "sent nothing for 0.3 s" in str(second)


async def test_skeleton_timeout_defaults_and_forms() -> None:
    assert Adapter(Events([])).timeout == Timeout(10.0, 120.0)
    assert Timeout.of(30) == Timeout(10.0, 30.0) and Timeout.of(5) == Timeout(5, 5)
    assert Timeout.of((2, 60)) == Timeout(2, 60) == Timeout.parse("2,60")
    assert Timeout.parse("45") == Timeout(10, 45)
    for bad in (0, -1, float("nan"), (1, 2, 3), "10", True):
        with pytest.raises(ValueError):
            Timeout.of(bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="CONNECT,READ"):
        Timeout.parse("soon")


def test_skeleton_clock_leaves_the_callers_own_cancellation_alone(virtual: VirtualTime) -> None:
    async def cancelled_by_caller() -> None:
        task = asyncio.ensure_future(Adapter(Paced(["a", "done"], gap=5), timeout=(1, 60)).get_response([]))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    virtual.run(cancelled_by_caller())


async def test_skeleton_clock_arms_one_timer_a_call_not_one_a_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """The clock's cost stays flat in a stream's length: 500 events, each with bytes touching the
    clock, arm at most two timers (the opening limit, then the read limit), never one per wait."""

    class Touching(Events):
        async def __anext__(self) -> str:
            self.touch()
            self.touch()
            return await super().__anext__()

    loop = asyncio.get_running_loop()
    armed: list[float] = []
    call_at = loop.call_at

    def counting(when: float, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        armed.append(when)
        return call_at(when, *args, **kwargs)

    monkeypatch.setattr(loop, "call_at", counting)
    events = Touching([*(["x"] * 500), "done"])
    response = await Adapter(events, timeout=(1, 30)).get_response([Message.user("hi")])
    assert response.text == "x" * 500 and events.closed
    assert 1 <= len(armed) <= 2
