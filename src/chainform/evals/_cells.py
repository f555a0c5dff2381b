"""The map runs of an eval, each committed row by row to a JSONL file (the map's own commit record):
`--resume` skips every key already there, so each row is sent once even after a kill -9, and goes
on with the chain of a row killed halfway from the log (`amap(resume=True)`): its logged calls are
not sent again, its logged tool results not run again.

All the runs of one step (the cells, then the judge's) go at once on one event loop and share one
limit of rows in flight: a row is handed to its run only when a slot is free, and the slot is given
back when its result is committed, so `concurrency` bounds the whole eval, not each cell."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KEY = "_chainform_eval_key"
"""The field each row gives the map to key it by: the row's key in the data, whatever rows a resume skips."""


@dataclass
class MapJob:
    """One map run: `items` ((key, fields) pairs) on `model` into `path`, with `options` for the map;
    `on_start(done_keys)` hears of the run before its first row, `on_line(line)` of each row committed."""

    model: Any
    path: Path
    items: Sequence[tuple[str, dict[str, Any]]]
    options: dict[str, Any] = field(default_factory=dict)
    on_start: Callable[[set[str]], None] | None = None
    on_line: Callable[[dict[str, Any]], None] | None = None


def run_maps(
    jobs: Sequence[MapJob], *, concurrency: int, resume: bool, retry_failed: bool = False, budget: Any = None
) -> list[str]:
    """Run every job at once, at most `concurrency` rows in flight over all of them; the run ids.

    A row that failed stays failed on resume (it is a result of the eval, not a row still to do)
    unless `retry_failed`: then its line goes and it runs again. Ctrl-C stops every run; what was
    committed stays. Under a cost cap (`budget`) the runs go one after another: a map run waits for
    its own rows in flight to settle what the cap leaves, so runs sharing a cap cannot overlap."""
    if budget is not None and len(jobs) > 1:
        return [run_maps([job], concurrency=concurrency, resume=resume, retry_failed=retry_failed,
                         budget=budget)[0] for job in jobs]  # fmt: skip
    from chainform import _sync

    stop = _Stop()
    future = _sync.submit(stop.guard(_run_all(jobs, concurrency, resume, retry_failed, budget)))
    try:
        ids: list[str] = future.result()
        return ids
    except BaseException:
        stop.cancel(future)  # the runs stop, and close their files, before this returns
        raise


class _Stop:
    """Cancel a run on the background loop from this thread and wait until it has unwound (its
    files closed); one that never started is told not to."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.started = self.cancelled = False
        self.finished = threading.Event()

    async def guard(self, work: Any) -> Any:
        with self.lock:
            if self.cancelled:
                work.close()
                raise asyncio.CancelledError
            self.started = True
        try:
            return await work
        finally:
            self.finished.set()

    def cancel(self, future: Any) -> None:
        with self.lock:
            self.cancelled = True
            started = self.started
        future.cancel()
        if started:
            self.finished.wait()


async def _run_all(
    jobs: Sequence[MapJob], concurrency: int, resume: bool, retry_failed: bool, budget: Any
) -> list[str]:
    slots = asyncio.Semaphore(concurrency)
    tasks = [
        asyncio.ensure_future(_run_one(job, slots, concurrency, resume, retry_failed, budget)) for job in jobs
    ]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:  # one run failed, or all are cancelled: none goes on alone
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def _run_one(
    job: MapJob, slots: asyncio.Semaphore, concurrency: int, resume: bool, retry_failed: bool, budget: Any
) -> str:
    from chainform._map._batch_log import record_run, run_of
    from chainform._map._jsonl import JsonlSink, line_for
    from chainform.map import amap
    from chainform.store import new_id

    sink = JsonlSink(job.path, "run the eval again with --resume (`evaluate(..., resume=True)`)")
    sink.prepare(resume=resume, retry_errors=retry_failed)
    model = _async(job.model)
    store = model._open_store() if job.options.get("log", True) else None
    output = str(job.path.resolve())
    run_id = sink.run_id or (run_of(store, output) if store is not None and resume else None) or new_id()
    if store is not None:  # a resume finds the run, and its rows' chains, before the file holds a row
        record_run(store, output, run_id)
    todo = [{**fields, KEY: key} for key, fields in job.items if key not in sink.done]
    if job.on_start is not None:
        job.on_start(set(sink.done))
    held = 0  # slots taken for this run's rows and not yet given back

    async def source() -> AsyncIterator[dict[str, Any]]:
        nonlocal held
        for row in todo:
            await slots.acquire()
            held += 1
            yield row

    options = dict(job.options)
    if budget is not None:
        options["max_cost"] = budget
    if resume and store is not None:  # each row's chain that did not end goes on from the log
        options["resume"] = True
    try:
        if todo:
            results = amap(model, source(), id_field=KEY, run_id=run_id, concurrency=concurrency, **options)
            async with aclosing(results) as running:
                async for result in running:
                    line = line_for(result, run_id, {})
                    sink.commit(line)
                    if job.on_line is not None:
                        job.on_line(line)
                    held -= 1
                    slots.release()
    finally:
        for _ in range(held):  # rows taken but never run (a cost cap ended the run)
            slots.release()
        sink.close()
    return run_id


def _async(model: Any) -> Any:
    """The model the map runs rows on: an AsyncModel as it is, a Model's async twin (as `map` does)."""
    from chainform.models import AsyncModel

    return model if isinstance(model, AsyncModel) else model._twin()


def read_lines(path: Path) -> dict[str, dict[str, Any]]:
    """The committed lines of a run, by key."""
    out: dict[str, dict[str, Any]] = {}
    if path.is_file():
        with open(path, encoding="utf-8") as handle:
            for raw in handle:
                if raw.strip():
                    line = json.loads(raw)
                    out[str(line["_map"]["key"])] = line
    return out


__all__ = ["KEY", "MapJob", "read_lines", "run_maps"]
