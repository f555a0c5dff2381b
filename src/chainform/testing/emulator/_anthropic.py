"""Anthropic Messages wire format (POST /v1/messages), whole and streamed.

Streams follow the API reference: `message_start` (usage with the input count), one
`content_block_start` / `content_block_delta`... / `content_block_stop` group per block (thinking
with `thinking_delta` then `signature_delta`, text with `text_delta`, tool_use with
`input_json_delta` fragments), `message_delta` with the stop reason and output usage, `message_stop`.
Every SSE event carries its `event:` name, which the SDK dispatches on.
"""

from __future__ import annotations

import base64
from typing import Any, ClassVar

from chainform.testing.emulator._media import IMAGE_TYPES, MediaRefused, RecordedMedia, decode
from chainform.testing.emulator._script import Fault, Reply, Usage
from chainform.testing.emulator._wire import (
    ERROR_TYPES,
    RecordedRequest,
    StreamEvent,
    WireFormat,
    marked_prefixes,
)
from chainform.types import FunctionCallContent, TextReasoningContent

_STOP = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens", "content_filter": "refusal"}
_ERROR_TYPES = {**ERROR_TYPES, 413: "request_too_large", 429: "rate_limit_error", 529: "overloaded_error"}


def _usage(usage: Usage) -> dict[str, Any]:
    """Anthropic counts fresh input apart from cache reads; the neutral count includes both."""
    return {
        "input_tokens": usage.input_tokens - usage.cached_input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_input_tokens": usage.cached_input_tokens,
        "cache_creation_input_tokens": 0,
    }


def signature(text: str) -> str:
    """The deterministic signature the emulator attaches to a thinking block."""
    return base64.b64encode(f"emu-signature:{len(text)}".encode()).decode("ascii")


class AnthropicFormat(WireFormat):
    name: ClassVar[str] = "anthropic"
    routes: ClassVar[tuple[str, ...]] = (r"(?:/anthropic)?/v1/messages",)
    request_id_header: ClassVar[str] = "request-id"

    def media(self, request: RecordedRequest) -> list[RecordedMedia]:
        """`image` and `document` blocks: base64 (images of four types, PDFs), url, or (documents)
        plain text sources."""
        found = []
        for message in request.json.get("messages") or ():
            blocks = message.get("content") if isinstance(message, dict) else None
            for block in blocks if isinstance(blocks, list) else ():
                kind = block.get("type") if isinstance(block, dict) else None
                if kind not in ("image", "document"):
                    continue
                source = block.get("source") or {}
                allowed = IMAGE_TYPES if kind == "image" else {"application/pdf"}
                if source.get("type") == "url":
                    found.append(RecordedMedia(kind, None, url=source.get("url"), name=block.get("title")))
                elif source.get("type") == "base64" and source.get("media_type") in allowed:
                    data = decode(source.get("data"), f"{kind}.source.data")
                    found.append(RecordedMedia(kind, source["media_type"], data, name=block.get("title")))
                elif (
                    kind == "document"
                    and source.get("type") == "text"
                    and source.get("media_type") == "text/plain"
                ):
                    text = str(source.get("data") or "").encode()
                    found.append(RecordedMedia(kind, "text/plain", text, name=block.get("title")))
                else:
                    raise MediaRefused(
                        f"{kind}.source: unsupported source {source.get('type')!r} "
                        f"of type {source.get('media_type')!r}"
                    )
        return found

    def _message(
        self, reply: Reply, request: RecordedRequest, content: list[dict[str, Any]]
    ) -> dict[str, Any]:
        return {
            "id": f"msg_emu{request.index}",
            "type": "message",
            "role": "assistant",
            "model": request.json.get("model") or "emulated",
            "content": content,
            "stop_reason": None,
            "stop_sequence": None,
        }

    def render(self, reply: Reply, request: RecordedRequest) -> dict[str, Any]:
        blocks: list[dict[str, Any]] = []
        for part in reply.parts:
            if isinstance(part, str):
                blocks.append({"type": "text", "text": part})
            elif isinstance(part, TextReasoningContent):
                blocks.append({"type": "thinking", "thinking": part.text, "signature": signature(part.text)})
            else:
                blocks.append(
                    {"type": "tool_use", "id": part.call_id, "name": part.name, "input": part.arguments or {}}
                )
        assert reply.usage is not None
        body = self._message(reply, request, blocks)
        body.update(stop_reason=_STOP.get(reply.finish, reply.finish), usage=_usage(reply.usage))
        return body

    def render_stream(self, reply: Reply, request: RecordedRequest) -> list[StreamEvent]:
        assert reply.usage is not None
        usage = _usage(reply.usage)
        start = self._message(reply, request, [])
        start["usage"] = {**usage, "output_tokens": 1}
        events = [_event("message_start", message=start), _event("ping")]
        for index, part in enumerate(reply.parts):
            events.extend(_block_events(index, part, reply))
        delta = {"stop_reason": _STOP.get(reply.finish, reply.finish), "stop_sequence": None}
        events.append(_event("message_delta", delta=delta, usage={"output_tokens": usage["output_tokens"]}))
        events.append(_event("message_stop"))
        return events

    def cache_prefixes(self, request: RecordedRequest) -> list[Any]:
        """Tools, then system, then messages, up to each block with cache_control."""
        body = request.json
        system = body.get("system")
        blocks = [
            *(body.get("tools") or []),
            *(system if isinstance(system, list) else []),
            *(
                block
                for message in body.get("messages") or []
                for block in (message.get("content") if isinstance(message.get("content"), list) else [])
            ),
        ]
        return marked_prefixes(blocks, "cache_control")

    def render_error(self, fault: Fault, request: RecordedRequest) -> dict[str, Any]:
        kind = _ERROR_TYPES.get(fault.status, "api_error")
        return {
            "type": "error",
            "error": {"type": kind, "message": fault.text},
            "request_id": request.request_id,
        }

    def malformed_event(self) -> bytes:
        # Named, so the SDK tries to parse it (it skips unnamed events).
        return b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": \n\n'


def _event(kind: str, **fields: Any) -> StreamEvent:
    return StreamEvent({"type": kind, **fields}, event=kind)


def _block_events(
    index: int, part: str | FunctionCallContent | TextReasoningContent, reply: Reply
) -> list[StreamEvent]:
    if isinstance(part, str):
        head: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": piece} for piece in reply.chunks(part)]
    elif isinstance(part, TextReasoningContent):
        head = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": piece} for piece in reply.chunks(part.text)]
        deltas.append({"type": "signature_delta", "signature": signature(part.text)})
    else:
        head = {"type": "tool_use", "id": part.call_id, "name": part.name, "input": {}}
        deltas = [
            {"type": "input_json_delta", "partial_json": piece}
            for piece in reply.chunks(part.arguments_json())
        ]
    return [
        _event("content_block_start", index=index, content_block=head),
        *(_event("content_block_delta", index=index, delta=d) for d in deltas),
        _event("content_block_stop", index=index),
    ]


WIRE_FORMATS = (AnthropicFormat(),)
