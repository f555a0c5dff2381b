"""One MCP client session on its own thread and event loop.

The SDK's sessions are anyio task groups that must be entered and left by the same task, while
chainform calls tools from the chain's loop (the sync API's background loop or the user's). A
private loop per server owns the session; callers on any loop submit calls to it and await the
result. Closing the session (which stops a stdio server's process) happens on that loop too.

A message the transport cannot read (malformed JSON, JSON nested deeper than the parser allows)
never reaches the request waiting for it; the SDK hands it to the message handler instead. The
session ends the calls in flight with that fault rather than letting them wait for their timeout.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")
ClientFactory = Callable[..., Any]  # (message_handler=...) -> an un-entered mcp.Client


class TransportFault(Exception):
    """The server sent something the transport could not read while a call was waiting."""


class Session:
    """A connected MCP client; `run(coro_fn)` executes `coro_fn(client)` on the session's loop."""

    def __init__(self, make_client: ClientFactory, connect_timeout: float) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="chainform-mcp", daemon=True)
        self._thread.start()
        self._client: Any = None
        self._stop: asyncio.Event | None = None
        self._fault: asyncio.Future[Exception] | None = None
        self.failure: BaseException | None = None
        self._done = threading.Event()
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._main = asyncio.run_coroutine_threadsafe(self._hold(make_client, ready), self._loop)
        try:
            ready.result(timeout=connect_timeout)
        except BaseException:
            self.close()
            raise

    async def _hold(self, make_client: ClientFactory, ready: concurrent.futures.Future[None]) -> None:
        self._stop = asyncio.Event()
        self._fault = self._loop.create_future()
        try:
            async with make_client(message_handler=self._on_message) as client:
                self._client = client
                ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            else:
                self.failure = exc
        finally:
            self._client = None
            self._done.set()

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception) and self._fault is not None:
            fault, self._fault = self._fault, self._loop.create_future()
            fault.set_result(message)  # wakes the calls started before it

    async def _guarded(self, fn: Callable[[Any], Coroutine[Any, Any, T]]) -> T:
        assert self._fault is not None
        fault, call = self._fault, asyncio.ensure_future(fn(self._client))
        waiting: set[asyncio.Future[Any]] = {call, fault}
        try:
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            call.cancel()
            raise
        if call.done():
            return call.result()
        call.cancel()
        exc = fault.result()
        errors = getattr(exc, "errors", None)  # a pydantic ValidationError: its first message is the cause
        why = errors()[0]["msg"] if callable(errors) and errors() else " ".join(str(exc).split())[:300]
        raise TransportFault(f"the server sent a message that could not be read: {why}")

    @property
    def alive(self) -> bool:
        return self._client is not None and self.failure is None and not self._main.done()

    def submit(self, fn: Callable[[Any], Coroutine[Any, Any, T]]) -> concurrent.futures.Future[T]:
        if not self.alive:
            raise ConnectionError("the MCP session is closed")
        return asyncio.run_coroutine_threadsafe(self._guarded(fn), self._loop)

    async def run(self, fn: Callable[[Any], Coroutine[Any, Any, T]]) -> T:
        """Await `fn(client)` from any event loop (cancelling the wait cancels the call)."""
        return await asyncio.wrap_future(self.submit(fn))

    def close(self, timeout: float = 10.0) -> None:
        """End the session (a stdio server's process is stopped) and the private loop."""
        if self._thread.is_alive():
            if self._client is not None and self._stop is not None:
                self._loop.call_soon_threadsafe(self._stop.set)
            else:  # still connecting: give up on it
                self._main.cancel()
            if not self._done.wait(timeout):
                self._main.cancel()
                self._done.wait(timeout)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)
        if not self._thread.is_alive() and not self._loop.is_closed():
            self._loop.close()
