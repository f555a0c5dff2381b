"""OpenAI Responses wire format (POST /v1/responses), whole and streamed.

Output items follow the API reference: `reasoning` (summary text), `message` (one
`output_text` part) and `function_call` (call_id, name, arguments string). A stream opens with
`response.created` / `response.in_progress`, announces each item with `response.output_item.added`,
sends its deltas (`response.output_text.delta`, `response.function_call_arguments.delta`,
`response.reasoning_summary_text.delta`) and their `.done` events, and closes with
`response.completed` (or `response.incomplete` for a length/content-filter finish) carrying usage.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from chainform.testing.emulator._media import IMAGE_TYPES, MediaRefused, RecordedMedia, data_url, url_or_data
from chainform.testing.emulator._script import Fault, Reply, Usage
from chainform.testing.emulator._wire import RecordedRequest, StreamEvent, WireFormat, leading_instructions
from chainform.types import FunctionCallContent, TextReasoningContent

_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


def _usage(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_input_tokens, "cache_write_tokens": 0},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    }


def _items(reply: Reply, request: RecordedRequest) -> list[dict[str, Any]]:
    """Completed output items; adjacent text parts form one message."""
    items: list[dict[str, Any]] = []
    for n, part in enumerate(reply.parts):
        item_id = f"{request.index}_{n}"
        if isinstance(part, str):
            if items and items[-1]["type"] == "message":
                items[-1]["content"][0]["text"] += part
                continue
            text = {"type": "output_text", "text": part, "annotations": [], "logprobs": []}
            items.append(
                {
                    "id": f"msg_{item_id}",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [text],
                }
            )
        elif isinstance(part, TextReasoningContent):
            summary = [{"type": "summary_text", "text": part.text}]
            items.append({"id": f"rs_{item_id}", "type": "reasoning", "summary": summary})
        else:
            items.append(_function_call(part, f"fc_{item_id}"))
    return items


def _function_call(call: FunctionCallContent, item_id: str) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "function_call",
        "call_id": call.call_id,
        "name": call.name,
        "arguments": call.arguments_json(),
        "status": "completed",
    }


class OpenAIResponsesFormat(WireFormat):
    name: ClassVar[str] = "openai-responses"
    routes: ClassVar[tuple[str, ...]] = (r"(?:/openai)?(?:/v1)?/responses",)

    def media(self, request: RecordedRequest) -> list[RecordedMedia]:
        """`input_image` (image_url: data or http(s) URL) and `input_file` (filename + file_data
        data URL, or file_url) parts of the input items."""
        found = []
        items = request.json.get("input")
        for item in items if isinstance(items, list) else ():
            parts = item.get("content") if isinstance(item, dict) else None
            for part in parts if isinstance(parts, list) else ():
                kind = part.get("type") if isinstance(part, dict) else None
                if kind == "input_image":
                    media = url_or_data(part.get("image_url"), kind, "input_image.image_url")
                    if media.media_type is not None and media.media_type not in IMAGE_TYPES:
                        raise MediaRefused(f"input_image: unsupported image type {media.media_type}")
                    found.append(media)
                elif kind == "input_file" and part.get("file_url"):
                    found.append(RecordedMedia(kind, None, url=part["file_url"]))
                elif kind == "input_file":
                    if not part.get("filename"):
                        raise MediaRefused("input_file: filename is required with file_data")
                    media_type, data = data_url(part.get("file_data"), "input_file.file_data")
                    found.append(RecordedMedia(kind, media_type, data=data, name=part["filename"]))
        return found

    def _response(
        self, reply: Reply, request: RecordedRequest, output: list[dict[str, Any]], done: bool
    ) -> dict[str, Any]:
        body = request.json
        incomplete = _INCOMPLETE.get(reply.finish)
        status = ("incomplete" if incomplete else "completed") if done else "in_progress"
        assert reply.usage is not None
        return {
            "id": f"resp_emu{request.index}",
            "object": "response",
            "created_at": int(time.time()),
            "status": status,
            "model": body.get("model", "emulated"),
            "output": output,
            "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools", []),
            "text": body.get("text", {"format": {"type": "text"}}),
            "error": None,
            "incomplete_details": {"reason": incomplete} if done and incomplete else None,
            "usage": _usage(reply.usage) if done else None,
        }

    def cache_prefixes(self, request: RecordedRequest) -> list[Any]:
        """With a prompt_cache_key: the key, tools, instructions and leading system items."""
        body = request.json
        return [leading_instructions(body, "input")] if body.get("prompt_cache_key") else []

    def render(self, reply: Reply, request: RecordedRequest) -> dict[str, Any]:
        return self._response(reply, request, _items(reply, request), done=True)

    def render_stream(self, reply: Reply, request: RecordedRequest) -> list[StreamEvent]:
        events: list[StreamEvent] = []

        def emit(kind: str, **fields: Any) -> None:
            events.append(StreamEvent({"type": kind, "sequence_number": len(events), **fields}, event=kind))

        emit("response.created", response=self._response(reply, request, [], done=False))
        emit("response.in_progress", response=self._response(reply, request, [], done=False))
        items = _items(reply, request)
        for index, item in enumerate(items):
            at = {"item_id": item["id"], "output_index": index}
            if item["type"] == "message":
                text = item["content"][0]["text"]
                emit("response.output_item.added", output_index=index, item={**item, "content": []})
                part = {"type": "output_text", "text": "", "annotations": []}
                emit("response.content_part.added", **at, content_index=0, part=part)
                for piece in reply.chunks(text):
                    emit("response.output_text.delta", **at, content_index=0, delta=piece, logprobs=[])
                emit("response.output_text.done", **at, content_index=0, text=text, logprobs=[])
                emit("response.content_part.done", **at, content_index=0, part=item["content"][0])
            elif item["type"] == "reasoning":
                text = item["summary"][0]["text"]
                emit("response.output_item.added", output_index=index, item={**item, "summary": []})
                blank = {"type": "summary_text", "text": ""}
                emit("response.reasoning_summary_part.added", **at, summary_index=0, part=blank)
                for piece in reply.chunks(text):
                    emit("response.reasoning_summary_text.delta", **at, summary_index=0, delta=piece)
                emit("response.reasoning_summary_text.done", **at, summary_index=0, text=text)
                emit("response.reasoning_summary_part.done", **at, summary_index=0, part=item["summary"][0])
            else:
                opened = {**item, "arguments": "", "status": "in_progress"}
                emit("response.output_item.added", output_index=index, item=opened)
                for piece in reply.chunks(item["arguments"]):
                    emit("response.function_call_arguments.delta", **at, delta=piece)
                emit("response.function_call_arguments.done", **at, arguments=item["arguments"])
            emit("response.output_item.done", output_index=index, item=item)
        final = self._response(reply, request, items, done=True)
        emit(
            "response.incomplete" if final["status"] == "incomplete" else "response.completed", response=final
        )
        return events

    def render_error(self, fault: Fault, request: RecordedRequest) -> dict[str, Any]:
        kind = "server_error" if fault.status >= 500 else "invalid_request_error"
        if fault.status == 429:
            kind = "rate_limit_exceeded"
        return {"error": {"message": fault.text, "type": kind, "param": None, "code": kind}}


WIRE_FORMATS = (OpenAIResponsesFormat(),)
