"""Scale `model.map` out on Ray Data (extra `ray`): a callable class for `Dataset.map_batches`.

chainform does not grow a scheduler of its own: beyond one machine, Ray Data moves the rows and
each Ray worker runs its batches through `amap` (concurrent, rate-limited, retried) on one event
loop it keeps for its life, so the provider SDK's connection pool is reused across batches.

```python
import ray
from chainform.ray import MapBatches

ds = ray.data.read_json("tickets.jsonl")
out = ds.map_batches(
    MapBatches, fn_constructor_kwargs={"model": "openai/gpt-4.1-mini", "prompt": "Triage: {text}",
                                       "schema": {"type": "object", ...}, "concurrency": 16},
    concurrency=4, batch_size=64,
)
out.write_json("triaged/")      # every input column, plus value, error, text, tokens
```

Rate limits are per worker: give each `requests_per_minute = provider limit / workers`.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from chainform.map import MapResult, RowError, amap

if TYPE_CHECKING:
    from chainform._map._inputs import Row

_INDEX, _KEY, _ROW = "_map_index", "_map_key", "_map_row"
OUTPUT_COLUMNS = ("value", "error", "text", "tokens", "conversation_id")


class MapBatches:
    """Runs each batch of a Ray Dataset through `amap`; returns the batch plus output columns.

    Output columns: `value` (the answer: JSON data with a schema, else the text), `error`
    (None, or {"phase", "type", "message"}), `text`, `tokens`, `conversation_id`. Arguments are
    those of `amap`, plus `model` (a name) and `model_options` (key, base_url, max_retries, ...).
    """

    def __init__(
        self,
        model: str,
        *,
        prompt: str | None = None,
        model_options: dict[str, Any] | None = None,
        log: bool = False,
        **map_options: Any,
    ) -> None:
        from chainform.models import get_async_model

        self.model = get_async_model(model, **(model_options or {}))
        self.prompt = prompt
        self.log = log
        self.map_options = map_options
        self._loop = asyncio.new_event_loop()  # one loop per worker: the SDK's pool lives on it

    def __call__(self, batch: dict[str, Any]) -> dict[str, list[Any]]:
        columns = {name: _plain(values) for name, values in batch.items()}
        count = len(next(iter(columns.values()), []))
        records = [{name: values[i] for name, values in columns.items()} for i in range(count)]
        inputs = [json.loads(r[_ROW]) if _ROW in r else r for r in records]
        results = self._loop.run_until_complete(self._run(inputs))
        out = dict(columns)
        out["value"] = [r.data if r.data is not None else r.text for r in results]
        out["error"] = [r.error.to_dict() if r.error else None for r in results]
        out["text"] = [r.text for r in results]
        out["tokens"] = [r.usage.total_tokens or 0 for r in results]
        out["conversation_id"] = [r.conversation_id for r in results]
        return out

    async def _run(self, inputs: list[Any]) -> list[MapResult]:
        results = amap(self.model, inputs, prompt=self.prompt, log=self.log, ordered=True, **self.map_options)
        return [r async for r in results]


def run_job(
    address: str,
    rows: Iterable[Row],
    model: str,
    key: str | None,
    base_url: str | None,
    workers: int,
    settings: dict[str, Any],
    *,
    chunk_rows: int = 2000,
    model_settings: dict[str, Any] | None = None,
) -> Iterator[MapResult]:
    """`chainform map --ray`: the CLI's rows, chunk by chunk, through Ray Data; results as they come.
    `model_settings`: more of the model's (timeout), beside key and base_url.

    The driver reads INPUT and keys the rows, so resume and exactly-once are the same as without
    Ray; each chunk becomes a dataset whose batches run on `workers` Ray workers.
    """
    import ray

    started = not ray.is_initialized()
    if started:
        ray.init(
            address=None if address == "local" else address,
            log_to_driver=False,
            logging_level=logging.WARNING,
        )
    context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False  # chainform's own progress bar counts the rows
    context.print_on_execution_start = False
    try:
        _ship_by_value(settings.get("tools") or ())
        options = {k: v for k, v in settings.items() if k not in ("run_id",) and v is not None}
        options["log"] = settings.get("log", False)
        model_options = {**_model_options(key, base_url), **(model_settings or {})}
        kwargs = {"model": model, "model_options": model_options, **options}
        batch = max(1, int(settings.get("concurrency") or 8) * 4)
        for chunk in _chunks(rows, chunk_rows):
            items = [{_INDEX: r.index, _KEY: r.key, _ROW: json.dumps(r.data)} for r in chunk]
            dataset = ray.data.from_items(items).map_batches(
                MapBatches,
                fn_constructor_kwargs=kwargs,
                compute=ray.data.ActorPoolStrategy(size=workers),
                batch_size=batch,
                num_cpus=0.5,
            )
            for out in dataset.iter_rows():
                yield _result(out)
    finally:
        if started:
            ray.shutdown()


def _ship_by_value(tools: Iterable[Any]) -> None:
    """Tools from `--functions` live in modules made at run time, which workers cannot import:
    have Ray's cloudpickle send those modules by value."""
    import sys

    from ray import cloudpickle

    for tool in tools:
        module = sys.modules.get(getattr(getattr(tool, "fn", None), "__module__", None) or "")
        if module is not None and module.__name__ != "__main__" and module.__spec__ is None:
            cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]


def _model_options(key: str | None, base_url: str | None) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if key is not None:
        options["key"] = key
    if base_url is not None:
        options["base_url"] = base_url
    return options


def _result(out: dict[str, Any]) -> MapResult:
    error = out.get("error")
    return MapResult(
        index=int(out[_INDEX]),
        key=str(out[_KEY]),
        input=json.loads(out[_ROW]),
        data=out.get("value") if not error else None,
        text=out.get("text"),
        error=RowError(error["phase"], error["type"], error["message"]) if error else None,
        usage=_usage(out.get("tokens")),
        conversation_id=out.get("conversation_id"),
    )


def _usage(tokens: Any) -> Any:
    from chainform.chain._records import ChainUsage

    usage = ChainUsage.of([])
    usage.total_tokens = int(tokens or 0)
    return usage


def _plain(values: Any) -> list[Any]:
    """A batch column (numpy array or list) as plain Python values."""
    tolist = getattr(values, "tolist", None)
    return list(tolist() if callable(tolist) else values)


def _chunks(rows: Iterable[Row], size: int) -> Iterator[Sequence[Row]]:
    chunk: list[Row] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


__all__ = ["OUTPUT_COLUMNS", "MapBatches", "run_job"]
