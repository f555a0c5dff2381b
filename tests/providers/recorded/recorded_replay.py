"""One recorded exchange replayed through its chainform adapter: the adapter made for the recorded
model and pointed at the emulator, which answers with the recorded bytes and status; what
chainform parsed compared with what `recorded_expect` read from the same body."""

from __future__ import annotations

import json
from typing import Any

from adapter_fixtures import bedrock_client
from recorded_expect import READERS, Call, Expected
from recorded_traffic import Exchange

from chainform.errors import ChainformError, ProviderError
from chainform.testing.emulator import Emulator, RawResponse
from chainform.types import ChatOptions, ChatResponse, ErrorContent, Message


def client_for(wire: str, model: str, emu: Emulator, *, openai_itself: bool = False) -> Any:
    """The chainform adapter of `wire` for `model`, at the emulator, with no retries;
    `openai_itself`: with the profile it has at api.openai.com (not a compatible server's)."""
    if wire in ("chat", "responses"):
        from chainform.clients._openai import ClientSettings
        from chainform.clients.openai_chat import OpenAIChatClient
        from chainform.clients.openai_responses import OpenAIResponsesClient
        from chainform.clients.profiles.openai import openai_profile

        settings = ClientSettings("openai", base_url=emu.base_url + "/v1", key="sk-test", max_retries=0)
        kind = OpenAIChatClient if wire == "chat" else OpenAIResponsesClient
        profile = openai_profile(model, "openai") if openai_itself and wire == "chat" else None
        return kind(model, settings=settings, profile=profile)
    if wire == "anthropic":
        from chainform.clients.anthropic import create_client

        return create_client(model, key="sk-ant-test", base_url=emu.base_url, max_retries=0)
    if wire == "gemini":
        from chainform.clients.gemini import create_client as gemini

        return gemini(model, key="gemini-test", base_url=emu.base_url, max_retries=0, retry_jitter=0)
    return bedrock_client(emu, model, max_retries=0)


def expected_kind(status: int) -> str:
    """The `ProviderError.kind` a recorded error status means (the bodies here name no refusal)."""
    if status in (401, 403):
        return "auth"
    if status == 429:
        return "rate_limit"
    return "server" if status >= 500 else "bad_request"


def _unfinished(ex: Exchange) -> bool:
    """A background Responses answer still queued or in progress: no answer yet, so a typed error."""
    answer = ex.answer if not ex.streamed else None
    return (
        ex.wire == "responses"
        and isinstance(answer, dict)
        and answer.get("status") in ("queued", "in_progress")
    )


async def replay(ex: Exchange, emu: Emulator, *, malformed: bool = False) -> list[str]:
    """What chainform got wrong about one recorded answer (empty: nothing). `malformed`: the
    answer is no answer of its API, and must be a typed error."""
    assert ex.wire is not None
    malformed = malformed or _unfinished(ex)
    emu.add(RawResponse(ex.status, ex.body, ex.content_type, ex.reply_headers))
    client = client_for(ex.wire, ex.model, emu)
    try:
        response = await _call(client, ex.streamed)
    except ProviderError as exc:
        if malformed:
            return []
        if ex.status < 400:
            return [f"#{ex.index}: a {ex.status} answer raised {type(exc).__name__}({exc.kind}): {exc}"]
        want = expected_kind(ex.status)
        return [] if exc.kind == want else [f"#{ex.index}: error kind {exc.kind!r}, want {want!r}"]
    finally:
        await client.aclose()
    if ex.status >= 400 or malformed:
        return [f"#{ex.index}: HTTP {ex.status} answer that is no answer parsed as a success"]
    want = READERS[ex.wire](ex.answer, ex.streamed)
    return [f"#{ex.index}: {p}" for p in compare(response, want)]


async def _call(
    client: Any, streamed: bool, messages: list[Message] | None = None, options: ChatOptions | None = None
) -> ChatResponse:
    messages = messages or [Message.user("replayed")]
    if not streamed:
        return await client.get_response(messages, options)
    updates = [u async for u in client.get_streaming_response(messages, options)]
    return ChatResponse.from_updates(updates)


async def sent(ex: Exchange, emu: Emulator, messages: list[Message], options: ChatOptions) -> Any:
    """The body chainform sent for `messages` and `options` where `ex` was recorded (the recorded
    answer replayed so that the call completes; what it parses to does not matter here)."""
    assert ex.wire is not None
    emu.add(RawResponse(ex.status, ex.body, ex.content_type, ex.reply_headers))
    client = client_for(ex.wire, ex.model, emu, openai_itself="//api.openai.com/" in ex.uri)
    before = len(emu.requests)
    failure = None
    try:
        await _call(client, ex.streamed, messages, options)
    except ChainformError as exc:  # a recorded error answer, or a refusal before sending
        failure = exc
    finally:
        await client.aclose()
        if len(emu.requests) == before:  # nothing went out: take the answer back (and say why)
            emu.script.pop()
    if len(emu.requests) == before:
        raise AssertionError(f"#{ex.index}: chainform sent no request ({failure!r})")
    return emu.requests[-1].body


def got(response: ChatResponse) -> Expected:
    """chainform's reading of an answer, in the terms of `Expected`."""
    usage = response.usage_details
    counts = usage.additional_counts if usage else {}
    refusal = "".join(
        c.message
        for m in response.messages
        for c in m.contents
        if isinstance(c, ErrorContent) and c.error_code == "refusal"
    )
    calls = [
        Call(c.call_id, c.name, c.arguments if c.parse_error is None else c.raw_arguments)
        for c in response.function_calls
    ]
    return Expected(
        text=response.text,
        reasoning=response.reasoning,
        calls=calls,
        refusal=refusal,
        input_tokens=usage.input_tokens if usage else None,
        output_tokens=usage.output_tokens if usage else None,
        cached_tokens=counts.get("cache_read_input_tokens", 0),
        reasoning_tokens=counts.get("reasoning_tokens", 0),
        finish=str(response.finish_reason) if response.finish_reason else None,
    )


def compare(response: ChatResponse, want: Expected) -> list[str]:
    have = got(response)
    problems = []
    for name in (
        "text",
        "reasoning",
        "refusal",
        "input_tokens",
        "output_tokens",
        "cached_tokens",
        "reasoning_tokens",
        "finish",
    ):
        a, b = getattr(have, name), getattr(want, name)
        if a != b:
            problems.append(f"{name}: got {_short(a)}, recorded {_short(b)}")
    if len(have.calls) != len(want.calls):
        problems.append(f"calls: got {[c.name for c in have.calls]}, recorded {[c.name for c in want.calls]}")
    for h, w in zip(have.calls, want.calls, strict=False):  # a count mismatch is told above
        if (
            (w.call_id is not None and h.call_id != w.call_id)
            or h.name != w.name
            or h.arguments != w.arguments
        ):
            problems.append(f"call: got {_short(h)}, recorded {_short(w)}")
    return problems


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=repr)
    return repr(text[:120] + ("..." if len(text) > 120 else ""))
