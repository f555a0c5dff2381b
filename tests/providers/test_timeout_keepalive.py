"""The read timeout is the server's silence, counted in bytes, not events (issue 28 item 2): a
server that sends SSE keep-alive comments (which the SDK never hands on as events) for longer than
the read timeout before its first token is not silent, and the call goes on; one that sends
nothing for as long is cut.

The official openai SDK, its HTTP client carrying chainform's hooks as the adapter builds it, over an
in-process transport answering Chat Completions, all on virtual time (virtual_time.py): a ping every
0.05 s for 4 s of thinking, under a read timeout of 3 s; the thinking outlasts connect + read
(0.1 + 3 s). No real second passes and no machine load can turn a ping's gap into silence. That
each SDK's own socket timeout fires in real time is the conformance suite's
`test_timeout_is_retried_then_typed`."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import httpx2
import openai
import pytest

import chainform as cf
from chainform.clients._hooks import SdkHooks, attach
from chainform.clients._openai import ClientSettings
from chainform.clients.openai_chat import OpenAIChatClient
from chainform.types import Message, Timeout
from virtual_time import VirtualTime

READ = 3.0  # seconds: the read timeout of both tests
TIMEOUT = Timeout(0.1, READ)
CHUNK = {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": []}


def _event(delta: dict[str, object], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return b"data: " + json.dumps({**CHUNK, "choices": [choice]}).encode() + b"\n\n"


def _slow_server(keepalive: bool) -> httpx2.MockTransport:
    """4 s of thinking before the first token: ": ping" comments every 0.05 s, or nothing."""

    async def body() -> AsyncIterator[bytes]:
        for _ in range(80):
            await asyncio.sleep(0.05)
            if keepalive:
                yield b": ping\n\n"
        yield _event({"role": "assistant", "content": "thought "})
        yield _event({"content": "long"}, "stop")
        yield b"data: [DONE]\n\n"

    async def answer(request: httpx2.Request) -> httpx2.Response:
        await request.aread()
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    return httpx2.MockTransport(answer)


def _client(keepalive: bool) -> OpenAIChatClient:
    """The chat adapter with the SDK as `_openai.build_sdk` makes it (the same timeouts, the idle
    clock's hooks), its transport in-process."""
    hooks = SdkHooks()
    sdk = openai.AsyncOpenAI(
        api_key="sk-t",
        base_url="http://slow.test/v1",
        max_retries=0,
        timeout=openai.Timeout(TIMEOUT.read, connect=TIMEOUT.connect),
        http_client=openai.DefaultAsyncHttpxClient(
            transport=_slow_server(keepalive), event_hooks=hooks.clocks.http_hooks()
        ),
    )
    attach(sdk, hooks)  # as `_openai.build_sdk` hands it to the adapter
    settings = ClientSettings(provider="openai", key="sk-t", max_retries=0, timeout=TIMEOUT)
    return OpenAIChatClient("m", settings=settings, sdk_client=sdk)


async def _text(client: OpenAIChatClient) -> str:
    try:
        return "".join([u.text async for u in client.get_streaming_response([Message.user("x")])])
    finally:
        await client.aclose()


def test_keepalive_comments_keep_a_slow_first_token_alive(virtual: VirtualTime) -> None:
    assert virtual.run(_text(_client(keepalive=True))) == "thought long"
    assert virtual.time() > TIMEOUT.connect + TIMEOUT.read  # the thinking outlasted the limit


def test_the_same_wait_in_silence_is_a_timeout(virtual: VirtualTime) -> None:
    with pytest.raises(cf.ProviderError) as info:
        virtual.run(_text(_client(keepalive=False)))
    assert info.value.kind == "timeout" and info.value.retryable
    assert virtual.time() == pytest.approx(TIMEOUT.connect + TIMEOUT.read)  # cut at the limit, not after
