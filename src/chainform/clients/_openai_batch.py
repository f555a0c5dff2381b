"""OpenAI's Batch API (Files + Batches) through the official SDK, for `map --batch`.

The map's batch rounds (`_map/_batch.py`) know no provider; this adapter turns their requests
into a JSONL file, creates the batch, polls it and reads its output and error files back as
`LineResult`s keyed by custom_id. The order of the lines in those files is not relied on.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from chainform.errors import BatchError, ChainformError, ProviderError, ProviderErrorKind

TERMINAL = frozenset(
    {"completed", "failed", "expired", "cancelled", "ended", "succeeded"}
)  # Anthropic's, Gemini's


@dataclass
class BatchState:
    """What a poll says: the status, the rows done and failed, and the files once it ended."""

    status: str
    total: int = 0
    completed: int = 0
    failed: int = 0
    output_file: str | None = None
    error_file: str | None = None
    errors: list[str] = field(default_factory=list)
    batch_id: str = ""

    @property
    def ended(self) -> bool:
        return self.status in TERMINAL


@dataclass(frozen=True)
class Intent:
    """A batch the log meant to submit whose id never reached it (the process died in between):
    its intent id, how many requests it carried, when the intent was written (epoch seconds), and
    the batch ids the log already names (none of them is this one)."""

    id: str
    size: int = 0
    since: float = 0.0
    known: frozenset[str] = frozenset()


@dataclass
class LineResult:
    """One line of a results file: the answer's body, or why it failed (`retry`: worth a next batch)."""

    custom_id: str
    body: Any = None
    error: ProviderError | None = None
    cancelled: bool = False  # the line was not run because its batch was cancelled


@contextlib.contextmanager
def typed_errors(client: Any) -> Iterator[None]:
    """Around a batch API's SDK calls: what the SDK raises (a status, a dropped connection, a
    timeout) as the client's typed ProviderError, so a map retries the transient ones and the CLI
    exits 3, as for a live call."""
    try:
        yield
    except ChainformError:
        raise
    except Exception as exc:
        raise client.wire.error(exc, client.guard(), False) from exc


@contextlib.contextmanager
def about_batch(api: Any, batch_id: str) -> Iterator[None]:
    """Around a batch API's SDK calls about one batch: `typed_errors`, and a 404 as BatchError (the
    provider no longer knows the batch: the map's rounds send its rows again)."""
    try:
        with typed_errors(api.client):
            yield
    except ProviderError as exc:
        if exc.status != 404:
            raise
        message = f"the provider no longer knows batch {batch_id}"
        raise BatchError(message, status=404, provider=api.provider) from None


def json_lines(raw: Iterable[bytes | str]) -> Iterator[dict[str, Any] | None]:
    """The objects of a results file's lines; None for a line that is not a JSON object (cut
    short, or hostile): only that line's row goes without an answer."""
    for line in raw:
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError:
            yield None
            continue
        yield item if isinstance(item, dict) else None


UNREADABLE = "<an unreadable line>"
"""The custom_id of a results line that is not a JSON object (it answers no row)."""


class OpenAIBatches:
    """Files + Batches for an OpenAI client (its SDK; chat completions or responses)."""

    provider = "openai"
    max_requests = 50_000
    max_bytes = 200 * 1024 * 1024

    def __init__(self, client: Any, endpoint: str) -> None:
        self.client = client
        self.sdk = client.sdk
        self.endpoint = endpoint  # /v1/chat/completions or /v1/responses

    def line(self, custom_id: str, body: dict[str, Any]) -> bytes:
        item = {"custom_id": custom_id, "method": "POST", "url": self.endpoint, "body": body}
        return json.dumps(item, ensure_ascii=False).encode() + b"\n"

    async def submit(self, lines: list[bytes], intent: str) -> str:
        """Upload the lines and create the batch; its id."""
        with typed_errors(self.client):
            upload = await self.sdk.files.create(
                file=("chainform-batch.jsonl", b"".join(lines)), purpose="batch"
            )
            batch = await self.sdk.batches.create(
                input_file_id=upload.id,
                endpoint=self.endpoint,
                completion_window="24h",
                metadata={"chainform_intent": intent},
            )
        return str(batch.id)

    async def find(self, intent: Intent) -> str | None:
        """The batch created for `intent` before a crash kept its id from the log, if any."""
        with typed_errors(self.client):
            async for batch in self.sdk.batches.list(limit=100):
                if (batch.metadata or {}).get("chainform_intent") == intent.id:
                    return str(batch.id)
        return None

    async def poll(self, batch_id: str) -> BatchState:
        """The batch's state; BatchError when the provider no longer knows it."""
        with about_batch(self, batch_id):
            batch = await self.sdk.batches.retrieve(batch_id)
        counts = batch.request_counts
        errors = [f"{e.code}: {e.message}" for e in (batch.errors.data or [])] if batch.errors else []
        return BatchState(
            batch.status,
            counts.total if counts else 0,
            counts.completed if counts else 0,
            counts.failed if counts else 0,
            batch.output_file_id,
            batch.error_file_id,
            errors,
            batch_id,
        )

    async def cancel(self, batch_id: str) -> str:
        with typed_errors(self.client):
            return str((await self.sdk.batches.cancel(batch_id)).status)

    async def results(self, state: BatchState) -> list[LineResult]:
        """Every line of the output and error files (duplicates and unknown ids included)."""
        found: list[LineResult] = []
        for file_id in (state.output_file, state.error_file):
            if file_id is None:
                continue
            with typed_errors(self.client):
                content = await self.sdk.files.content(file_id)
            found += [self._read(item) for item in json_lines(content.text.splitlines())]
        return found

    def _read(self, item: dict[str, Any] | None) -> LineResult:
        if item is None:
            return LineResult(UNREADABLE)
        custom_id = str(item.get("custom_id"))
        response = item.get("response") or {}
        status = response.get("status_code")
        if status == 200:
            return LineResult(custom_id, response.get("body"))
        error = item.get("error") or ((response.get("body") or {}).get("error")) or {}
        code = error.get("code") or "batch_error"
        message = f"batch line failed ({code}): {error.get('message') or 'no message'}"
        kind: ProviderErrorKind | None = "timeout" if code == "batch_expired" else None
        failure = ProviderError(message, status=status, provider=self.provider, retryable=True, kind=kind)
        return LineResult(custom_id, error=failure)


__all__ = [
    "UNREADABLE",
    "BatchState",
    "Intent",
    "LineResult",
    "OpenAIBatches",
    "about_batch",
    "json_lines",
    "typed_errors",
]
