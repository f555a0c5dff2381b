"""A loopback OpenAI-compatible server with no think time, for the chain-overhead benchmark.

Two back ends answer with the same logic (`decide`): `fast`, a minimal asyncio HTTP/1.1 server
written for this benchmark, and `emulator`, chainform's own test emulator
(chainform.testing.emulator). Both run in their own process so their CPU time is not charged to
the client being measured (the machine has 2 cores: one for the client, one for the server).

    python bench/loopback.py fast        # prints "PORT <n>" then serves until killed
    python bench/loopback.py fast 0.2    # the same, each reply 200 ms late (a model's think time)
    python bench/loopback.py big FILE    # answers every request with the SSE body in FILE
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
from typing import Any

ANSWER = {"city": "Paris", "temp_c": 21.5}
_ids = itertools.count(1)


def decide(body: dict[str, Any]) -> tuple[str, str, str]:
    """("text", content, "") or ("call", tool name, arguments JSON) for a chat request.

    First turn: call the first tool. After a tool result: answer, as JSON when a response
    format asks for it, through the framework's output tool when one is offered, else in words.
    """
    messages = body.get("messages") or []
    tools = [t.get("function", {}).get("name", "") for t in body.get("tools") or []]
    after_tool = bool(messages) and messages[-1].get("role") == "tool"
    if not after_tool and tools:
        return ("call", tools[0], json.dumps({"city": "Paris"}))
    fmt = body.get("response_format") or {}
    if fmt.get("type") in ("json_schema", "json_object"):
        return ("text", json.dumps(ANSWER), "")
    if len(tools) > 1:  # an output tool beside get_weather (pydantic-ai's final_result, ...)
        return ("call", tools[-1], json.dumps(ANSWER))
    return ("text", "It is 21.5 C in Paris, sunny.", "")


def _usage() -> dict[str, int]:
    return {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30}


def render(body: dict[str, Any]) -> tuple[bytes, str]:
    """The HTTP body and content type for a request, streamed (SSE) or whole."""
    kind, a, b = decide(body)
    rid = f"chatcmpl-{next(_ids)}"
    base = {"id": rid, "created": int(time.time()), "model": body.get("model", "m")}
    if kind == "call":
        call = {"id": f"call_{rid}", "type": "function", "function": {"name": a, "arguments": b}}
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        message = {"role": "assistant", "content": a}
        finish = "stop"
    if not body.get("stream"):
        whole = {
            **base,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": _usage(),
        }
        return json.dumps(whole).encode(), "application/json"
    delta = dict(message)
    if kind == "call":
        delta["tool_calls"] = [{**message["tool_calls"][0], "index": 0}]
    chunks = [
        {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
    ]
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append({"choices": [], "usage": _usage()})
    events = [f"data: {json.dumps({**base, 'object': 'chat.completion.chunk', **c})}\n\n" for c in chunks]
    return ("".join(events) + "data: [DONE]\n\n").encode(), "text/event-stream"


_DELAY = 0.0
_FIXED: tuple[bytes, str] | None = None  # `big`: one pre-rendered reply for every request


async def _handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            raw = await reader.readexactly(length) if length else b""
            data, ctype = _FIXED or render(json.loads(raw) if raw else {})
            if _DELAY:
                await asyncio.sleep(_DELAY)
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: "
                + ctype.encode()
                + b"\r\nContent-Length: "
                + str(len(data)).encode()
                + b"\r\nConnection: keep-alive\r\n\r\n"
                + data
            )
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def _serve_fast() -> None:
    server = await asyncio.start_server(_handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    async with server:
        await server.serve_forever()


def _serve_emulator() -> None:
    from chainform.testing import tool_call
    from chainform.testing.emulator import Emulator, RecordedRequest

    def reply(request: RecordedRequest) -> Any:
        kind, a, b = decide(request.json)
        request.raw_body = b""  # the emulator keeps every request; keep that small
        return tool_call(a, **json.loads(b)) if kind == "call" else a

    emu = Emulator([reply] * 200_000).start()
    print(f"PORT {emu.port}", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    if sys.argv[1:2] == ["fast"] and len(sys.argv) <= 3:
        _DELAY = float(sys.argv[2]) if len(sys.argv) == 3 else 0.0
        asyncio.run(_serve_fast())
    elif sys.argv[1:] == ["emulator"]:
        _serve_emulator()
    elif len(sys.argv) == 3 and sys.argv[1] == "big":
        with open(sys.argv[2], "rb") as body:
            _FIXED = (body.read(), "text/event-stream")
        asyncio.run(_serve_fast())
    else:
        sys.exit("usage: loopback.py fast [DELAY_SECONDS] | emulator | big FILE")
