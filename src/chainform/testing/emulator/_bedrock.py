"""Bedrock Converse wire format: `POST /model/{modelId}/converse` and `/converse-stream`.

ConverseStream answers in the AWS event-stream binary framing, which botocore decodes: each
message is a prelude (total length, headers length, CRC32 of those 8 bytes), headers (`:event-type`,
`:content-type`, `:message-type`, string-typed), a JSON payload, and a CRC32 of everything before
it. Events: messageStart, contentBlockStart (tool use only), contentBlockDelta (text, toolUse input
fragments, reasoningContent text then signature), contentBlockStop, messageStop, metadata (usage).
Errors carry the AWS error code in the body's `__type`, as botocore reads it.
"""

from __future__ import annotations

import json
import re
import struct
import zlib
from typing import Any, ClassVar

from chainform.testing.emulator._media import MediaRefused, RecordedMedia, decode
from chainform.testing.emulator._script import Fault, Reply, Usage
from chainform.testing.emulator._wire import RecordedRequest, StreamEvent, WireFormat, marked_prefixes
from chainform.types import FunctionCallContent, TextReasoningContent

_STOP = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "content_filtered",
}
_ERRORS = {
    400: "ValidationException",
    401: "UnrecognizedClientException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    503: "ServiceUnavailableException",
}
_STRING_HEADER = 7
_IMAGE_FORMATS = frozenset({"png", "jpeg", "gif", "webp"})
_DOC_FORMATS = frozenset({"pdf", "csv", "doc", "docx", "xls", "xlsx", "html", "txt", "md"})
# letters, digits, hyphens, parentheses, square brackets; single whitespace characters between
_DOC_NAME = re.compile(r"[A-Za-z0-9\-()\[\]]+(\s[A-Za-z0-9\-()\[\]]+)*")


def signature(text: str) -> str:
    """The deterministic signature the emulator attaches to reasoning."""
    return f"emu-signature-{len(text)}"


def frame(headers: dict[str, str], payload: bytes, *, corrupt: bool = False) -> bytes:
    """One event-stream message; `corrupt` spoils its message CRC (a malformed event)."""
    encoded = b"".join(
        bytes([len(name)])
        + name.encode()
        + bytes([_STRING_HEADER])
        + struct.pack(">H", len(value))
        + value.encode()
        for name, value in headers.items()
    )
    total = 12 + len(encoded) + len(payload) + 4
    lengths = struct.pack(">II", total, len(encoded))
    message = lengths + struct.pack(">I", zlib.crc32(lengths)) + encoded + payload
    crc = zlib.crc32(message) ^ (0xFFFFFFFF if corrupt else 0)
    return message + struct.pack(">I", crc)


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "inputTokens": usage.input_tokens - usage.cached_input_tokens,
        "outputTokens": usage.output_tokens,
        "totalTokens": usage.total_tokens,
        "cacheReadInputTokens": usage.cached_input_tokens,
        "cacheWriteInputTokens": 0,
    }


class BedrockConverseFormat(WireFormat):
    name: ClassVar[str] = "bedrock-converse"
    routes: ClassVar[tuple[str, ...]] = (
        r"/model/(?P<model>[^/]+)/converse",
        r"/model/(?P<model>[^/]+)/converse-stream",
    )
    request_id_header: ClassVar[str] = "x-amzn-requestid"
    stream_content_type: ClassVar[str] = "application/vnd.amazon.eventstream"

    def media(self, request: RecordedRequest) -> list[RecordedMedia]:
        """`image` and `document` blocks with bytes sources, checked as Converse does: image
        formats, document formats, document names, and a text block beside every document."""
        found = []
        for message in request.json.get("messages") or ():
            blocks = [b for b in (message.get("content") or ()) if isinstance(b, dict)]
            for block in blocks:
                if "image" in block:
                    image = block["image"]
                    if image.get("format") not in _IMAGE_FORMATS:
                        raise MediaRefused(
                            f"image.format: {image.get('format')!r} is not one of {sorted(_IMAGE_FORMATS)}"
                        )
                    data = decode((image.get("source") or {}).get("bytes"), "image.source.bytes")
                    found.append(RecordedMedia("image", "image/" + image["format"], data))
                elif "document" in block:
                    document = block["document"]
                    if document.get("format") not in _DOC_FORMATS:
                        raise MediaRefused(
                            f"document.format: {document.get('format')!r} is not one of {sorted(_DOC_FORMATS)}"
                        )
                    name = document.get("name") or ""
                    if not _DOC_NAME.fullmatch(name):
                        raise MediaRefused(f"document.name: {name!r} has characters Converse does not allow")
                    if not any("text" in b for b in blocks):
                        raise MediaRefused("a message with a document needs a text block too")
                    data = decode((document.get("source") or {}).get("bytes"), "document.source.bytes")
                    found.append(RecordedMedia("document", document["format"], data, name=name))
        return found

    def cache_prefixes(self, request: RecordedRequest) -> list[Any]:
        """Tools, system, then messages, up to each cachePoint block."""
        body = request.json
        blocks = [
            *(body.get("toolConfig") or {}).get("tools", []),
            *(body.get("system") or []),
            *(block for message in body.get("messages") or [] for block in message.get("content") or []),
        ]
        return marked_prefixes(blocks, "cachePoint")

    def is_stream(self, request: RecordedRequest) -> bool:
        return request.path.endswith("/converse-stream")

    def render(self, reply: Reply, request: RecordedRequest) -> dict[str, Any]:
        assert reply.usage is not None
        content: list[dict[str, Any]] = []
        for part in reply.parts:
            if isinstance(part, str):
                content.append({"text": part})
            elif isinstance(part, TextReasoningContent):
                text = {"text": part.text, "signature": signature(part.text)}
                content.append({"reasoningContent": {"reasoningText": text}})
            else:
                tool = {"toolUseId": part.call_id, "name": part.name, "input": part.arguments or {}}
                content.append({"toolUse": tool})
        return {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": _STOP.get(reply.finish, reply.finish),
            "usage": _usage(reply.usage),
            "metrics": {"latencyMs": 1},
        }

    def render_stream(self, reply: Reply, request: RecordedRequest) -> list[StreamEvent]:
        assert reply.usage is not None
        events = [StreamEvent({"role": "assistant"}, "messageStart")]
        for index, part in enumerate(reply.parts):
            events.extend(_block(index, part, reply))
        events.append(StreamEvent({"stopReason": _STOP.get(reply.finish, reply.finish)}, "messageStop"))
        events.append(StreamEvent({"usage": _usage(reply.usage), "metrics": {"latencyMs": 1}}, "metadata"))
        return events

    def render_error(self, fault: Fault, request: RecordedRequest) -> dict[str, Any]:
        code = _ERRORS.get(fault.status, "InternalServerException")
        return {"__type": code, "message": fault.text}

    def encode_event(self, event: StreamEvent) -> bytes:
        headers = {
            ":event-type": event.event or "",
            ":content-type": "application/json",
            ":message-type": "event",
        }
        return frame(headers, json.dumps(event.data).encode())

    def malformed_event(self) -> bytes:
        headers = {
            ":event-type": "contentBlockDelta",
            ":content-type": "application/json",
            ":message-type": "event",
        }
        return frame(headers, b'{"contentBlockIndex": 0, "delta": {"text": "x"}}', corrupt=True)


def _block(
    index: int, part: str | FunctionCallContent | TextReasoningContent, reply: Reply
) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    if isinstance(part, str):
        deltas: list[dict[str, Any]] = [{"text": piece} for piece in reply.chunks(part)]
    elif isinstance(part, TextReasoningContent):
        deltas = [{"reasoningContent": {"text": piece}} for piece in reply.chunks(part.text)]
        deltas.append({"reasoningContent": {"signature": signature(part.text)}})
    else:
        start = {"toolUse": {"toolUseId": part.call_id, "name": part.name}}
        events.append(StreamEvent({"start": start, "contentBlockIndex": index}, "contentBlockStart"))
        deltas = [{"toolUse": {"input": piece}} for piece in reply.chunks(part.arguments_json())]
    events.extend(StreamEvent({"delta": d, "contentBlockIndex": index}, "contentBlockDelta") for d in deltas)
    events.append(StreamEvent({"contentBlockIndex": index}, "contentBlockStop"))
    return events


WIRE_FORMATS = (BedrockConverseFormat(),)
