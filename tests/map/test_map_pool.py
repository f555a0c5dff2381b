"""The map's worker pool (`_map/_pool.py`): workers as the rows need them, up to `concurrency`."""

from __future__ import annotations

import asyncio

import pytest

from chainform._map._pool import Pool

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


async def test_a_pool_of_two_rows_starts_two_workers_whatever_its_concurrency() -> None:
    """A batch run's concurrency is 50,000: its pool must not start a task per slot."""
    tasks: list[int] = []

    async def work(row: int) -> int:
        tasks.append(len(asyncio.all_tasks()))
        return row * 10

    pool = Pool([1, 2], work, concurrency=50_000, ordered=True)
    assert [pair async for pair in pool.results()] == [(1, 10), (2, 20)]
    assert max(tasks) <= 5  # the test's, the supervisor and the two workers


async def test_rows_run_concurrency_at_a_time_and_a_failure_ends_the_run() -> None:
    running, most = 0, 0
    full = asyncio.Event()

    async def work(row: int) -> int:
        nonlocal running, most
        running += 1
        most = max(most, running)
        if running == 3:
            full.set()
        await full.wait()  # the first three rows wait for each other: three workers at once
        running -= 1
        return row

    pool = Pool(range(7), work, concurrency=3, ordered=False)
    done = await asyncio.wait_for(_collect(pool), 300)  # a bound for a hang, not a measure
    assert sorted(row for row, _ in done) == list(range(7)) and most == 3

    async def fail(row: int) -> int:
        raise RuntimeError(f"row {row}")

    with pytest.raises(RuntimeError, match="row 0"):
        await _collect(Pool(range(5), fail, concurrency=1, ordered=True))
    leftover = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert leftover == []  # the pool's workers ended with it


async def _collect(pool: Pool[int]) -> list[tuple[int, int]]:
    return [pair async for pair in pool.results()]
