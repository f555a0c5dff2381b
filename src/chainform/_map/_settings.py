"""`MapSettings`: a map run's settings in one typed, immutable object, built once by `chainform map`.

The CLI fills it from its flags and hands it unchanged to `amap` (or to Ray's workers) as the
keyword arguments it stands for (`as_kwargs`). The settings every run gives have no default; the
others default to `amap`'s (and `chain`'s) own and are passed only when they differ, so a run
without a flag is the run without its keyword.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chainform.pricing import Budget
    from chainform.types import ConversionLimits
    from chainform.types._options import ChatOptions


@dataclass(frozen=True)
class MapSettings:
    """A map run's settings: what each row is asked (prompt template, system, tools, schema, chain
    settings), how rows run (concurrency, rate limits, transport retries, order, resume, log),
    what they attach, the cost cap, and the batch API's settings."""

    prompt: str | None
    system: str | None
    tools: Sequence[Any] | None
    schema: Any
    concurrency: int | None
    requests_per_minute: float | None
    tokens_per_minute: float | None
    transport_retries: int
    log: bool
    run_id: str
    strategy: str
    chain_limit: int
    options: ChatOptions | dict[str, Any] | None
    resume: bool = False
    ordered: bool = False
    retry_max_tokens: int | None = None
    stop_at_tools: Sequence[str] = ()
    attach: str | None = None
    attach_base: Path | None = None
    attach_limits: ConversionLimits | None = None
    convert: bool = True
    attachments_store: str = "copy"
    allow_private_urls: bool = False
    max_cost: Budget | None = None
    batch: bool = False
    batch_poll: float = 5.0
    batch_wait: float | None = None
    on_batch: Callable[[Any], None] | None = None

    def as_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of `amap` these settings stand for (a default left out)."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.default is MISSING or getattr(self, f.name) != f.default
        }


__all__ = ["MapSettings"]
