"""Many inputs, one call: `model.map(rows, prompt="... {field} ...")` and `await`-free `amap`.

Rows are read lazily and run by a pool of `concurrency` workers sharing one rate gate (requests
and tokens per minute; a 429 pauses every worker). Each row ends as a `MapResult` holding either
its value or a typed error, so one bad row never stops the other 49,999. See docs/map.md.
"""

from __future__ import annotations

import functools
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
    Sequence,
)
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Concatenate, Literal, ParamSpec

from chainform import _sync
from chainform._map._inputs import MapInputError, Row, check_template, rows
from chainform.chain._records import ChainUsage
from chainform.errors import (
    ChainError,
    FormattingError,
    GuardrailError,
    ProviderError,
    StructuredOutputError,
    ToolError,
)

if TYPE_CHECKING:
    from chainform.models import AsyncModel, Model

OnError = Literal["record", "raise"]
P = ParamSpec("P")

_PHASES: tuple[tuple[type[BaseException], str], ...] = (
    (MapInputError, "input"),
    (ProviderError, "provider"),
    (StructuredOutputError, "output"),
    (FormattingError, "format"),
    (ToolError, "tool"),
    (GuardrailError, "guardrail"),
    (ChainError, "chain"),
)


@dataclass
class RowError:
    """Why a row failed: the `phase` (input, provider, output, format, tool, guardrail, chain,
    internal), the error's type name and message, and the exception itself."""

    phase: str
    type: str
    message: str
    exception: BaseException | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, exc: BaseException) -> RowError:
        phase = next((name for kind, name in _PHASES if isinstance(exc, kind)), "internal")
        return cls(phase, type(exc).__name__, " ".join(str(exc).split()) or type(exc).__name__, exc)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"phase": self.phase, "type": self.type, "message": self.message}
        status = getattr(self.exception, "status", None)
        if status is not None:
            out["status"] = status
        return out


@dataclass
class MapResult:
    """One finished row: `value` (with a schema) and `text`, or `error`; never both."""

    index: int
    key: str
    input: str | dict[str, Any]
    value: Any = None
    data: Any = None
    text: str | None = None
    error: RowError | None = None
    usage: ChainUsage = field(default_factory=lambda: ChainUsage.of([]))
    conversation_id: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def amap(
    model: AsyncModel,
    /,
    inputs: Iterable[Any] | AsyncIterable[Any],
    *,
    prompt: str | None = None,
    system: str | None = None,
    tools: Sequence[Any] | None = None,
    schema: Any = None,
    concurrency: int = 8,
    requests_per_minute: float | None = None,
    tokens_per_minute: float | None = None,
    retries: int = 2,
    on_error: OnError = "record",
    log: bool = True,
    ordered: bool = False,
    id_field: str | None = None,
    run_id: str | None = None,
    **chain_options: Any,
) -> AsyncGenerator[MapResult, None]:
    """Run a chain for every input and yield a MapResult per row as it finishes.

    `inputs`: str prompts, or dicts that fill `prompt` (a template such as "Extract: {text}";
    a broken one raises MapInputError at once, before any row).
    They are read lazily; memory does not grow with their number. `concurrency` workers share
    `requests_per_minute` / `tokens_per_minute`; a 429 pauses them all for its Retry-After.
    `retries`: re-tries of one model call after a transient failure (429, 5xx, timeout, dropped
    connection). `on_error="record"` puts a typed `RowError` on the row; "raise" stops the run.
    `ordered=True` yields in input order. `id_field` keys rows by a field (else by position);
    other keyword arguments go to `chain` (strategy, chain_limit, options, ...).
    """
    from chainform._map._run import MapRun

    if on_error not in ("record", "raise"):
        raise ValueError("on_error must be 'record' or 'raise'")
    if prompt is not None:
        check_template(prompt)  # a template that can fill no row fails here, not on every row
    from chainform._map._pool import InMemory

    source: Any
    if isinstance(inputs, AsyncIterable):
        source = _arows(inputs, id_field)
    elif isinstance(inputs, Sequence):  # nothing to wait for: no reader thread
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
        retries=retries,
        on_error=on_error,
        log=log,
        run_id=run_id,
        chain_options=chain_options,
    )
    return run.results(source, concurrency=concurrency, ordered=ordered)


def _sync_twin(
    fn: Callable[Concatenate[AsyncModel, P], AsyncIterator[MapResult]],
) -> Callable[Concatenate[Model, P], Iterator[MapResult]]:
    """The sync twin of `amap` with the same keyword arguments (one signature, not two copies)."""

    @functools.wraps(fn)
    def run(model: Model, /, *args: P.args, **kwargs: P.kwargs) -> Iterator[MapResult]:
        from chainform.models import AsyncModel

        twin = AsyncModel(model.client, model._profile, name=model.name, log_path=model._log_path)
        return _drain(fn(twin, *args, **kwargs))

    return run


def _drain(results: AsyncIterator[MapResult]) -> Iterator[MapResult]:
    """Pull results from chainform's background loop, where the pool keeps running between pulls."""
    try:
        while True:
            try:
                yield _sync.run(_anext(results))
            except StopAsyncIteration:
                return
    finally:
        _sync.run(_aclose(results))


async def _anext(results: AsyncIterator[MapResult]) -> MapResult:
    return await results.__anext__()


async def _aclose(results: AsyncIterator[MapResult]) -> None:
    aclose = getattr(results, "aclose", None)
    if aclose is not None:
        await aclose()


async def _arows(inputs: AsyncIterable[Any], id_field: str | None) -> AsyncIterator[Row]:
    index = 0
    async for item in inputs:
        yield next(rows([item], id_field, start=index))
        index += 1


map_sync = _sync_twin(amap)
"""`Model.map`: `amap` run on chainform's background loop, results handed back to this thread."""


__all__ = ["MapInputError", "MapResult", "RowError", "amap", "map_sync"]
