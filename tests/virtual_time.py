"""An event loop on virtual time, for tests of timing behaviour: the idle clock of a provider call
(clients/_timeouts.py), a map's rate gate and back-offs (_map/_gate.py).

A stream paced in real seconds against a read timeout of a few tenths races the machine: a test
process stalled for half a second between two events reads as a silent server. On `VirtualTime`,
time moves only when nothing is ready to run: the loop then jumps to its next timer instead of
waiting for it. Every sleep, gap and timeout happens in the order of its virtual time, the same on
an idle machine and on one that stalls the test for seconds, and takes no real time at all.

Work the loop hands to a thread (`run_in_executor`, `asyncio.to_thread`: an SDK's platform probe,
botocore's blocking calls) runs in real time: while any is pending the loop waits for it as any loop
would, and virtual time stands still, so a slow thread never reads as a silent server.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class _JumpingSelector(selectors.DefaultSelector):  # type: ignore[misc, valid-type]
    """Polls without waiting; where the loop would wait for its next timer, jumps its clock there."""

    def __init__(self, loop: VirtualTime) -> None:
        super().__init__()
        self.loop = loop

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready: list[tuple[selectors.SelectorKey, int]] = super().select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None or self.loop.threads:  # only I/O (a thread's wake-up) can come first
            return list(super().select(None))
        self.loop.now += timeout
        return []


class VirtualTime(asyncio.SelectorEventLoop):
    """A loop whose `time()` starts at 0 and moves only by jumping to the next timer when idle."""

    def __init__(self) -> None:
        self.now = 0.0
        self.threads = 0  # executor jobs not finished yet
        super().__init__(_JumpingSelector(self))

    def time(self) -> float:
        return self.now

    def run_in_executor(self, executor: Any, func: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """The job in a thread, as any loop runs it; virtual time stands still until it is done."""
        self.threads += 1
        future = super().run_in_executor(executor, func, *args)
        future.add_done_callback(self._thread_done)
        return future

    def _thread_done(self, _: asyncio.Future[Any]) -> None:
        self.threads -= 1

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.run_until_complete(coro)
