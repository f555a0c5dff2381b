"""The worker pool behind `model.amap`: a bounded window of rows in flight, results as they finish.

Memory is bounded by the window (rows read but not yet handed to the caller), never by the
number of inputs: the reader waits for a free slot before it reads the next row, and a slot is
freed only when the caller has taken a result. With `ordered=True` the window also bounds how
far finished rows may run ahead of a slow one.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Generic, TypeVar

from chainform._map._inputs import Row

T = TypeVar("T")
_END = object()


class _Failed:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


class Pool(Generic[T]):
    """Run `work(row)` for every row with `concurrency` workers; iterate for the results."""

    def __init__(
        self,
        source: Iterable[Row] | AsyncIterable[Row],
        work: Callable[[Row], Awaitable[T]],
        *,
        concurrency: int,
        ordered: bool,
        window: int | None = None,
        admit: Callable[[], Awaitable[bool]] | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.source = source
        self.work = work
        self.concurrency = concurrency
        self.ordered = ordered
        self.window = window or concurrency * 2
        self.admit = admit  # asked before each row starts; False ends the run (a cost cap)

    async def results(self) -> AsyncIterator[tuple[Row, T]]:
        slots = asyncio.Semaphore(self.window)
        idle = asyncio.Semaphore(self.concurrency)  # workers free to start a row now
        todo: asyncio.Queue[tuple[int, Row] | None] = asyncio.Queue(self.concurrency)
        done: asyncio.Queue[Any] = asyncio.Queue()
        # started one per row until there are `concurrency`: a run of 2 rows has 2 workers, not
        # one per slot (a batch run's default concurrency is 50,000)
        workers: list[asyncio.Future[None]] = []

        async def feed() -> None:
            seq = 0
            async for row in _aiter(self.source, self.concurrency):
                await slots.acquire()
                # a row is admitted only when a worker will start it at once: never more rows
                # approved (a cost cap's in-flight estimate) than `concurrency`
                await idle.acquire()
                if self.admit is not None and not await self.admit():
                    break
                if len(workers) < self.concurrency:
                    workers.append(asyncio.ensure_future(worker()))
                await todo.put((seq, row))
                seq += 1
            for _ in workers:
                await todo.put(None)

        async def worker() -> None:
            try:
                while (item := await todo.get()) is not None:
                    seq, row = item
                    result = await self.work(row)
                    idle.release()
                    done.put_nowait((seq, row, result))
            except Exception as exc:  # reported at once, while the feed may still wait for a worker
                done.put_nowait(_Failed(exc))

        async def supervise() -> None:
            try:
                await feed()
                await asyncio.gather(*workers)
            except Exception as exc:
                done.put_nowait(_Failed(exc))
            else:
                done.put_nowait(_END)
            finally:
                for started in workers:
                    started.cancel()
                await asyncio.gather(*workers, return_exceptions=True)

        task = asyncio.ensure_future(supervise())
        waiting: dict[int, tuple[Row, T]] = {}
        next_seq = 0
        try:
            while (item := await done.get()) is not _END:
                if isinstance(item, _Failed):
                    raise item.exc
                seq, row, result = item
                if not self.ordered:
                    slots.release()
                    yield row, result
                    continue
                waiting[seq] = (row, result)
                while next_seq in waiting:
                    slots.release()
                    yield waiting.pop(next_seq)
                    next_seq += 1
        finally:
            task.cancel()
            with contextlib.suppress(BaseException):
                await task


class InMemory(Generic[T]):
    """Rows made from inputs already in memory (a list): read on the loop, no helper thread."""

    def __init__(self, rows: Iterable[T]) -> None:
        self.rows = rows

    def __iter__(self) -> Iterator[T]:
        return iter(self.rows)


async def _aiter(source: Iterable[Row] | AsyncIterable[Row], batch: int) -> AsyncIterator[Row]:
    """Rows from any iterable; a sync one that may block (a file, stdin, a generator of the
    caller's) is read on one helper thread, `batch` rows a hop.

    Reading must not block the event loop the workers' requests run on; one dedicated thread
    keeps a generator on the same thread for its whole life.
    """
    if isinstance(source, AsyncIterable):
        async for row in source:
            yield row
        return
    if isinstance(source, InMemory | list | tuple):
        for row in source:
            yield row
        return
    iterator: Iterator[Row] = iter(source)
    loop = asyncio.get_running_loop()
    reader = ThreadPoolExecutor(1, thread_name_prefix="chainform-map-reader")
    try:
        while items := await loop.run_in_executor(reader, _take, iterator, batch):
            for item in items:
                yield item
    finally:
        reader.shutdown(wait=False)  # a read blocked on stdin must not hold up Ctrl-C


def _take(iterator: Iterator[Row], count: int) -> list[Row]:
    return list(itertools.islice(iterator, count))
