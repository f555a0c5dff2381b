"""Gemini's batch mode (Batch API) through the official google-genai SDK, for `map --batch`: the
same interface as `_openai_batch.OpenAIBatches` (line, submit, find, poll, cancel, results), so the
map's rounds (`_map/_batch.py`) drive it as they drive the other two.

The requests go as a JSONL file uploaded through `client.files` (`{"key": custom_id, "request":
GenerateContentRequest}` a line), not inline: the API does not reliably hand an inlined request's
metadata back, nor keep the inlined responses in order, so only a file's `key` matches a result to
its row. Each line is the REST body the SDK itself would send for the live call (its own
converter: the same request, field for field). The batch's `display_name` carries the intent id,
so a batch whose id was lost to a crash is found again (`find`).
"""

from __future__ import annotations

import io
import json
from typing import Any

from chainform.clients._openai_batch import (
    UNREADABLE,
    BatchState,
    Intent,
    LineResult,
    about_batch,
    json_lines,
    typed_errors,
)
from chainform.errors import BatchError, ProviderError, ProviderErrorKind

_TAG = "chainform:"  # display_name = _TAG + intent id
_STATES = {  # the SDK's JobState (BATCH_STATE_* on the wire) -> the status chainform shows
    "JOB_STATE_PENDING": "pending",
    "JOB_STATE_QUEUED": "pending",
    "JOB_STATE_RUNNING": "running",
    "JOB_STATE_SUCCEEDED": "succeeded",
    "JOB_STATE_FAILED": "failed",
    "JOB_STATE_CANCELLING": "cancelling",
    "JOB_STATE_CANCELLED": "cancelled",
    "JOB_STATE_EXPIRED": "expired",
}
_TIMEOUTS = frozenset({504, "DEADLINE_EXCEEDED"})


class GeminiBatches:
    """Batch mode for a Gemini client (its google-genai SDK; the Gemini Developer API)."""

    provider = "gemini"
    max_requests = 50_000  # no count limit is published; this keeps a file of short requests small
    max_bytes = 2 * 1024 * 1024 * 1024  # the Files API's limit on one file

    def __init__(self, client: Any) -> None:
        self.client = client
        self.sdk = client.sdk
        self.model = client.model

    def line(self, custom_id: str, body: dict[str, Any]) -> bytes:
        """One JSONL line: the key and the request as the SDK would send it for `generate_content`
        (its converter), inline attachments spliced in (the file carries their base64 itself)."""
        from google.genai import _common, models, types

        try:
            params = types._GenerateContentParameters(**body)
            convert = models._GenerateContentParameters_to_mldev
        except AttributeError as exc:  # a private part of the SDK this relies on was renamed
            raise BatchError(
                f"google-genai {_version()} lacks the request converter a Gemini batch line is built with "
                f"({exc}); batch runs for Gemini are tested with google-genai 3.6",
                provider=self.provider,
            ) from None
        request = convert(self.sdk._api_client, params, None, params)
        model = request.pop("_url", {}).get("model")
        for private in ("_query", "config"):
            request.pop(private, None)
        request = _common.encode_unserializable_types(_common.convert_to_dict(request))
        if model:  # a GenerateContentRequest names its model; the batch is created for it
            request["model"] = model
        item = {"key": custom_id, "request": request}
        line = json.dumps(item, ensure_ascii=False).encode()
        splicer = self.client.endpoint.splicer
        return (splicer.splice_bytes(line) if splicer is not None else line) + b"\n"

    async def submit(self, lines: list[bytes], intent: str) -> str:
        """Upload the lines as a JSONL file and create the batch for their model; its name."""
        first = json.loads(lines[0]) if lines else {}
        model = (first.get("request") or {}).get("model") or self.model
        with typed_errors(self.client):
            upload = await self.sdk.aio.files.upload(
                file=io.BytesIO(b"".join(lines)),
                config={"mime_type": "application/jsonl", "display_name": f"{_TAG}{intent}"},
            )
            batch = await self.sdk.aio.batches.create(
                model=model, src=upload.name, config={"display_name": f"{_TAG}{intent}"}
            )
        return str(batch.name)

    async def find(self, intent: Intent) -> str | None:
        """The batch created for `intent` before a crash kept its name from the log, if any."""
        with typed_errors(self.client):
            async for batch in await self.sdk.aio.batches.list(config={"page_size": 100}):
                if batch.display_name == f"{_TAG}{intent.id}":
                    return str(batch.name)
        return None

    async def poll(self, batch_id: str) -> BatchState:
        """The batch's state (pending, running, succeeded, failed, cancelled, expired); BatchError
        when the provider no longer knows it. Gemini reports no row counts on a batch."""
        with about_batch(self, batch_id):
            batch = await self.sdk.aio.batches.get(name=batch_id)
        state = _state(batch)
        output = batch.dest.file_name if batch.dest is not None else None
        why = [f"the batch ended {state}"] if state in ("failed", "expired") else []
        return BatchState(state, output_file=output, errors=why, batch_id=batch_id)

    async def cancel(self, batch_id: str) -> str:
        with typed_errors(self.client):
            await self.sdk.aio.batches.cancel(name=batch_id)
            return _state(await self.sdk.aio.batches.get(name=batch_id))

    async def results(self, state: BatchState) -> list[LineResult]:
        """Every line of the responses file (duplicates and unknown keys included)."""
        if state.output_file is None:
            return []
        with typed_errors(self.client):
            content = await self.sdk.aio.files.download(file=state.output_file)
        return [self._read(item) for item in json_lines(bytes(content).splitlines())]

    def _read(self, item: dict[str, Any] | None) -> LineResult:
        if item is None:
            return LineResult(UNREADABLE)
        key = str(item.get("key"))
        if item.get("response") is not None and item.get("error") is None:
            return LineResult(key, item["response"])
        error = item.get("error") or {}
        code, status = error.get("code"), error.get("status")
        message = f"batch line failed ({status or code or 'error'}): {error.get('message') or 'no message'}"
        kind: ProviderErrorKind | None = "timeout" if {code, status} & _TIMEOUTS else None
        number = code if isinstance(code, int) else None
        failure = ProviderError(message, status=number, provider=self.provider, retryable=True, kind=kind)
        return LineResult(key, error=failure)


def _version() -> str:
    from importlib.metadata import version

    return version("google-genai")


def _state(batch: Any) -> str:
    raw = str(getattr(batch.state, "value", batch.state))
    return _STATES.get(raw, raw.removeprefix("JOB_STATE_").lower())


__all__ = ["GeminiBatches"]
