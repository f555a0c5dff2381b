"""chainform's own timeouts on a provider call, kept by the adapter skeleton for every adapter.

The SDKs' own timeouts differ (openai and anthropic: 600 s a read; google-genai: none unless
asked; botocore: 60 s) and none of them bounds a stream whose server stops sending in the
middle of it. `IdleClock` does, once for every adapter: each await on the SDK (opening the
stream, each next event) may last `read` seconds of silence (`connect + read` while the
stream opens), measured since the last thing the server sent. "Sent" is each event, and, where
the SDK's HTTP client tells (`Clocks.http_hooks`: the httpx/httpx2 event hooks every HTTP SDK
takes, `Clocks.botocore` for botocore), each request attempt and each chunk of bytes, so keep-alive
pings an SDK hides never count as silence. Those hooks sit on an SDK client that concurrent calls
share: each call's request carries a call id (`CALL_HEADER`, taken off before it is sent; botocore:
the `CALL_PARAM` parameter), by which the client's `Clocks` finds that call's clock. Until the first
event the limit is `connect + read`: the SDK's own HTTP timeouts (the same values, per attempt) fire first, so its retries still run. Hand-written because asyncio.timeout (3.11+, and a fixed
deadline) cannot be pushed back from an HTTP hook cheaply; the deadline here is a float that a
touch moves, checked by one timer that re-arms itself. Time is the running event loop's own
(`loop.time()`, where its timers live): a test that runs the call on a loop with a clock of its
own gets every silence and timeout in that clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Iterator
from typing import Any, TypeVar

from chainform.clients._errors import StreamGuard
from chainform.errors import ProviderError
from chainform.types import Timeout

T = TypeVar("T")

CALL_HEADER = "x-chainform-call"
"""The request header naming a call to its SDK client's hooks (never sent: the hook takes it off)."""
CALL_PARAM = "ChainformCall"
"""The same, as a parameter of a botocore call (taken off before botocore checks the parameters)."""
_CLOCK = "chainform_idle_clock"  # a request's extension: its call's clock, for the response hook


def timeout_error(timeout: Timeout, opening: bool, guard: StreamGuard) -> ProviderError:
    """The typed error of a call whose server went silent: kind "timeout", retryable (no status);
    a StreamInterruptedError holding what arrived when the stream had begun."""
    t = timeout
    if opening:
        what = f"no answer within {t.connect + t.read:g} s (timeout: connect {t.connect:g} s + read {t.read:g} s)"
    else:
        what = f"the server sent nothing for {t.read:g} s (read timeout) after {len(guard.updates)} update(s)"
    return guard.error(what, kind="timeout")


class IdleClock:
    """One call's silence budget. `wait(awaitable)` awaits the SDK and cancels it once the server
    has been silent for the limit, raising the typed timeout (`timeout_error`) through `guard`;
    `touch()` says the server was not silent."""

    def __init__(self, timeout: Timeout, guard: StreamGuard) -> None:
        self.timeout = timeout
        self.guard = guard
        self._limit = timeout.read
        self._deadline = 0.0
        self._waiting = False
        self._expired = False
        self._task: asyncio.Task[Any] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None

    def touch(self) -> None:
        """The server sent something: the silence starts again (safe from a worker thread)."""
        if self._loop is not None:  # no wait yet: the first wait starts the silence
            self._deadline = self._loop.time() + self._limit

    async def wait(self, awaitable: Awaitable[T], *, opening: bool = False) -> T:
        """`await awaitable`, for at most the limit of silence (`connect + read` when `opening`)."""
        self._limit = self.timeout.connect + self.timeout.read if opening else self.timeout.read
        self._loop = loop = asyncio.get_running_loop()
        self.touch()
        self._task = asyncio.current_task()
        if self._timer is None or self._timer_at > self._deadline:
            self._arm(loop)
        self._waiting = True
        try:
            return await awaitable
        except BaseException:
            self.close()  # a failed wait ends the call
            if self._expired and _uncancel(self._task) == 0:
                raise timeout_error(self.timeout, opening, self.guard) from None
            raise
        finally:
            self._waiting = False
            self._expired = False

    def close(self) -> None:
        """Stop the timer (the call is over)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _arm(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = self._deadline
        self._timer = loop.call_at(self._deadline, self._check, loop)

    def _check(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        if not self._waiting or self._task is None:
            return  # the caller is busy with what arrived: not the server's silence
        if loop.time() < self._deadline:
            self._arm(loop)
            return
        self._expired = True
        self._task.cancel()


def _uncancel(task: asyncio.Task[Any] | None) -> int:
    """Take back the clock's own cancellation; what is left counts the caller's (3.10: none known)."""
    uncancel = getattr(task, "uncancel", None)
    return int(uncancel()) if uncancel is not None else 0


async def within(clock: IdleClock, awaitable: Awaitable[T]) -> T:
    """`awaitable` (a whole, unstreamed SDK call) under `clock`'s limits, as `IdleClock.wait`
    bounds each step of a stream (`ProviderClient._stream_request`); the clock is closed after."""
    try:
        return await clock.wait(awaitable, opening=True)
    finally:
        clock.close()


def with_call_header(request: dict[str, Any], call: str) -> dict[str, Any]:
    """The keyword arguments of an SDK call whose `extra_headers` name call `call` to its hooks."""
    return {**request, "extra_headers": {**(request.get("extra_headers") or {}), CALL_HEADER: call}}


class Clocks:
    """The clocks of one SDK client's calls in flight, by call id: what its hooks touch."""

    def __init__(self) -> None:
        self._calls: dict[str, IdleClock] = {}

    @contextlib.contextmanager
    def calling(self, clock: IdleClock) -> Iterator[str]:
        """Around one call: the id its requests carry (`CALL_HEADER`, `CALL_PARAM`)."""
        call = uuid.uuid4().hex
        self._calls[call] = clock
        try:
            yield call
        finally:
            del self._calls[call]

    def touch(self, call: str | None) -> None:
        """The server sent something for call `call` (safe from a worker thread)."""
        clock = self._calls.get(call) if call is not None else None
        if clock is not None:
            clock.touch()

    def http_hooks(
        self, request: tuple[Any, ...] = (), response: tuple[Any, ...] = ()
    ) -> dict[str, list[Any]]:
        """`event_hooks` for an SDK's httpx or httpx2 async client: each request attempt and each
        chunk of the answer touch the clock of the call that sent it; the hooks given run after ours."""
        return {"request": [self._on_request, *request], "response": [_on_response, *response]}

    async def _on_request(self, request: Any) -> None:
        clock = self._calls.get(request.headers.pop(CALL_HEADER, ""))
        if clock is None:
            return
        request.extensions[_CLOCK] = clock
        clock.touch()
        limits = request.extensions.get("timeout")
        if isinstance(limits, dict) and limits.get("read") is None and limits.get("connect") is None:
            # an SDK that sends no timeout of its own (google-genai) gets ours at the HTTP layer, so
            # that its retries see its HTTP library's timeouts as they see any other
            t = clock.timeout
            request.extensions["timeout"] = {
                "connect": t.connect,
                "read": t.read,
                "write": t.read,
                "pool": t.read,
            }

    def botocore(self, events: Any, service: str) -> None:
        """Register on a botocore client's `events`: its calls' `CALL_PARAM` goes into the request's
        context, and each attempt (retries included) touches the call's clock before it is signed."""

        def take(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
            call = params.pop(CALL_PARAM, None)
            if call is not None:
                context[CALL_PARAM] = call

        def touch(request: Any, **_: Any) -> None:
            self.touch((getattr(request, "context", None) or {}).get(CALL_PARAM))

        events.register(f"before-parameter-build.{service}", take)
        events.register(f"before-sign.{service}", touch)


async def _on_response(response: Any) -> None:
    clock = response.request.extensions.get(_CLOCK)
    if not isinstance(clock, IdleClock):
        return
    clock.touch()
    touching = _touching_class(response)
    if touching is not None:
        response.stream = touching(response.stream, clock)


@functools.cache
def _touching_base(library: str) -> type | None:
    return getattr(sys.modules.get(library), "AsyncByteStream", None)


def _touching_class(response: Any) -> type | None:
    """A subclass of the response's library's own AsyncByteStream (httpx and httpx2 check the
    type) that touches its call's clock at every chunk of bytes."""
    base = _touching_base(type(response).__module__.partition(".")[0])
    if base is None or not isinstance(getattr(response, "stream", None), base):
        return None
    return _subclass(base)


@functools.cache
def _subclass(base: type) -> type:
    class TouchingStream(base):  # type: ignore[misc, valid-type]
        def __init__(self, stream: Any, clock: IdleClock) -> None:
            self._stream = stream
            self._clock = clock

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in self._stream:
                self._clock.touch()
                yield chunk

        async def aclose(self) -> None:
            await self._stream.aclose()

    return TouchingStream


__all__ = ["CALL_HEADER", "CALL_PARAM", "Clocks", "IdleClock", "timeout_error", "with_call_header", "within"]
