"""OpenAI Chat Completions wire format (POST /v1/chat/completions), whole and streamed.

Streams follow the API reference: `chat.completion.chunk` objects, the role in the first delta,
tool calls announced with id/name then continued by `index` with argument fragments, a chunk
carrying `finish_reason`, a usage-only chunk (empty `choices`) when
`stream_options.include_usage` is set, then `data: [DONE]`. Reasoning is sent the way
OpenAI-compatible servers (vLLM, DeepSeek) do, as `reasoning_content`.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from chainform.testing.emulator._media import IMAGE_TYPES, MediaRefused, RecordedMedia, data_url, url_or_data
from chainform.testing.emulator._script import Fault, Reply, Usage
from chainform.testing.emulator._wire import (
    ERROR_TYPES,
    RecordedRequest,
    StreamEvent,
    WireFormat,
    leading_instructions,
)
from chainform.types import FunctionCallContent, TextReasoningContent

_ERROR_TYPES = {**ERROR_TYPES, 429: "rate_limit_exceeded"}


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_input_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
    }


def _call(call: FunctionCallContent) -> dict[str, Any]:
    return {
        "id": call.call_id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments_json()},
    }


class OpenAIChatFormat(WireFormat):
    name: ClassVar[str] = "openai-chat"
    routes: ClassVar[tuple[str, ...]] = (
        r"(?:/openai)?(?:/v1)?/chat/completions",
        r"/openai/deployments/(?P<deployment>[^/]+)/chat/completions",
    )

    def media(self, request: RecordedRequest) -> list[RecordedMedia]:
        """`image_url` parts (a data URL or an http(s) URL) and PDF `file` parts (filename and a
        data URL in file_data), in user messages only."""
        found = []
        for message in request.json.get("messages") or ():
            parts = message.get("content") if isinstance(message, dict) else None
            for part in parts if isinstance(parts, list) else ():
                kind = part.get("type") if isinstance(part, dict) else None
                if kind in ("image_url", "file") and message.get("role") != "user":
                    raise MediaRefused(f"{kind} parts are only allowed in user messages")
                if kind == "image_url":
                    item = url_or_data((part.get("image_url") or {}).get("url"), kind, "image_url")
                    if item.media_type is not None and item.media_type not in IMAGE_TYPES:
                        raise MediaRefused(f"image_url: unsupported image type {item.media_type}")
                    found.append(item)
                elif kind == "file":
                    file = part.get("file") or {}
                    if not file.get("filename"):
                        raise MediaRefused("file: filename is required with file_data")
                    media_type, data = data_url(file.get("file_data"), "file.file_data")
                    found.append(RecordedMedia(kind, media_type, data=data, name=file["filename"]))
        return found

    def _envelope(self, request: RecordedRequest, obj: str) -> dict[str, Any]:
        model = request.json.get("model") or request.path_params.get("deployment") or "emulated"
        return {
            "id": f"chatcmpl-emu{request.index}",
            "object": obj,
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": "fp_emulator",
        }

    def render(self, reply: Reply, request: RecordedRequest) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None, "refusal": None}
        if reply.calls:
            message["tool_calls"] = [_call(c) for c in reply.calls]
        if reply.reasoning:
            message["reasoning_content"] = reply.reasoning
        choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": reply.finish}
        assert reply.usage is not None
        return {
            **self._envelope(request, "chat.completion"),
            "choices": [choice],
            "usage": _usage(reply.usage),
        }

    def render_stream(self, reply: Reply, request: RecordedRequest) -> list[StreamEvent]:
        base = self._envelope(request, "chat.completion.chunk")
        include_usage = bool((request.json.get("stream_options") or {}).get("include_usage"))
        extra = {"usage": None} if include_usage else {}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> StreamEvent:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return StreamEvent({**base, "choices": [choice], **extra})

        events = [chunk({"role": "assistant", "content": "", "refusal": None})]
        call_index = 0
        for part in reply.parts:
            if isinstance(part, str):
                events.extend(chunk({"content": piece}) for piece in reply.chunks(part))
            elif isinstance(part, TextReasoningContent):
                events.extend(chunk({"reasoning_content": piece}) for piece in reply.chunks(part.text))
            else:
                head = {
                    "index": call_index,
                    "id": part.call_id,
                    "type": "function",
                    "function": {"name": part.name, "arguments": ""},
                }
                events.append(chunk({"tool_calls": [head]}))
                for piece in reply.chunks(part.arguments_json()):
                    fragment = {"index": call_index, "function": {"arguments": piece}}
                    events.append(chunk({"tool_calls": [fragment]}))
                call_index += 1
        events.append(chunk({}, reply.finish))
        if include_usage:
            assert reply.usage is not None
            events.append(StreamEvent({**base, "choices": [], "usage": _usage(reply.usage)}))
        events.append(StreamEvent("[DONE]"))
        return events

    def cache_prefixes(self, request: RecordedRequest) -> list[Any]:
        """With a prompt_cache_key: the key, the tools and the leading system messages (what
        OpenAI's automatic cache would find again for requests routed together by the key)."""
        body = request.json
        if not body.get("prompt_cache_key"):
            return []
        return [leading_instructions(body, "messages")]

    def render_error(self, fault: Fault, request: RecordedRequest) -> dict[str, Any]:
        kind = _ERROR_TYPES.get(fault.status, "server_error" if fault.status >= 500 else "api_error")
        return {"error": {"message": fault.text, "type": kind, "param": None, "code": kind}}


WIRE_FORMATS = (OpenAIChatFormat(),)
