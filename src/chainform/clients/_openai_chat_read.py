"""Reading a Chat Completions answer: a whole completion or a stream's chunks, as the JSON's
own dicts, by one translation (a chunk's `delta` is a completion's `message`).

Kept apart from the adapter, which builds requests: this side is what a server says back, and
what a hostile or merely different server (content part lists, odd field types) may say.
"""

from __future__ import annotations

from typing import Any

from pydantic_core import from_json

from chainform import types
from chainform.clients import _wire
from chainform.clients._errors import StreamGuard
from chainform.clients._openai import OPENAI_FINISH, request_id
from chainform.clients._wire import StreamState

_EVENT_STREAM_STARTS = (b"data:", b"event:", b"id:", b":")


def read_whole(response: Any, guard: StreamGuard) -> dict[str, Any] | None:
    """A whole call's completion as the JSON's own dicts (pydantic_core: no SDK model is built);
    None when the server answered with an event stream (by its content type, or a body in SSE
    form under another one). A body that is not a JSON object with a `choices` list is the typed
    error of a malformed answer (a stream's bad event gives the same kind)."""
    headers = response.headers
    if headers.get("content-type", "").startswith("text/event-stream"):
        return None
    body: bytes = response.content
    try:
        completion = from_json(body)
    except ValueError as exc:
        if body[:64].lstrip().startswith(_EVENT_STREAM_STARTS):
            return None
        problem = f"not JSON ({exc})"
    else:
        if isinstance(completion, dict) and isinstance(completion.get("choices"), list):
            return completion
        problem = "a JSON object with a choices list expected"
    raise guard.error(
        f"malformed response body: {problem}", request_id=request_id(headers), interrupted=False
    )


def translate_chunk(chunk: Any, refusal: list[str]) -> list[types.ChatResponseUpdate]:
    """One chunk of a stream, or a whole completion, as updates (text, reasoning, tool calls, usage).

    Both arrive as the JSON's own dicts (a stream's events as the SDK decoded them, a whole body
    parsed by pydantic_core), so one translation serves both and no SDK model is built: a chunk's
    `delta` is a completion's `message`, and a completion's calls, which carry no `index`, are
    indexed by position. Shapes are checked as read: a hostile server's odd field is dropped, not
    a crash.
    """
    chunk = _mapping(chunk)
    contents: list[types.Content] = []
    reason = None
    choices = chunk.get("choices")
    for choice in choices if isinstance(choices, list) else ():
        choice = _mapping(choice)
        if choice.get("index"):  # only the first choice is a chainform response
            continue
        delta = _mapping(choice.get("delta") or choice.get("message"))
        if thought := _text(delta.get("reasoning_content") or delta.get("reasoning")):
            contents.append(types.TextReasoningContent(thought))
        contents.extend(_content_parts(delta.get("content")))
        if text := _text(delta.get("refusal")):
            refusal.append(text)
        calls = delta.get("tool_calls")
        for position, call in enumerate(calls if isinstance(calls, list) else ()):
            call = _mapping(call)
            fn = _mapping(call.get("function"))
            index = call.get("index")
            contents.append(
                types.FunctionCallContent(
                    _text(call.get("id")),
                    _text(fn.get("name")),
                    raw_arguments=_text(fn.get("arguments")),
                    index=index if isinstance(index, int) else position,
                )
            )
        reason = _wire.finish_reason(_text(choice.get("finish_reason")), OPENAI_FINISH) or reason
    usage = chunk.get("usage")
    if isinstance(usage, dict):
        cached = _mapping(usage.get("prompt_tokens_details")).get("cached_tokens")
        reasoning = _mapping(usage.get("completion_tokens_details")).get("reasoning_tokens")
        details = _wire.usage_details(
            _count(usage.get("prompt_tokens")),
            _count(usage.get("completion_tokens")),
            _count(usage.get("total_tokens")),
            cache_read=_count(cached),
            reasoning=_count(reasoning),
        )
        contents.append(types.UsageContent(details))
    if not contents and reason is None:
        return []
    state = StreamState(_text(chunk.get("model")) or None)
    state.response_id = _text(chunk.get("id")) or None
    created = chunk.get("created")
    when = float(created) if isinstance(created, int | float) and created else None
    return [state.update(contents, finish_reason=reason, created_at=when, raw_representation=chunk)]


def _content_parts(content: Any) -> list[types.Content]:
    """A message's `content`: a string, or (Mistral and others) a list of parts read one by one:
    `text` parts are text, `thinking` parts (their own text or a list of text parts) reasoning."""
    if isinstance(content, str):
        return [types.TextContent(content)] if content else []
    out: list[types.Content] = []
    for part in content if isinstance(content, list) else ():
        part = _mapping(part)
        kind = part.get("type")
        if kind == "text" and (text := _text(part.get("text"))):
            out.append(types.TextContent(text))
        elif kind in ("thinking", "reasoning"):
            inner = part.get("thinking", part.get("text"))
            pieces = inner if isinstance(inner, list) else [{"text": inner}]
            if thought := "".join(_text(_mapping(p).get("text")) for p in pieces):
                out.append(types.TextReasoningContent(thought))
    return out


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) else None
