"""Run async code from sync code: one private event loop on a daemon thread.

Sync APIs submit coroutines here, so they work the same inside notebooks or other running loops.
A sync tool runs in a worker thread, so it may call the sync API; code running ON this loop (an
async tool, a hook) that calls it would wait for the loop it holds: it gets an error, not a hang.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

from chainform.errors import ChainformError

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def _get_loop() -> asyncio.AbstractEventLoop:
    global _loop, _thread
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="chainform-loop", daemon=True)
            thread.start()
            _loop, _thread = loop, thread
        return _loop


def submit(coro: Coroutine[Any, Any, T]) -> Future[T]:
    """Schedule `coro` on the background loop; returns a concurrent future."""
    if _thread is not None and threading.current_thread() is _thread:
        coro.close()
        raise ChainformError(
            "chainform's sync API was called from code running on chainform's own event loop "
            "(an async tool or a hook): it would wait forever for the loop it holds. Use the async "
            "API (AsyncModel, `await`) there"
        )
    return asyncio.run_coroutine_threadsafe(coro, _get_loop())


def call_soon(callback: Callable[[], object]) -> None:
    """Run `callback` on the background loop's thread (soon, in order with the loop's other work)."""
    _get_loop().call_soon_threadsafe(callback)


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to completion on the background loop and return its result (or raise)."""
    return submit(coro).result()
