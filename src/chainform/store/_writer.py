"""One writer thread per log: commits happen off the event loop, in batches.

A chain hands its records to the writer and goes on; it awaits the futures only before it returns,
so a chain still returns after its rows are committed. Many chains in one process (model.map, an
asyncio.gather of chains) share one thread and one connection: whatever is queued when the
writer wakes is committed in ONE transaction (group commit), so chains never wait on each other's
fsyncs. A batch that fails is retried record by record: one bad record never takes others with it.
The thread ends after a second without work and starts again on the next write, so an idle
process (or a test suite opening many logs) holds no thread.

Copying the WAL back into the database (a checkpoint, with its fsyncs) is the costliest part of
writing: SQLite runs it inside whichever commit crosses the WAL's size, a stall of tens of ms
that the chain committing then (and every chain queued behind it) waits out. A Checkpointer runs
it instead on its own thread and connection, every few commits, in PASSIVE mode: it never waits
for a writer nor blocks one, so no chain waits on it. SQLite's own checkpoint stays on, at a
larger size, as the bound on the WAL should the Checkpointer never finish under constant writes.
"""

from __future__ import annotations

import os
import queue
import sqlite3
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from chainform.store._records import StoreError

Job = Callable[[Any], Any]  # runs inside the write transaction, gets the sqlite3 connection
RunBatch = Callable[[Callable[[Any], list[Any]]], list[Any]]  # runs a function in one transaction

_MAX_BATCH = 256
_IDLE_S = 1.0
CHECKPOINT_EVERY = 32  # commits (a chain's rows are one commit: about 20 WAL pages)
AUTOCHECKPOINT_PAGES = 10_000  # SQLite's own, the bound (its default is 1000)


def weakly(method: RunBatch) -> RunBatch:
    """`method` (its owner's bound `_write`) without a reference back to the owner: the writer is
    the owner's, so a bound method would make a cycle, and a dropped model's log (its connection
    and all) would wait for the garbage collector. A job run after the owner is gone fails."""
    ref = weakref.WeakMethod(method)

    def run(batch: Callable[[Any], list[Any]]) -> list[Any]:
        live = ref()
        if live is None:
            raise StoreError("the log was dropped before this write ran")
        return live(batch)

    return run


class Writer:
    """A daemon thread that runs write jobs in order, batching whatever is queued together."""

    def __init__(self, run_batch: RunBatch, name: str) -> None:
        self._run_batch = run_batch
        self._name = name
        self._queue: queue.SimpleQueue[tuple[Job, Future[Any]]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()

    def submit(self, job: Job) -> Future[Any]:
        """Queue `job`; its future resolves with the job's result once the transaction committed."""
        future: Future[Any] = Future()
        with self._lock:
            if self._pid != os.getpid():  # threads do not survive fork(): start afresh in the child
                self._queue, self._thread, self._pid = queue.SimpleQueue(), None, os.getpid()
            self._queue.put((job, future))
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
                self._thread.start()
        return future

    def flush(self) -> None:
        """Wait until everything queued before this call is committed."""
        with self._lock:
            if self._thread is None and self._queue.empty():  # idle: nothing to wait for
                return
        self.submit(lambda db: None).result()

    def _next(self) -> tuple[Job, Future[Any]] | None:
        try:
            return self._queue.get(timeout=_IDLE_S)
        except queue.Empty:
            with self._lock:
                if self._queue.empty():
                    self._thread = None
                    return None
            return self._queue.get()

    def _loop(self) -> None:
        while (item := self._next()) is not None:
            batch = [item]
            while len(batch) < _MAX_BATCH:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            self._commit(batch)

    def _commit(self, batch: list[tuple[Job, Future[Any]]]) -> None:
        live = [(job, fut) for job, fut in batch if fut.set_running_or_notify_cancel()]
        if not live:
            return
        try:
            results = self._run_batch(lambda db: [job(db) for job, _ in live])
        except BaseException:
            if len(live) == 1:
                self._one(*live[0])
                return
            for job, future in live:
                self._one(job, future)
            return
        for (_, future), result in zip(live, results, strict=True):
            future.set_result(result)

    def _one(self, job: Job, future: Future[Any]) -> None:
        try:
            result = self._run_batch(lambda db: [job(db)])[0]
        except BaseException as exc:
            future.set_exception(exc)
        else:
            future.set_result(result)


class Checkpointer:
    """PASSIVE checkpoints of the log at `path` on a thread and connection of their own."""

    def __init__(self, path: Path, timeout_s: float) -> None:
        self._path = path
        self._timeout_s = timeout_s
        self._db: sqlite3.Connection | None = None
        self._pid = 0
        self._commits = 0
        self._running = False
        self._writer = Writer(lambda run: run(None), name=f"chainform-log-checkpoint {path.name}")

    def committed(self) -> None:
        """Count a commit; every CHECKPOINT_EVERY commits start a checkpoint unless one runs."""
        self._commits += 1
        if self._commits >= CHECKPOINT_EVERY and not self._running:
            self._commits, self._running = 0, True
            self._writer.submit(self._checkpoint)

    def _checkpoint(self, _: object) -> None:
        try:
            if self._db is None or self._pid != os.getpid():
                self._db = sqlite3.connect(
                    self._path, timeout=self._timeout_s, isolation_level=None, check_same_thread=False
                )
                self._pid = os.getpid()
            self._db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error:
            pass  # best effort: the next one (or SQLite's own) catches up
        finally:
            self._running = False

    def close(self) -> None:
        """Wait for a running checkpoint, then close its connection."""
        self._writer.flush()
        if self._db is not None and self._pid == os.getpid():
            self._db.close()
        self._db = None
