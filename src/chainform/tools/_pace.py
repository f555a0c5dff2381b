"""Where a sync tool runs: in a worker thread, or inline on chainform's loop when that is safe.

A worker thread costs two wake-ups across threads a call: the worker's, then the loop's when the
result comes back. On a 2-core virtual machine that is 50-110 us, more than most tools' own work
(a 2-call chain with one tool call: 2.9 ms with the thread, 2.7 ms inline; bench/bench_chain.py).
Run inline, though, a tool holds the loop: nothing else on it moves until the tool returns. So a
sync tool runs inline only when all of these hold:

- the chain runs alone on chainform's own loop (`_sync.only_chain()`: the sync API, one chain),
  so holding the loop holds no one else's chain (a user's loop, or a `map`, always gets threads);
- the tool has run before, and every run took under `INLINE_LIMIT`;
- it never called chainform's sync API while it ran (inline, that call would wait on the very
  loop the tool holds: `_sync` refuses it with a clear error instead of hanging).

A run that breaks either rule sends the tool to worker threads for good (`Pace.threaded`).
A tool inline runs in a copy of the chain's context, as `asyncio.to_thread` would run it, and
sees no running loop (its own `asyncio.run` works, as in a worker thread).
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import Callable
from typing import Any

from chainform import _sync

INLINE_LIMIT = 0.001
"""Seconds: a sync tool whose runs all took less may run inline (the loop is held that long)."""


class Pace:
    """What one tool's runs so far say about running it inline."""

    __slots__ = ("runs", "threaded")

    def __init__(self) -> None:
        self.runs = 0
        self.threaded = False  # set for good once a run was slow or called the sync API

    def note(self, seconds: float, reentered: bool) -> None:
        self.runs += 1
        if reentered or seconds >= INLINE_LIMIT:
            self.threaded = True


async def run_sync(pace: Pace, fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)` for a sync tool: inline when the rules above allow it, else in a worker thread."""
    if pace.runs and not pace.threaded and _sync.only_chain():
        return contextvars.copy_context().run(_inline, pace, fn, args)
    return await asyncio.to_thread(_timed, pace, fn, args)


def _inline(pace: Pace, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    """`_timed` on the loop's thread, the loop hidden as it is from a worker thread: a tool that
    runs its own `asyncio.run` works inline too."""
    loop = asyncio._get_running_loop()
    asyncio._set_running_loop(None)
    try:
        return _timed(pace, fn, args)
    finally:
        asyncio._set_running_loop(loop)


def _timed(pace: Pace, fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    started = time.perf_counter()
    with _sync.watching_reentry() as reentry:
        try:
            return fn(*args)
        finally:
            pace.note(time.perf_counter() - started, reentry.seen)
