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
import functools
import selectors
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from typing_extensions import Self

from chainform.testing.emulator import Emulator

T = TypeVar("T")


class _IdleSelector(selectors.DefaultSelector):  # type: ignore[misc, valid-type]
    """Polls without waiting; where the loop would wait, asks it what to do (`_TestClock.idle`)."""

    def __init__(self, loop: _TestClock) -> None:
        super().__init__()
        self.loop = loop

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready: list[tuple[selectors.SelectorKey, int]] = super().select(0)
        if ready or timeout == 0:
            return ready
        wait = self.loop.idle(timeout)
        return [] if wait == 0 else list(super().select(wait))


class _TestClock(asyncio.SelectorEventLoop):
    """A loop whose clock the test controls: `idle` decides what happens when nothing is ready."""

    def __init__(self) -> None:
        super().__init__(_IdleSelector(self))

    def idle(self, timeout: float | None) -> float | None:
        """Nothing is ready and the next timer is `timeout` seconds away (None: no timer): the
        seconds to wait for I/O now, or 0 once the clock has moved (the timers then run)."""
        raise NotImplementedError

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.run_until_complete(coro)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.run_until_complete(self.shutdown_asyncgens())
        self.close()


class VirtualTime(_TestClock):
    """A loop whose `time()` starts at 0 and moves only by jumping to the next timer when idle."""

    def __init__(self) -> None:
        self.now = 0.0
        self.threads = 0  # executor jobs not finished yet
        super().__init__()

    def time(self) -> float:
        return self.now

    def idle(self, timeout: float | None) -> float | None:
        if timeout is None or self.threads:  # only I/O (a thread's wake-up) can come first
            return None
        self.now += timeout
        return 0

    def run_in_executor(self, executor: Any, func: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """The job in a thread, as any loop runs it; virtual time stands still until it is done."""
        self.threads += 1
        future = super().run_in_executor(executor, func, *args)
        future.add_done_callback(self._thread_done)
        return future

    def _thread_done(self, _: asyncio.Future[Any]) -> None:
        self.threads -= 1


class SkewedTime(_TestClock):
    """A loop on real time that the test moves forward: `time()` is the monotonic clock plus every
    move. For a client on real sockets (the loopback emulator), where virtual time cannot tell a
    silent server from bytes still on their way: the test asks for a move once the server has gone
    silent (`moving_on`), and the loop makes it when it next has nothing to do, when the client
    waits for the answer with its timers armed; the timers waiting for that silence (an SDK's read
    timeout on the loop's clock, chainform's idle clock) then fire at once instead of after their
    real seconds. Timers fire in the order of their deadlines, as on any loop."""

    def __init__(self) -> None:
        self.skew = 0.0
        self.moves: list[tuple[float, Callable[[], object]]] = []  # made when the loop is next idle
        super().__init__()

    def time(self) -> float:
        return super().time() + self.skew

    def idle(self, timeout: float | None) -> float | None:
        if self.moves:  # every task waits on I/O or a timer, each timer armed: move now
            seconds, then = self.moves.pop(0)
            self.skew += seconds
            then()
            return 0
        return timeout

    def advance(self, seconds: float, then: Callable[[], object] = lambda: None) -> None:
        """Move the clock on by `seconds` when the loop is next idle, then call `then` (call it on
        the loop, e.g. `call_soon_threadsafe(loop.advance, seconds)`)."""
        self.moves.append((seconds, then))

    @contextmanager
    def moving_on(
        self, emulator: Emulator, seconds: float, *, enabled: bool = True, release: bool = False
    ) -> Iterator[None]:
        """While open, each `Stall` pause the emulator begins moves this clock on by `seconds`
        (nothing where `enabled` is false: an SDK whose timeouts are not on the loop's clock), and
        with `release` ends that pause once the move is made: a slow, steady stream whose gaps
        pass on the loop's clock, not in real seconds. For one request at a time: a move times out
        every wait then armed, so a second request in flight, its answer on the way, would be timed
        out with the stalled one."""
        done = threading.Event()

        def watch() -> None:
            seen = emulator.stalls
            while not done.is_set():
                now = emulator.wait_for_stalls(seen + 1, timeout=0.01)  # and look at `done`
                for number in range(seen + 1, now + 1):
                    then = functools.partial(emulator.release_stalls, number) if release else (lambda: None)
                    self.call_soon_threadsafe(self.advance, seconds, then)
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
