"""Run async code from sync code: one private event loop on a daemon thread.

Sync APIs submit coroutines here, so they work the same inside notebooks or other running loops.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def _get_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="chainform-loop", daemon=True)
            thread.start()
            _loop = loop
        return _loop


def submit(coro: Coroutine[Any, Any, T]) -> Future[T]:
    """Schedule `coro` on the background loop; returns a concurrent future."""
    return asyncio.run_coroutine_threadsafe(coro, _get_loop())


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to completion on the background loop and return its result (or raise)."""
    return submit(coro).result()
