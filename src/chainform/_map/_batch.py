"""`map(..., batch=True)`: every row's model calls gathered into provider batches, round by round.

A batch run is a live map run (the same Pool, rows, chains, output strategy, log and OUT.jsonl)
whose model client, instead of sending a whole request over HTTP, hands its body to `BatchRounds`
and waits. Once every unfinished row waits, their requests go out as one batch (several when the
provider's limits on requests or bytes say so): that is one round. Answers come back matched by
custom_id, each row's chain goes on (runs its tools locally) and asks again: the next round.

A row's custom_id is `<key>-<turn>-<run tag>` (a key that is not short letters, digits and
underscores is hashed; the tag is a hash of the run id): the same request has the same id in a
resumed run, and another run's requests never do. Each batch is written to the log before it is
submitted (its intent: the custom_ids) and its provider batch id right after. A resumed run polls
the stored batch of an id rather than submitting it again, so no row is ever sent twice; an intent
whose batch id never reached the log is looked for at the provider and, when found, adopted on
trial (`adopt`, the one way for a run and `map status`/`map cancel` alike; how each provider's batch
is recognised: _map/_batch_log.py): when its results name none of the run's custom_ids it was
another run's, its answers are never used, it is marked `foreign`, and its rows go into a batch of
their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import itertools
import re
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from chainform._map import MAX_WAIT
from chainform._map._batch_log import (
    ADOPTED,
    FOREIGN,
    StoredBatch,
    adopt,
    batches_of,
    record_intent,
    record_status,
)
from chainform._map._gate import is_transient
from chainform.clients._openai_batch import UNREADABLE
from chainform.errors import BatchError, ProviderError

CANCELLING = frozenset({"cancelled", "cancelling", "canceling", "canceled"})
STALL = 1.0
"""Seconds without a new row read after which a round goes without waiting for the source (a slow
stdin, rows held back by a cost cap)."""
Sender = Callable[[dict[str, Any]], Awaitable[Any]]
"""A row's way into the rounds: a whole request's body in, its answer's body out."""


@dataclass
class _Call:
    body: dict[str, Any]
    future: asyncio.Future[Any]
    attempts: int = 0


@dataclass
class RoundStats:
    """What the progress bar shows: the round, its batches' states, rows answered so far."""

    round: int = 0
    batches: dict[str, str] = field(default_factory=dict)  # provider batch id -> status
    requests: int = 0
    answered: int = 0
    created: int = 0  # batches this process created
    unknown_ids: int = 0  # result lines naming no request of their batch (or unreadable)
    duplicate_ids: int = 0  # requests the results named more than once (sent again)

    @property
    def status(self) -> str:
        states = sorted(set(self.batches.values()))
        return ",".join(states) if states else "gathering"


class BatchRounds:
    """Gathers the rows' requests into batches, submits, polls and answers them (see module doc)."""

    def __init__(
        self,
        api: Any,
        store: Any,
        run_id: str,
        retries: int,
        *,
        poll_interval: float = 5.0,
        max_wait: float = MAX_WAIT,
        capacity: int = 50_000,
        settle: float = 0.05,
        on_change: Callable[[RoundStats], None] | None = None,
    ) -> None:
        self.api = api
        self.store = store
        self.run_id = run_id
        self.retries = retries
        self.poll_interval = poll_interval
        self.max_wait = max_wait  # seconds a batch is polled before its rows fail (--batch-wait)
        self.settle = settle
        self.capacity = capacity  # rows in flight at most (the map's concurrency)
        self.read = 0  # rows read from the source
        self.ended = 0  # rows finished
        self.fed = False  # the source is exhausted
        self._seen, self._since = 0, 0.0  # rows read when last looked, and since when
        self.on_change = on_change
        self.stats = RoundStats()
        self.active = 0
        self.pending: dict[str, _Call] = {}
        self.tag = run_tag(run_id)
        stored = [b for b in batches_of(store, run_id) if b.status != FOREIGN]
        self.stored: dict[str, StoredBatch] = {cid: b for b in stored for cid in b.custom_ids}
        self.round = 0  # a resumed run replays its rounds from the first (their batches polled)
        self._flushing: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None

    @contextlib.contextmanager
    def row(self, key: str) -> Iterator[Sender]:
        """Around one row's chain: the sender its model's client sends each whole request with
        (`ProviderClient.whole_sender`); its calls are this row's turns."""
        turns = itertools.count()

        async def send(body: dict[str, Any]) -> Any:
            return await self.send(key, next(turns), body)

        self.active += 1
        try:
            yield send
        finally:
            self.active -= 1
            self.ended += 1
            self._maybe_flush()

    async def send(self, key: str, turn: int, body: dict[str, Any]) -> Any:
        """Row `key`'s request of turn `turn`: parked until its batch answers; the answer's body."""
        custom_id = f"{safe_key(key)}-{turn}-{self.tag}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[custom_id] = _Call(body, future)
        self._maybe_flush()
        return await future

    def _maybe_flush(self) -> None:
        """Start a round once every unfinished row waits (after a short settle: rows starting)."""
        if self._flushing is not None or not self.pending or len(self.pending) < self.active:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = asyncio.get_running_loop().call_later(self.settle, self._start)

    def counted(self, rows: Iterable[Any] | AsyncIterable[Any]) -> Any:
        """The map's rows, counted as read (a round waits for every row that will run in it);
        the same kind of source as given (`_pool.InMemory` stays in memory, no reader thread)."""
        from chainform._map._pool import InMemory

        if isinstance(rows, AsyncIterable):
            return self._acounted(rows)
        return InMemory(self._counted(rows)) if isinstance(rows, InMemory) else self._counted(rows)

    def _counted(self, rows: Iterable[Any]) -> Iterator[Any]:
        for row in rows:
            self.read += 1
            yield row
        self.fed = True

    async def _acounted(self, rows: AsyncIterable[Any]) -> AsyncIterator[Any]:
        async for row in rows:
            self.read += 1
            yield row
        self.fed = True

    def _start(self) -> None:
        self._timer = None
        if self._flushing is not None or not self.pending or len(self.pending) < self.active:
            return
        loop = asyncio.get_running_loop()
        if self._seen != self.read:  # rows are still coming in
            self._seen, self._since = self.read, loop.time()
        everyone = self.active >= self.capacity or (self.fed and self.read == self.ended + self.active)
        if not everyone and loop.time() - self._since < STALL:
            self._maybe_flush()  # rows read are still starting: look again shortly
            return
        calls, self.pending = self.pending, {}
        self._flushing = asyncio.ensure_future(self._round(calls))

    async def _round(self, calls: dict[str, _Call]) -> None:
        try:
            self.round += 1
            self.stats = RoundStats(
                self.round,
                created=self.stats.created,
                requests=len(calls),
                unknown_ids=self.stats.unknown_ids,
                duplicate_ids=self.stats.duplicate_ids,
            )
            groups = await self._submit(calls)
            await asyncio.gather(*(self._finish(batch, ids, calls) for batch, ids in groups))
        except Exception as exc:  # the run cannot go on (the provider refused the upload, ...)
            for call in calls.values():
                if not call.future.done():
                    call.future.set_exception(exc)
        finally:
            self._flushing = None
            self._maybe_flush()  # retried lines, and rows that asked meanwhile

    async def _submit(self, calls: dict[str, _Call]) -> list[tuple[StoredBatch, list[str]]]:
        """The batches that answer `calls`: stored ones (a resumed run) and new ones."""
        by_batch: dict[str, tuple[StoredBatch, list[str]]] = {}
        new: list[str] = []
        for custom_id in calls:
            stored = self.stored.get(custom_id)
            if stored is not None and calls[custom_id].attempts == 0:
                by_batch.setdefault(stored.id, (stored, []))[1].append(custom_id)
            else:
                new.append(custom_id)
        groups = list(by_batch.values())
        for stored, ids in groups:
            if stored.batch_id is not None:
                continue
            # killed between the intent and the provider's answer: found at the provider, else sent
            if not await self._api(functools.partial(adopt, self.store, self.api, stored)):
                await self._create(stored, ids, calls)
        for ids in self._split(new, calls):
            intent = record_intent(self.store, self.run_id, self.api.provider, self.round, ids)
            await self._create(intent, ids, calls)
            groups.append((intent, ids))
            self.stored.update(dict.fromkeys(ids, intent))
        return groups

    async def _create(self, intent: StoredBatch, ids: list[str], calls: dict[str, _Call]) -> None:
        lines = [self.api.line(custom_id, calls[custom_id].body) for custom_id in ids]
        # a retry after a 429 or a 5xx may follow a create that did happen: it is found by its intent
        # on --resume like any other, and this run's results name its custom_ids once either way
        intent.batch_id = await self._api(lambda: self.api.submit(lines, intent.id))
        intent.status = "submitted"
        record_status(self.store, intent)
        self.stats.created += 1

    def _split(self, ids: list[str], calls: dict[str, _Call]) -> Iterator[list[str]]:
        """`ids` cut into batches within the provider's limits on requests and bytes."""
        chunk: list[str] = []
        size = 0
        for custom_id in ids:
            length = len(self.api.line(custom_id, calls[custom_id].body))
            if chunk and (len(chunk) >= self.api.max_requests or size + length > self.api.max_bytes):
                yield chunk
                chunk, size = [], 0
            chunk.append(custom_id)
            size += length
        if chunk:
            yield chunk

    async def _finish(self, batch: StoredBatch, ids: list[str], calls: dict[str, _Call]) -> None:
        """Poll `batch` to its end, then answer, retry or fail each of its calls."""
        batch_id = batch.batch_id
        assert batch_id is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.max_wait
        watched = False  # this process saw it in progress (a cancel after that is the user's)
        cancelled = False
        while True:
            try:
                state = await self._api(lambda: self.api.poll(batch_id))
            except BatchError as exc:  # a batch id the provider no longer knows: sent again
                for custom_id in ids:
                    self._retry(custom_id, calls[custom_id], exc)
                return
            if state.status != self.stats.batches.get(batch_id):
                self.stats.batches[batch_id] = state.status
                if batch.status != ADOPTED:  # on trial, the log keeps it so until its results are read
                    batch.status = state.status
                    record_status(self.store, batch)
                self._changed()
            cancelled = cancelled or state.status in CANCELLING
            if state.ended:
                break
            watched = watched or not cancelled
            if loop.time() >= deadline:
                self._fail(
                    ids,
                    calls,
                    f"batch {batch_id} had not ended after --batch-wait {self.max_wait:g} s "
                    "(it goes on at the provider: --resume polls it again)",
                    "timeout",
                )
                return
            await asyncio.sleep(self.poll_interval)
        results = await self._api(lambda: self.api.results(state))
        if watched and (cancelled or any(line.cancelled for line in results)):
            self._fail(
                ids, calls, f"batch {batch_id} was cancelled (`map cancel`): --resume sends its rows again"
            )
            return
        self._answer(batch, ids, calls, results, state)

    def _answer(
        self, batch: StoredBatch, ids: list[str], calls: dict[str, _Call], results: list[Any], state: Any
    ) -> None:
        """Each call of `ids` answered from `results`, retried (errored, missing, named twice with
        different answers) or failed past its retries; an adopted batch's trial first."""
        seen: dict[str, list[Any]] = {}
        for line in results:
            seen.setdefault(line.custom_id, []).append(line)
        if batch.status == ADOPTED:  # found by its intent: its results must name these ids
            named = seen.keys() - {UNREADABLE}
            if named and named.isdisjoint(ids):  # another run's batch
                self._disown(batch, ids, calls)
                return
            batch.status = state.status
            record_status(self.store, batch)
        why = "; ".join(state.errors) or f"the batch ended {state.status}"
        self.stats.unknown_ids += sum(len(v) for k, v in seen.items() if k not in ids)
        for custom_id in ids:
            found = seen.get(custom_id, [])
            call = calls[custom_id]
            if len(found) > 1:
                self.stats.duplicate_ids += 1
                message = (
                    f"the results name {custom_id} {len(found)} times: which answer is its own is unknown"
                )
                self._retry(custom_id, call, BatchError(message, provider=self.api.provider, kind="server"))
            elif found and found[0].error is None:
                call.future.set_result(found[0].body)
            else:
                error = found[0].error if found else None
                self._retry(custom_id, call, error or BatchError(f"no result for {custom_id}: {why}"))
            self.stats.answered += 1
        self._changed()

    def _fail(self, ids: list[str], calls: dict[str, _Call], message: str, kind: Any = None) -> None:
        """The calls of `ids` end as row errors, not sent again in this run."""
        for custom_id in ids:
            error = BatchError(message, provider=self.api.provider, kind=kind)
            calls[custom_id].future.set_exception(error)

    async def _api(self, call: Callable[[], Awaitable[Any]]) -> Any:
        """One request to the batch API, retried `retries` times after a transient failure (a 429,
        a 5xx, a timeout, a dropped connection: waiting Retry-After, else backing off)."""
        attempt = 0
        while True:
            try:
                return await call()
            except BatchError:
                raise
            except ProviderError as exc:
                if not is_transient(exc) or attempt >= self.retries:
                    raise
                wait = exc.retry_after if exc.retry_after is not None else min(0.5 * 2.0**attempt, 30.0)
                await asyncio.sleep(wait)
                attempt += 1

    def _disown(self, batch: StoredBatch, ids: list[str], calls: dict[str, _Call]) -> None:
        """`batch` carries none of `ids`: logged as foreign (never adopted again, its answers never
        used) and the calls go into a new batch of their own, not counted as a retry."""
        batch.status = FOREIGN
        record_status(self.store, batch)
        for custom_id in ids:
            self.stored.pop(custom_id, None)
            self.pending[custom_id] = calls[custom_id]

    def _retry(self, custom_id: str, call: _Call, error: ProviderError) -> None:
        """An errored, expired or missing line: into the next batch, or a row error past `retries`."""
        if call.attempts < self.retries:
            call.attempts += 1
            self.pending[custom_id] = call
            return
        message = f"{error.provider_message} (after {call.attempts + 1} batch attempt(s))"
        call.future.set_exception(
            BatchError(message, status=error.status, provider=self.api.provider, kind=error.kind)
        )

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change(self.stats)


def safe_key(key: str) -> str:
    """A row key as providers take it in a custom_id (Anthropic: `[A-Za-z0-9_-]{1,64}`): itself
    when it is short letters, digits and underscores, else a hash of it (the same in every run)."""
    if _SAFE.fullmatch(key):
        return key
    return "k" + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:40]


_SAFE = re.compile(r"[A-Za-z0-9_]{1,48}")


def run_tag(run_id: str) -> str:
    """What ends each custom_id of run `run_id`: 10 hex digits of its hash (the same on resume)."""
    return hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).hexdigest()[:10]


__all__ = ["MAX_WAIT", "BatchRounds", "RoundStats", "Sender", "run_tag"]
