"""Where the engine tells tracing what it did: `hooks` is None (nothing imported, nothing paid)
until `chainform.instrument()` installs chainform/otel's spans.

The engine, the tool runner and map call `hooks` at their boundaries: one `None` test each when
tracing is off. This module imports nothing of chainform's and no OpenTelemetry:
the hooks read the engine's objects by their attributes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


class Hooks(Protocol):
    """What a tracer implements (chainform/otel/_spans.py)."""

    def chain(self, run: Any, agent: str | None) -> AbstractContextManager[Any]: ...

    def call(self, call: Any) -> None: ...

    async def tool(self, call: Any, work: Awaitable[T]) -> T: ...

    def map_run(self, model: str, run_id: str) -> Any: ...

    def map_row(self, run: Any, key: str) -> AbstractContextManager[Any]: ...

    def map_done(self, run: Any, error: BaseException | None) -> None: ...


hooks: Hooks | None = None

_NOTHING: AbstractContextManager[Any] = contextlib.nullcontext()


def map_row(run: Any, key: str) -> AbstractContextManager[Any]:
    """The span of one map row, under its run's span (`run`: what `map_run` returned)."""
    return _NOTHING if hooks is None or run is None else hooks.map_row(run, key)
