"""Gemini generateContent wire format: `POST /v1beta/models/{model}:generateContent` and
`:streamGenerateContent?alt=sse`.

As the API does: function calls arrive whole (no argument fragments) and without ids, thoughts are
text parts flagged `thought: true`, a reply that thinks carries a `thoughtSignature` on its first
function call (or last text) part, `finishReason` is STOP even when functions are called, and
usage counts thinking apart (`thoughtsTokenCount`) from `candidatesTokenCount`. A stream sends
text in pieces and puts the finish reason and usage on its last chunk.
"""

from __future__ import annotations

import base64
from typing import Any, ClassVar

from chainform.testing.emulator._media import MediaRefused, RecordedMedia, decode
from chainform.testing.emulator._script import Fault, Reply, Usage
from chainform.testing.emulator._wire import RecordedRequest, StreamEvent, WireFormat
from chainform.types import FunctionCallContent, TextReasoningContent

_FINISH = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS", "content_filter": "SAFETY"}
_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_MODEL = r"(?P<model>[^/:]+)"


def thought_signature(request: RecordedRequest) -> str:
    """The deterministic signature the emulator attaches to a reply that thinks."""
    return base64.b64encode(f"emu-thought:{request.index}".encode()).decode("ascii")


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": usage.output_tokens - usage.reasoning_tokens,
        "thoughtsTokenCount": usage.reasoning_tokens,
        "cachedContentTokenCount": usage.cached_input_tokens,
        "totalTokenCount": usage.total_tokens,
    }


class GeminiFormat(WireFormat):
    name: ClassVar[str] = "gemini"
    routes: ClassVar[tuple[str, ...]] = (
        rf"/v1(?:beta|alpha)?/models/{_MODEL}:generateContent",
        rf"/v1(?:beta|alpha)?/models/{_MODEL}:streamGenerateContent",
    )
    request_id_header: ClassVar[str] = "x-request-id"

    def media(self, request: RecordedRequest) -> list[RecordedMedia]:
        """`inlineData` (mimeType + base64 data) and `fileData` (mimeType + fileUri) parts, in
        either case (the SDK writes some snake_case)."""
        found = []
        for content in request.json.get("contents") or ():
            for part in (content.get("parts") if isinstance(content, dict) else None) or ():
                inline = part.get("inlineData") or part.get("inline_data")
                file = part.get("fileData") or part.get("file_data")
                if inline is not None:
                    media_type = inline.get("mimeType") or inline.get("mime_type")
                    if not media_type:
                        raise MediaRefused("inlineData: mimeType is required")
                    found.append(
                        RecordedMedia(
                            "inline_data",
                            media_type,
                            decode(inline.get("data"), "inlineData.data", urlsafe=True),
                        )
                    )
                elif file is not None:
                    uri = file.get("fileUri") or file.get("file_uri")
                    if not uri:
                        raise MediaRefused("fileData: fileUri is required")
                    found.append(
                        RecordedMedia("file_data", file.get("mimeType") or file.get("mime_type"), url=uri)
                    )
        return found

    def is_stream(self, request: RecordedRequest) -> bool:
        return request.path.endswith(":streamGenerateContent")

    def _parts(self, reply: Reply, request: RecordedRequest, *, chunked: bool) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        for part in reply.parts:
            if isinstance(part, FunctionCallContent):
                parts.append({"functionCall": {"name": part.name, "args": part.arguments or {}}})
                continue
            text, thought = (part.text, True) if isinstance(part, TextReasoningContent) else (part, False)
            for piece in reply.chunks(text) if chunked else [text]:
                parts.append({"text": piece, "thought": True} if thought else {"text": piece})
        if reply.reasoning:
            target = next((p for p in parts if "functionCall" in p), None)
            target = target or next((p for p in reversed(parts) if not p.get("thought")), None)
            if target is not None:
                target["thoughtSignature"] = thought_signature(request)
        return parts

    def _envelope(self, request: RecordedRequest) -> dict[str, Any]:
        return {
            "modelVersion": request.path_params.get("model", "emulated"),
            "responseId": f"emu-{request.index}",
        }

    def render(self, reply: Reply, request: RecordedRequest) -> dict[str, Any]:
        assert reply.usage is not None
        candidate = {
            "content": {"role": "model", "parts": self._parts(reply, request, chunked=False)},
            "finishReason": _FINISH.get(reply.finish, reply.finish.upper()),
            "index": 0,
        }
        return {"candidates": [candidate], "usageMetadata": _usage(reply.usage), **self._envelope(request)}

    def render_stream(self, reply: Reply, request: RecordedRequest) -> list[StreamEvent]:
        assert reply.usage is not None
        parts = self._parts(reply, request, chunked=True) or [{"text": ""}]
        events = []
        for n, part in enumerate(parts):
            candidate: dict[str, Any] = {"content": {"role": "model", "parts": [part]}, "index": 0}
            chunk: dict[str, Any] = {"candidates": [candidate], **self._envelope(request)}
            if n == len(parts) - 1:
                candidate["finishReason"] = _FINISH.get(reply.finish, reply.finish.upper())
                chunk["usageMetadata"] = _usage(reply.usage)
            events.append(StreamEvent(chunk))
        return events

    def render_error(self, fault: Fault, request: RecordedRequest) -> dict[str, Any]:
        status = _STATUS.get(fault.status, "INTERNAL" if fault.status >= 500 else "FAILED_PRECONDITION")
        return {"error": {"code": fault.status, "message": fault.text, "status": status}}


WIRE_FORMATS = (GeminiFormat(),)
