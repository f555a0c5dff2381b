"""Event loops on a clock the test controls, for tests of timing behaviour: the idle clock of a
provider call (clients/_timeouts.py), an SDK's own timeouts, a map's rate gate and back-offs
(_map/_gate.py). `VirtualTime` for what runs in-process; `SkewedTime` (at the end) for a client
on real sockets.

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
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from chainform.testing.emulator import Emulator

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


class _SkewingSelector(selectors.DefaultSelector):  # type: ignore[misc, valid-type]
    """Where the loop would wait with a move of its clock pending, makes the move instead."""

    def __init__(self, loop: SkewedTime) -> None:
        super().__init__()
        self.loop = loop

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready: list[tuple[selectors.SelectorKey, int]] = super().select(0)
        if ready or timeout == 0:
            return ready
        if self.loop.moves:  # idle: every task waits on I/O or a timer, each timer armed
            self.loop.skew += self.loop.moves.pop(0)
            return []
        return list(super().select(timeout))


class SkewedTime(asyncio.SelectorEventLoop):
    """A loop on real time that the test moves forward: `time()` is the monotonic clock plus every
    move. For a client on real sockets (the loopback emulator), where virtual time cannot tell a
    silent server from bytes still on their way: the test asks for a move once the server has gone
    silent (`moving_on`), and the loop makes it when it next has nothing to do, when the client
    waits for the answer with its timers armed; the timers waiting for that silence (an SDK's read
    timeout on the loop's clock, chainform's idle clock) then fire at once instead of after their
    real seconds. Timers fire in the order of their deadlines, as on any loop."""

    def __init__(self) -> None:
        self.skew = 0.0
        self.moves: list[float] = []  # asked for, made when the loop is next idle
        super().__init__(_SkewingSelector(self))

    def time(self) -> float:
        return super().time() + self.skew

    def advance(self, seconds: float) -> None:
        """Move the clock on by `seconds` when the loop is next idle (call it on the loop, e.g.
        `call_soon_threadsafe(loop.advance, seconds)`)."""
        self.moves.append(seconds)

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.run_until_complete(coro)

    @contextmanager
    def moving_on(self, emulator: Emulator, seconds: float, *, enabled: bool = True) -> Iterator[None]:
        """While open, each `Stall` pause the emulator begins moves this clock on by `seconds`
        (nothing where `enabled` is false: an SDK whose timeouts are not on the loop's clock)."""
        done = threading.Event()

        def watch() -> None:
            seen = emulator.stalls
            while not done.is_set():
                now = emulator.wait_for_stalls(seen + 1, timeout=0.01)  # and look at `done`
                for _ in range(now - seen):
                    self.call_soon_threadsafe(self.advance, seconds)
                seen = now

        watcher = threading.Thread(target=watch, name="skewed-time", daemon=True)
        if enabled:
            watcher.start()
        try:
            yield
        finally:
            done.set()
            if enabled:
                watcher.join()
