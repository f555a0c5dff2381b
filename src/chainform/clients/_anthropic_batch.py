"""Anthropic's Message Batches through the official SDK, for `map --batch`: the same interface as
`_openai_batch.OpenAIBatches` (lines, submit, poll, results, cancel), so the map's rounds
(`_map/_batch.py`) drive either. Results are matched by custom_id, never by order.
"""

from __future__ import annotations

import json
from typing import Any

from chainform.clients._openai_batch import (
    UNREADABLE,
    BatchState,
    Intent,
    LineResult,
    about_batch,
    typed_errors,
)
from chainform.errors import ProviderError

_SKEW_S = 300.0  # how far the provider's clock may be behind ours


class AnthropicBatches:
    """Message Batches for an Anthropic client (its SDK)."""

    provider = "anthropic"
    finds_exactly = False  # `find` goes by size and time: another run's batch may fit
    max_requests = 100_000
    max_bytes = 256 * 1024 * 1024

    def __init__(self, client: Any) -> None:
        self.client = client
        self.sdk = client.sdk

    def line(self, custom_id: str, body: dict[str, Any]) -> bytes:
        return json.dumps({"custom_id": custom_id, "params": body}, ensure_ascii=False).encode() + b"\n"

    async def submit(self, lines: list[bytes], intent: str) -> str:
        with typed_errors(self.client):
            batch = await self.sdk.messages.batches.create(requests=[json.loads(line) for line in lines])
        return str(batch.id)

    async def find(self, intent: Intent) -> str | None:
        """Message Batches carry no metadata, so the batch is known by what it must be: created since
        the intent was written (less a margin for clock skew), carrying as many requests, and named
        by no batch of the log. Only a single such batch is taken; with two (another writer with the
        same key, size and minutes) it is None and the intent is sent again."""
        since = intent.since - _SKEW_S
        found: list[str] = []
        with typed_errors(self.client):
            async for batch in self.sdk.messages.batches.list(limit=100):  # newest first
                if batch.created_at.timestamp() < since:
                    break
                if _size(batch.request_counts) == intent.size and batch.id not in intent.known:
                    found.append(str(batch.id))
        return found[0] if len(found) == 1 else None

    async def poll(self, batch_id: str) -> BatchState:
        """The batch's state (`in_progress`, `canceling`, `ended`); BatchError when it is unknown."""
        with about_batch(self, batch_id):
            batch = await self.sdk.messages.batches.retrieve(batch_id)
        c = batch.request_counts
        return BatchState(
            batch.processing_status,
            _size(c),
            c.succeeded,
            c.errored + c.canceled + c.expired,
            batch_id=batch_id,
        )

    async def cancel(self, batch_id: str) -> str:
        with typed_errors(self.client):
            return str((await self.sdk.messages.batches.cancel(batch_id)).processing_status)

    async def results(self, state: BatchState) -> list[LineResult]:
        """Every line of the results; a line the SDK cannot read ends the reading there (the rows
        after it go without an answer, into the next batch), it never fails the rows before it."""
        found: list[LineResult] = []
        with typed_errors(self.client):
            results = await self.sdk.messages.batches.results(state.batch_id)
        try:
            async for item in results:
                found.append(self._read(item))
        except (ValueError, TypeError, AttributeError):  # a line cut short or not an object
            found.append(LineResult(UNREADABLE))
        return found

    def _read(self, item: Any) -> LineResult:
        result = item.result
        if result.type == "succeeded":
            return LineResult(item.custom_id, result.message.model_dump(mode="json"))
        detail = getattr(getattr(result, "error", None), "error", None)
        why = f"{detail.type}: {detail.message}" if detail is not None else result.type
        failure = ProviderError(
            f"batch request {result.type} ({why})",
            provider=self.provider,
            retryable=True,
            kind="timeout" if result.type == "expired" else "server",
        )
        return LineResult(item.custom_id, error=failure, cancelled=result.type == "canceled")


def _size(counts: Any) -> int:
    """The requests a batch carries, from its request counts (one per state)."""
    return int(counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired)


__all__ = ["AnthropicBatches"]
