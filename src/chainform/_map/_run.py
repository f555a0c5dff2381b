"""One map run: a chain per row through the public async chain API, on a gated copy of the model.

Rows are run with `AsyncModel.chain` (not engine internals), so the engine can change beneath.
When logging is on, each row's conversation is named `map <run id> <key>` in the log, which ties
every logged call back to the row (and run) that made it. The name is given to the row's chain
(`conversation_name=`) and written with the chain's row when it starts, then with each of its
calls: when the chain returns, its calls and its name are both in the log. A resumed run
(`resume=True`) finds each row's chain by that name and goes on with it from the log
(chain/_resume.py) instead of asking the row again.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncGenerator, AsyncIterable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from chainform import _trace
from chainform._map._gate import GatedClient, GateStats, RateGate
from chainform._map._inputs import Row
from chainform._map._pool import Pool
from chainform._map._results import MapResult, RowError
from chainform.chain._approval import ChainWaitingError
from chainform.chain._resume import Ready
from chainform.chain._resume import ready as resume_ready
from chainform.chain._tools import normalize_tools
from chainform.errors import BatchError, ChainInterruptedError
from chainform.output import OutputSpec
from chainform.pricing import PRICES, Budget
from chainform.pricing._table import ZERO
from chainform.types import ConversionLimits, UsageDetails
from chainform.types._options import ChatOptions, as_options

if TYPE_CHECKING:
    from chainform._map._batch import Sender


def _new_id() -> str:
    from chainform.store import new_id

    return new_id()


def _cached(chain_options: dict[str, Any], run_id: str) -> ChatOptions:
    """The rows' options: every row repeats the prompt's prefix, so caching is asked for (unless the
    caller said otherwise) under one key for the whole run (clients/_wire.py `openai_key`)."""
    options = as_options(chain_options.get("options"))
    if options.cache is None:
        options = options.replace(cache=True)
    if options.cache_key is None:
        options = options.replace(cache_key=f"chainform-map-{run_id}")
    return options


class MapModel(Protocol):
    """What a map run needs of an AsyncModel: its client and log, a copy of itself on another
    client (the rate-gated one), `chain`, and `_resumed` (a logged chain going on)."""

    client: Any
    name: str
    _store: Any
    refusals: Any  # what its chains learnt at run time, shared by the rows

    def _twin(self, client: Any = None) -> MapModel: ...

    def _open_store(self) -> Any: ...

    def chain(self, *args: Any, **kwargs: Any) -> Any: ...

    def _resumed(self, ready: Ready, *, conversation_name: str | None = None) -> Any: ...


class SyncMapModel(Protocol):
    """What `Model.map` needs of a Model: its async twin, on which `amap` runs."""

    def _twin(self, client: Any = None) -> MapModel: ...


class MapRun:
    """The settings of one run and the work done per row."""

    def __init__(
        self,
        model: MapModel,
        *,
        prompt: str | None,
        system: str | None,
        tools: Sequence[Any] | None,
        schema: Any,
        requests_per_minute: float | None,
        tokens_per_minute: float | None,
        retries: int,
        on_error: str,
        log: bool,
        run_id: str | None,
        chain_options: dict[str, Any],
        attach: str | None = None,
        attach_base: Path | None = None,
        attach_limits: ConversionLimits | None = None,
        budget: Budget | None = None,
        batch: bool = False,
        on_batch: Any = None,
        batch_poll: float = 5.0,
        batch_wait: float | None = None,
        resume: bool = False,
    ) -> None:
        self.model = model
        if resume and not (log and run_id):
            raise ValueError("resume=True goes on with a logged run: give its run_id (and log=True)")
        self.resume = resume
        self.logged: dict[str, tuple[str, str]] = {}  # a resumed run's rows' chains: key -> (id, status)
        self.batch = batch
        self.batch_poll = batch_poll
        self.batch_wait = batch_wait  # None: _batch.MAX_WAIT
        if not (math.isfinite(batch_poll) and batch_poll >= 0):
            raise ValueError(f"batch_poll must be a finite number of seconds, 0 or more, not {batch_poll!r}")
        if batch_wait is not None and not (math.isfinite(batch_wait) and batch_wait > 0):
            raise ValueError(f"batch_wait must be a finite number of seconds above 0, not {batch_wait!r}")
        self.on_batch = on_batch  # called with RoundStats as a batch run's batches move
        self.rounds: Any = None  # BatchRounds, in a batch run (_map/_batch.py)
        self._own_store: Any = None
        self.budget = budget
        if budget is not None:  # an unknown price refuses the cap before any row
            budget.check_rate(PRICES.rate(model.name))
            budget.growing = batch
        self._row_ended: asyncio.Event | None = None
        self.template = prompt
        self.system = system
        # resolved once for the whole run, not once a row (a pydantic model's JSON Schema, tools'
        # descriptions); a bad schema fails here, before any row runs
        self.tools = normalize_tools(tools) or None
        self.schema = OutputSpec.from_user(schema) if schema is not None else None
        self.limits = (requests_per_minute, tokens_per_minute)
        self.retries = retries
        self.on_error = on_error
        self.log = log
        self.run_id = run_id or _new_id()
        self.attach = (attach, attach_base, attach_limits)  # the field whose paths/URLs each row attaches
        # Nobody watches a map row's text arrive: a whole response costs the SDK less than a stream.
        self.chain_options = {
            "stream": False,
            **chain_options,
            "options": _cached(chain_options, self.run_id),
        }
        self.stats = GateStats()
        self._gated: MapModel | None = None
        self.trace: Any = None  # the run's span, when tracing is on (chainform/_trace.py)

    def _gated_model(self) -> MapModel:
        """The model on a GatedClient; built inside the run's loop (the limiters belong to it)."""
        if self._gated is None:
            gate = RateGate(*self.limits)
            self.stats = gate.stats
            client = GatedClient(self._client(), gate, 0 if self.batch else self.retries)
            gated = self.model._twin(client)
            gated._store = self.model._store
            self._gated = gated
        return self._gated

    def _row_model(self, send: Sender | None = None) -> tuple[MapModel, GatedClient | None]:
        """The run's gated model on a gate client of the row's own (same inner client, same gate),
        which counts the row's transport retries; in a batch run, on a copy of the inner client
        whose whole requests go to the rounds through the row's `send`."""
        shared = self._gated_model()
        if not isinstance(shared.client, GatedClient) or (self.batch and send is None):
            return shared, None
        import copy

        client = copy.copy(shared.client)
        client.retried = 0
        if send is not None:
            client.inner = copy.copy(client.inner)
            client.inner.whole_sender = send  # type: ignore[attr-defined]
        model = shared._twin(client)
        model._store = shared._store
        model.refusals = shared.refusals
        return model, client

    def _client(self) -> Any:
        """The model's client; in a batch run a copy whose whole requests go to `BatchRounds`."""
        if not self.batch:
            return self.model.client
        import copy

        from chainform._map._batch import MAX_WAIT, BatchRounds
        from chainform.store import Store

        api = batch_api(self.model.client)
        store = self.model._store
        if store is None:  # the batches are logged even when the rows' chains are not
            store = self._own_store = Store()
        self.rounds = BatchRounds(
            api,
            store,
            self.run_id,
            self.retries,
            poll_interval=self.batch_poll,
            max_wait=self.batch_wait if self.batch_wait is not None else MAX_WAIT,
            on_change=self.on_batch,
        )
        return copy.copy(self.model.client)  # each row's copy of it gets the row's sender (`_row_model`)

    async def results(
        self, source: Iterable[Row] | AsyncIterable[Row], *, concurrency: int, ordered: bool
    ) -> AsyncGenerator[MapResult, None]:
        if not (self.log or self.batch):  # nothing of the run is kept: no other writer to fear
            async for result in self._results(source, concurrency=concurrency, ordered=ordered):
                yield result
            return
        from chainform._map._lock import holding

        with holding("run", self.run_id, f"map run {self.run_id}"):  # one writer per run
            async for result in self._results(source, concurrency=concurrency, ordered=ordered):
                yield result

    async def _results(
        self, source: Iterable[Row] | AsyncIterable[Row], *, concurrency: int, ordered: bool
    ) -> AsyncGenerator[MapResult, None]:
        if self.resume:
            self._logged_chains()
        self._gated_model()
        hooks = _trace.hooks
        self.trace = hooks.map_run(getattr(self.model, "name", "model"), self.run_id) if hooks else None
        admit = self._admit if self.budget is not None else None
        if self.rounds is not None:  # a batch run: a round waits for every row that will join it
            self.rounds.capacity = concurrency
            source = self.rounds.counted(source)
        pool = Pool(source, self.run_row, concurrency=concurrency, ordered=ordered, admit=admit)
        failed: BaseException | None = None
        try:
            async for _row, result in pool.results():
                yield result
        except Exception as exc:
            failed = exc
            raise
        finally:
            if hooks is not None:
                hooks.map_done(self.trace, failed)
            if self._own_store is not None:
                self._own_store.close()

    def _logged_chains(self) -> None:
        """A resumed run's rows' chains, from the log (their conversations are named by the row)."""
        store = self.model._open_store()
        if store is not None:
            self.logged = store.named_chains(f"map {self.run_id} ")

    async def _admit(self) -> bool:
        """Whether the next row may start under the cost cap (waits while rows in flight decide)."""
        assert self.budget is not None
        while (verdict := self.budget.room()) == "wait":
            self._row_ended = self._row_ended or asyncio.Event()
            self._row_ended.clear()
            await self._row_ended.wait()
        if verdict == "go":
            self.budget.start()
        return verdict == "go"

    async def run_row(self, row: Row) -> MapResult:
        if self.rounds is None:
            return await self._budgeted(row)
        with self.rounds.row(row.key) as send:  # a batch run: the row's calls are its turns in the rounds
            return await self._budgeted(row, send)

    async def _budgeted(self, row: Row, send: Sender | None = None) -> MapResult:
        if self.budget is None:
            return await self._run_row(row, send)
        result = None
        try:
            result = await self._run_row(row, send)
            return result
        finally:
            self.budget.finish(result.usage if result is not None else UsageDetails(cost=ZERO))
            if self._row_ended is not None:
                self._row_ended.set()

    async def _run_row(self, row: Row, send: Sender | None = None) -> MapResult:
        result = MapResult(row.index, row.key, row.data)
        if row.error is not None:
            result.error = RowError.of(row.error)
            return self._settle(result)
        model, gated = self._row_model(send)
        logged = self.logged.pop(row.key, None)
        go_on = logged is not None and logged[1] != "failed"  # a failed chain: the row is asked again
        ready: Ready | None = None
        response = None
        cid = _new_id()
        name = f"map {self.run_id} {row.key}"
        try:
            if go_on:
                assert logged is not None
                ready = resume_ready(model._store, logged[0], self.tools or (), None, self.schema)
                cid = ready.row.conversation_id
            with _trace.map_row(self.trace, row.key):
                if ready is not None:  # the row's chain goes on from its log: nothing logged is redone
                    response = model._resumed(ready, conversation_name=name)
                else:
                    response = model.chain(
                        row.prompt(self.template),
                        attachments=row.attachments(*self.attach) or None,
                        system=self.system,
                        tools=self.tools,
                        schema=self.schema,
                        log=self.log,
                        conversation_id=cid,
                        conversation_name=name,
                        **self.chain_options,
                    )
                done = (await response)._finished()  # one wait; the rest is read from the result
            if done.status == "waiting":  # the row's tool calls wait for approval: not failed
                raise ChainWaitingError(done.chain_id, done.pending)
            result.text = done.text
            if self.schema is not None:
                result.value, result.data = done.value, done.data
        except asyncio.CancelledError:  # the map stops (Ctrl-C): so does the row's chain, interrupted
            if response is not None:
                await response.acancel()
            raise  # the row is not written: a resume goes on with its chain
        except ChainInterruptedError:
            raise  # a tool's KeyboardInterrupt stops the map: this row is not written, a resume runs it
        except Exception as exc:
            result.error = RowError.of(exc)
        if gated is not None:
            result.retried = gated.retried
        if response is not None:
            result.usage = response.usage
            calls = response.responses
            result.conversation_id = cid if calls else None
            result.model = calls[-1].model if calls else None
        return self._settle(result)

    def _settle(self, result: MapResult) -> MapResult:
        if result.error is not None and self.on_error == "raise":
            exc = result.error.exception
            raise exc if exc is not None else RuntimeError(result.error.message)
        return result


def batch_api(client: Any) -> Any:
    """The batch API of a model's client, or BatchError naming the providers that have one."""
    make = getattr(client, "batch_api", None)
    api = make() if make is not None else None
    if api is None:
        raise BatchError(
            f"{getattr(client, 'provider', type(client).__name__)} has no batch API that chainform "
            f"drives; batch runs work with: {', '.join(BATCH_PROVIDERS)}"
        )
    return api


BATCH_PROVIDERS = ("openai (chat completions and responses)", "anthropic", "gemini")


__all__ = ["BATCH_PROVIDERS", "MapModel", "MapRun", "SyncMapModel", "batch_api"]
