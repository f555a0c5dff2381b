"""What a recorded provider answer says, read straight from its body (JSON or stream bytes) by
this module alone, never by chainform's parsers: the replay test holds chainform's reading to it.

One reader per wire format. Each gives an `Expected` in chainform's vocabulary: the answer's
text, reasoning, tool calls (id, name, arguments), refusal, usage (input as billed: the cache
reads and writes included, as chainform reports it) and finish reason.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

FINISH = {  # every provider's stop reasons in chainform's words
    "stop": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "STOP": "stop",
    "completed": "stop",
    "length": "length",
    "max_tokens": "length",
    "MAX_TOKENS": "length",
    "max_output_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "tool_use": "tool_calls",
    "content_filter": "content_filter",
    "refusal": "content_filter",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "MODEL_ARMOR": "content_filter",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}


@dataclass
class Call:
    call_id: str | None  # None: the provider sent none (chainform makes one up)
    name: str
    arguments: Any  # the parsed JSON, or the raw text when it is not JSON


@dataclass
class Expected:
    text: str = ""
    reasoning: str = ""
    calls: list[Call] = field(default_factory=list)
    refusal: str = ""
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    finish: str | None = None


def _args(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw if raw is not None else {}
    if not raw.strip():
        return {}
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _finish(reason: Any) -> str | None:
    if not reason:
        return None
    return FINISH.get(str(reason), str(reason).lower())


def sse_data(body: bytes) -> Iterator[tuple[str | None, Any]]:
    """(event name, parsed data) of each server-sent event; `[DONE]` and comments skipped."""
    text = body.decode("utf-8")
    for block in text.replace("\r\n", "\n").split("\n\n"):
        event, data = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
        payload = "\n".join(data)
        if payload and payload != "[DONE]":
            yield event, json.loads(payload)


def aws_events(body: bytes) -> Iterator[tuple[str, Any]]:
    """(`:event-type`, parsed payload) of each AWS event-stream frame: total length, headers
    length, prelude CRC, headers (name, type 7 = string value), payload, message CRC."""
    at = 0
    while at + 12 <= len(body):
        total, header_len = struct.unpack_from(">II", body, at)
        headers, pos, end = {}, at + 12, at + 12 + header_len
        while pos < end:
            name_len = body[pos]
            name = body[pos + 1 : pos + 1 + name_len].decode()
            pos += 1 + name_len
            kind = body[pos]
            pos += 1
            assert kind == 7, f"header type {kind}"
            (value_len,) = struct.unpack_from(">H", body, pos)
            headers[name] = body[pos + 2 : pos + 2 + value_len].decode()
            pos += 2 + value_len
        payload = body[end : at + total - 4]
        yield headers.get(":event-type") or headers.get(":exception-type", ""), json.loads(payload)
        at += total


# --- OpenAI Chat Completions (and every compatible server) -------------------------------------


def _chat_content(content: Any, out: Expected) -> None:
    if isinstance(content, str):
        out.text += content
        return
    for part in content or ():
        if part.get("type") == "text":
            out.text += part.get("text") or ""
        elif part.get("type") in ("thinking", "reasoning"):
            inner = part.get("thinking", part.get("text"))
            pieces = inner if isinstance(inner, list) else [{"text": inner}]
            out.reasoning += "".join(p.get("text") or "" for p in pieces)


def _chat_usage(usage: dict[str, Any] | None, out: Expected) -> None:
    if not usage:
        return
    out.input_tokens = usage.get("prompt_tokens")
    out.output_tokens = usage.get("completion_tokens")
    out.cached_tokens = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    out.reasoning_tokens = (usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0


def chat(body: Any, streamed: bool) -> Expected:
    out = Expected()
    chunks = [data for _, data in sse_data(body)] if streamed else [body]
    calls: dict[int, list[str]] = {}
    for chunk in chunks:
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0):
                continue
            delta = choice.get("delta" if streamed else "message") or {}
            out.reasoning += delta.get("reasoning_content") or delta.get("reasoning") or ""
            _chat_content(delta.get("content"), out)
            out.refusal += delta.get("refusal") or ""
            for position, call in enumerate(delta.get("tool_calls") or ()):
                slot = calls.setdefault(call.get("index", position), ["", "", ""])
                function = call.get("function") or {}
                slot[0] = slot[0] or call.get("id") or ""
                slot[1] = slot[1] or function.get("name") or ""
                slot[2] += function.get("arguments") or ""
            out.finish = _finish(choice.get("finish_reason")) or out.finish
        _chat_usage(chunk.get("usage"), out)
    out.calls = [Call(i or None, n, _args(a)) for i, n, a in (calls[k] for k in sorted(calls))]
    return out


# --- OpenAI Responses ----------------------------------------------------------------------------


def _responses_output(items: Any, out: Expected) -> None:
    for item in items or ():
        kind = item.get("type")
        if kind == "message":
            for part in item.get("content") or ():
                if part.get("type") == "output_text":
                    out.text += part.get("text") or ""
                elif part.get("type") == "refusal":
                    out.refusal += part.get("refusal") or ""
        elif kind == "function_call":
            out.calls.append(Call(item.get("call_id"), item.get("name") or "", _args(item.get("arguments"))))
        elif kind == "reasoning":
            out.reasoning += "".join(s.get("text") or "" for s in item.get("summary") or ())
            out.reasoning += "".join(c.get("text") or "" for c in item.get("content") or ())


def _responses_end(response: dict[str, Any], out: Expected) -> None:
    usage = response.get("usage") or {}
    if usage:
        out.input_tokens, out.output_tokens = usage.get("input_tokens"), usage.get("output_tokens")
        out.cached_tokens = (usage.get("input_tokens_details") or {}).get("cached_tokens") or 0
        out.reasoning_tokens = (usage.get("output_tokens_details") or {}).get("reasoning_tokens") or 0
    incomplete = (response.get("incomplete_details") or {}).get("reason")
    if incomplete:
        out.finish = _finish(incomplete)
    else:
        out.finish = "tool_calls" if out.calls else "stop"


def responses(body: Any, streamed: bool) -> Expected:
    out = Expected()
    if not streamed:
        _responses_output(body.get("output"), out)
        _responses_end(body, out)
        return out
    done: list[dict[str, Any]] = []
    for _, event in sse_data(body):
        kind = event.get("type")
        if kind == "response.output_item.done":
            done.append(event["item"])
        elif kind in ("response.completed", "response.incomplete"):
            _responses_output(done, out)
            _responses_end(event["response"], out)
    return out


# --- Anthropic Messages --------------------------------------------------------------------------


def _anthropic_usage(usage: dict[str, Any], out: Expected) -> None:
    read = usage.get("cache_read_input_tokens") or 0
    written = usage.get("cache_creation_input_tokens") or 0
    out.input_tokens = (usage.get("input_tokens") or 0) + read + written
    out.output_tokens = usage.get("output_tokens")
    out.cached_tokens = read


def _anthropic_block(block: dict[str, Any], out: Expected) -> None:
    kind = block.get("type")
    if kind == "text":
        out.text += block.get("text") or ""
    elif kind == "thinking":
        out.reasoning += block.get("thinking") or ""
    elif kind == "tool_use":  # server_tool_use and mcp_tool_use run at Anthropic: no call for us
        out.calls.append(Call(block.get("id"), block.get("name") or "", block.get("input")))


def anthropic(body: Any, streamed: bool) -> Expected:
    out = Expected()
    if not streamed:
        for block in body.get("content") or ():
            _anthropic_block(block, out)
        _anthropic_usage(body.get("usage") or {}, out)
        out.finish = _finish(body.get("stop_reason"))
        return out
    blocks: dict[int, dict[str, Any]] = {}
    pieces: dict[int, list[str]] = {}
    usage: dict[str, Any] = {}
    for _, event in sse_data(body):
        kind = event.get("type")
        if kind == "message_start":
            usage.update(event["message"].get("usage") or {})
        elif kind == "content_block_start":
            blocks[event["index"]] = dict(event["content_block"])
            pieces[event["index"]] = []
        elif kind == "content_block_delta":
            block, delta = blocks[event["index"]], event["delta"]
            if delta["type"] == "text_delta":
                block["text"] = (block.get("text") or "") + delta["text"]
            elif delta["type"] == "thinking_delta":
                block["thinking"] = (block.get("thinking") or "") + delta["thinking"]
            elif delta["type"] == "input_json_delta":
                pieces[event["index"]].append(delta["partial_json"])
        elif kind == "message_delta":
            usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
            out.finish = _finish(event["delta"].get("stop_reason"))
    for index in sorted(blocks):
        if pieces[index]:
            blocks[index]["input"] = _args("".join(pieces[index]))
        _anthropic_block(blocks[index], out)
    _anthropic_usage(usage, out)
    return out


# --- Gemini generateContent ------------------------------------------------------------------------


def gemini(body: Any, streamed: bool) -> Expected:
    out = Expected()
    chunks = [data for _, data in sse_data(body)] if streamed else [body]
    usage: dict[str, Any] = {}
    for chunk in chunks:
        usage = chunk.get("usageMetadata") or usage
        if (chunk.get("promptFeedback") or {}).get("blockReason"):
            out.finish = "content_filter"
        for candidate in (chunk.get("candidates") or ())[:1]:
            out.finish = _finish(candidate.get("finishReason")) or out.finish
            for part in (candidate.get("content") or {}).get("parts") or ():
                if "functionCall" in part:
                    call = part["functionCall"]
                    out.calls.append(Call(call.get("id"), call.get("name") or "", call.get("args") or {}))
                elif part.get("text"):
                    if part.get("thought"):
                        out.reasoning += part["text"]
                    else:
                        out.text += part["text"]
    if out.finish == "stop" and out.calls:
        out.finish = "tool_calls"
    if usage:
        thoughts = usage.get("thoughtsTokenCount") or 0
        out.input_tokens = (usage.get("promptTokenCount") or 0) + (usage.get("toolUsePromptTokenCount") or 0)
        out.output_tokens = (usage.get("candidatesTokenCount") or 0) + thoughts
        out.cached_tokens = usage.get("cachedContentTokenCount") or 0
        out.reasoning_tokens = thoughts
    return out


# --- Bedrock Converse --------------------------------------------------------------------------------


def _bedrock_usage(usage: dict[str, Any], out: Expected) -> None:
    read, written = usage.get("cacheReadInputTokens") or 0, usage.get("cacheWriteInputTokens") or 0
    out.input_tokens = (usage.get("inputTokens") or 0) + read + written
    out.output_tokens = usage.get("outputTokens") or 0
    out.cached_tokens = read


def _bedrock_block(block: dict[str, Any], out: Expected) -> None:
    if "text" in block:
        out.text += block["text"]
    elif (
        "toolUse" in block and block["toolUse"].get("type") != "server_tool_use"
    ):  # a system tool ran at Bedrock
        tool = block["toolUse"]
        out.calls.append(Call(tool["toolUseId"], tool["name"], _args(tool.get("input"))))
    elif "reasoningContent" in block:
        out.reasoning += ((block["reasoningContent"].get("reasoningText") or {}).get("text")) or ""


def bedrock(body: Any, streamed: bool) -> Expected:
    out = Expected()
    if not streamed:
        for block in ((body.get("output") or {}).get("message") or {}).get("content") or ():
            _bedrock_block(block, out)
        _bedrock_usage(body.get("usage") or {}, out)
        out.finish = _finish(body.get("stopReason"))
        return out
    blocks: dict[int, dict[str, Any]] = {}
    for kind, event in aws_events(body):
        index = event.get("contentBlockIndex", 0)
        if kind == "contentBlockStart" and "toolUse" in (event.get("start") or {}):
            blocks[index] = {"toolUse": {**event["start"]["toolUse"], "input": ""}}
        elif kind == "contentBlockDelta":
            delta = event["delta"]
            block = blocks.setdefault(index, {})
            if "text" in delta:
                block["text"] = block.get("text", "") + delta["text"]
            elif "toolUse" in delta:
                block["toolUse"]["input"] += delta["toolUse"].get("input") or ""
            elif "reasoningText" in (delta.get("reasoningContent") or {}) or "text" in (
                delta.get("reasoningContent") or {}
            ):
                thought = delta["reasoningContent"].get("text", "")
                block.setdefault("reasoningContent", {"reasoningText": {"text": ""}})
                block["reasoningContent"]["reasoningText"]["text"] += thought
        elif kind == "messageStop":
            out.finish = _finish(event.get("stopReason"))
        elif kind == "metadata":
            _bedrock_usage(event.get("usage") or {}, out)
    for index in sorted(blocks):
        _bedrock_block(blocks[index], out)
    return out


READERS: dict[str, Callable[[Any, bool], Expected]] = {
    "chat": chat,
    "responses": responses,
    "anthropic": anthropic,
    "gemini": gemini,
    "bedrock": bedrock,
}
