"""`amap` and its sync twin `map_sync` (`AsyncModel.amap` / `Model.map`): rows in, MapResults out.

This layer sits below `models`: it never imports the model classes. It runs rows on the model it
is given, through the little it needs of one (`_run.MapModel`); `Model.map` and `AsyncModel.amap` are
these functions.
"""

from __future__ import annotations

import asyncio
import functools
import warnings
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
    Sequence,
)
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, Literal, ParamSpec

from chainform import _sync
from chainform._bounds import MAX_CONCURRENCY, check_count
from chainform._map._inputs import Row, check_template, check_unique_ids, rows
from chainform._map._results import MapResult
from chainform.pricing import Budget

if TYPE_CHECKING:
    from chainform._map._run import MapModel, SyncMapModel
    from chainform.types import ConversionLimits

OnError = Literal["record", "raise"]
BATCH_ROWS = 50_000
"""Rows in flight in a batch run unless `concurrency` says otherwise: the rows of one round."""
P = ParamSpec("P")


def amap(
    model: MapModel,
    /,
    inputs: Iterable[Any] | AsyncIterable[Any],
    *,
    prompt: str | None = None,
    system: str | None = None,
    tools: Sequence[Any] | None = None,
    schema: Any = None,
    concurrency: int | None = None,
    requests_per_minute: float | None = None,
    tokens_per_minute: float | None = None,
    transport_retries: int | None = None,
    on_error: OnError = "record",
    log: bool = True,
    ordered: bool = False,
    id_field: str | None = None,
    run_id: str | None = None,
    attach: str | None = None,
    attach_base: str | Path | None = None,
    attach_limits: ConversionLimits | None = None,
    max_cost: float | str | Decimal | Budget | None = None,
    batch: bool = False,
    on_batch: Callable[[Any], None] | None = None,
    batch_poll: float = 5.0,
    batch_wait: float | None = None,
    retries: int | None = None,
    resume: bool = False,
    **chain_options: Any,
) -> AsyncGenerator[MapResult, None]:
    """Run a chain for every input and yield a MapResult per row as it finishes.

    `inputs`: str prompts, or dicts that fill `prompt` (a template such as "Extract: {text}";
    a broken one raises MapInputError at once, before any row).
    They are read lazily; memory does not grow with their number. `concurrency` workers (8; a
    batch run: 50,000, the rows of one round; given, 1 to `MAX_CONCURRENCY`, else
    ArgumentRangeError before any row) share
    `requests_per_minute` / `tokens_per_minute`; a 429 pauses them all for its Retry-After.
    `transport_retries` (2): re-tries of one model call after a transient failure (429, 5xx, timeout,
    dropped connection; `retries` is its old, deprecated name; re-asks after output that fails
    validation are the chain's `validation_retries`). `on_error="record"` puts a typed `RowError` on the row; "raise" stops the run.
    `ordered=True` yields in input order. `id_field` keys rows by a field (else by position; a
    list with one id twice raises MapInputError before any row, a lazy source fails the repeat);
    `attach` names a field of path(s) or URL(s) (comma-separated) each row attaches, paths taken
    relative to `attach_base`, converted to text (for a model that cannot read them) within
    `attach_limits` (`ConversionLimits()` when None; a row over a limit is that row's error); `max_cost` (USD, or a `Budget` to read afterwards) stops starting
    rows once what was spent plus the estimate of the rows in flight reaches it (PricingError at
    once when the price is unknown); `batch=True` sends the rows' calls through the provider's
    batch API (OpenAI), round by round, at the batch price (`on_batch` is told each change of the
    batches' states, `_map/_batch.py`; `batch_poll`: seconds between polls; `batch_wait`: seconds a
    batch is polled before its rows fail, 25 hours); `resume=True` (with the `run_id` of a logged run)
    goes on with each row's chain from the log instead of asking again: its logged calls are not
    sent, its logged tool results not run again (a row whose chain is done replays to its value, one
    that waits for approval stays waiting, one whose chain failed is asked again; docs/durable.md);
    other keyword arguments go to `chain` (strategy, chain_limit, options, convert, ...).
    """
    from chainform._map._run import MapRun

    if retries is not None:
        warnings.warn(
            "map's retries= is now transport_retries= (re-tries after a transient failure)",
            DeprecationWarning,
            stacklevel=3,
        )
        transport_retries = retries if transport_retries is None else transport_retries
    if on_error not in ("record", "raise"):
        raise ValueError("on_error must be 'record' or 'raise'")
    if concurrency is not None:  # before any row: 0 would start no worker, 10**9 one per row read
        check_count("concurrency", concurrency, 1, MAX_CONCURRENCY)
    if prompt is not None:
        check_template(prompt)  # a template that can fill no row fails here, not on every row
    from chainform._map._pool import InMemory

    source: Any
    if isinstance(inputs, AsyncIterable):
        source = _arows(inputs, id_field)
    elif isinstance(inputs, Sequence):  # nothing to wait for: no reader thread
        if id_field is not None:
            check_unique_ids(enumerate(inputs), id_field, "inputs")
        source = InMemory(rows(inputs, id_field))
    else:
        source = rows(inputs, id_field)
    run = MapRun(
        model,
        prompt=prompt,
        system=system,
        tools=tools,
        schema=schema,
        requests_per_minute=requests_per_minute,
        tokens_per_minute=tokens_per_minute,
        retries=2 if transport_retries is None else transport_retries,
        on_error=on_error,
        log=log,
        run_id=run_id,
        chain_options=chain_options,
        attach=attach,
        attach_base=Path(attach_base) if attach_base is not None else None,
        attach_limits=attach_limits,
        budget=max_cost if isinstance(max_cost, Budget) or max_cost is None else Budget(max_cost),
        batch=batch,
        on_batch=on_batch,
        batch_poll=batch_poll,
        batch_wait=batch_wait,
        resume=resume,
    )
    rows_at_once = concurrency if concurrency is not None else (BATCH_ROWS if batch else 8)
    return run.results(source, concurrency=rows_at_once, ordered=ordered)


def _sync_twin(
    fn: Callable[Concatenate[MapModel, P], AsyncIterator[MapResult]],
) -> Callable[Concatenate[SyncMapModel, P], Iterator[MapResult]]:
    """The sync twin of `amap` with the same keyword arguments (one signature, not two copies)."""

    @functools.wraps(fn)
    def run(model: SyncMapModel, /, *args: P.args, **kwargs: P.kwargs) -> Iterator[MapResult]:
        return _drain(fn(model._twin(), *args, **kwargs))

    return run


def _drain(results: AsyncIterator[MapResult]) -> Iterator[MapResult]:
    """Pull results from chainform's background loop, where the pool keeps running between pulls.

    Interrupted while waiting (Ctrl-C), the pending pull is cancelled before the results close: an
    async generator cannot be closed while a pull of it still runs."""
    step = None
    try:
        while True:
            step = _sync.submit(_anext(results))
            try:
                yield step.result()
            except StopAsyncIteration:
                return
    finally:
        if step is not None:
            step.cancel()
        _sync.run(_aclose(results))


async def _anext(results: AsyncIterator[MapResult]) -> MapResult:
    return await results.__anext__()


async def _aclose(results: AsyncIterator[MapResult]) -> None:
    aclose = getattr(results, "aclose", None)
    if aclose is None:
        return
    while getattr(results, "ag_running", False):  # a cancelled pull still unwinding
        await asyncio.sleep(0)
    await aclose()


async def _arows(inputs: AsyncIterable[Any], id_field: str | None) -> AsyncIterator[Row]:
    index = 0
    async for item in inputs:
        yield next(rows([item], id_field, start=index))
        index += 1


map_sync = _sync_twin(amap)
"""`Model.map`: `amap` run on chainform's background loop, results handed back to this thread."""


__all__ = ["OnError", "amap", "map_sync"]
