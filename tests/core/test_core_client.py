"""ChatClient base: middleware, guardrails, streaming through middleware; ScriptedClient."""

from __future__ import annotations

import pytest

import chainform as cf
from chainform.errors import ScriptExhaustedError
from chainform.testing import ScriptedClient, tool_call
from chainform.types import ChatResponse, Message


async def test_streaming_join_equals_non_streamed_response():
    script = ["hello there, general", [tool_call("f", a=1, b="x" * 40), "and text"]]
    streamed = ScriptedClient(list(script), chunk_size=3)
    whole = ScriptedClient(list(script), chunk_size=3)
    for _ in script:
        updates = [u async for u in streamed.get_streaming_response([Message.user("hi")])]
        joined = ChatResponse.from_updates(updates)
        direct = await whole.get_response([Message.user("hi")])
        assert joined.text == direct.text
        assert [(c.name, c.arguments) for c in joined.function_calls] == [
            (c.name, c.arguments) for c in direct.function_calls
        ]
        assert joined.usage_details == direct.usage_details
        assert len(updates) > 2


async def test_scripted_client_records_requests_and_runs_callables():
    seen = []

    def reply(messages, options):
        seen.append(options.temperature)
        return f"echo {messages[-1].text}"

    client = ScriptedClient([reply])
    response = await client.get_response([Message.user("ping")], cf.ChatOptions(temperature=0.5))
    assert response.text == "echo ping" and seen == [0.5]
    assert client.requests[0][0][0].text == "ping"
    assert response.usage_details.input_tokens == 1
    assert response.finish_reason == "stop"


async def test_scripted_client_exhaustion_is_clear():
    client = ScriptedClient(["one"])
    await client.get_response([Message.user("a")])
    with pytest.raises(ScriptExhaustedError, match=r"request #2 arrived but the script has only 1 item"):
        await client.get_response([Message.user("b")])


async def test_scripted_client_raises_scripted_exceptions():
    client = ScriptedClient([cf.ProviderError("rate limited", status=429, provider="x", request_id="req_1")])
    with pytest.raises(cf.ProviderError) as info:
        await client.get_response([Message.user("a")])
    assert info.value.status == 429 and "req_1" in str(info.value)


async def test_middleware_wraps_calls_in_order_and_can_rewrite():
    order = []

    async def outer(ctx, call_next):
        order.append("outer-in")
        ctx.messages = [*ctx.messages, Message.user("added by middleware")]
        response = await call_next(ctx)
        order.append("outer-out")
        return response

    async def inner(ctx, call_next):
        order.append("inner-in")
        return await call_next(ctx)

    client = ScriptedClient(["ok"], middleware=[outer, inner])
    await client.get_response([Message.user("a")])
    assert order == ["outer-in", "inner-in", "outer-out"]
    assert client.requests[0][0][-1].text == "added by middleware"


async def test_streaming_passes_through_middleware():
    calls = []

    async def count(ctx, call_next):
        calls.append(ctx.stream)
        return await call_next(ctx)

    client = ScriptedClient(["streamed text"], middleware=[count], chunk_size=2)
    chunks = [u.text async for u in client.get_streaming_response([Message.user("a")])]
    assert "".join(chunks) == "streamed text" and calls == [True]


async def test_input_guardrail_can_reject_or_rewrite():
    def no_secrets(messages):
        if any("password" in m.text for m in messages):
            raise cf.GuardrailError("prompt contains a password", guardrail="no_secrets")
        return None

    def redact(messages):
        return [Message(m.role, m.text.replace("Bob", "[name]")) for m in messages]

    client = ScriptedClient(["fine", "fine"])
    client.input_guardrails += [no_secrets, redact]
    with pytest.raises(cf.GuardrailError) as info:
        await client.get_response([Message.user("my password is x")])
    assert info.value.guardrail == "no_secrets" and info.value.stage == "input"
    assert client.requests == []  # rejected before the provider saw it
    await client.get_response([Message.user("hi Bob")])
    assert client.requests[0][0][0].text == "hi [name]"


async def test_output_guardrail_rejects_or_rewrites():
    async def no_shouting(response):
        if response.text.isupper():
            raise cf.GuardrailError("shouting")
        return None

    def polite(response):
        return ChatResponse([Message.assistant(response.text + ", please")])

    client = ScriptedClient(["LOUD", "quiet"])
    client.output_guardrails += [no_shouting, polite]
    with pytest.raises(cf.GuardrailError) as info:
        await client.get_response([Message.user("a")])
    assert info.value.stage == "output"
    assert (await client.get_response([Message.user("a")])).text == "quiet, please"


def test_guardrail_rejection_inside_a_chain_keeps_responses():
    client = ScriptedClient(["ALL CAPS"])

    def block(response):
        raise cf.GuardrailError("blocked")

    client.output_guardrails.append(block)
    chain = cf.Model(client).chain("x")
    with pytest.raises(cf.GuardrailError):
        chain.text()
    assert len(chain.responses) == 1


def test_import_is_light():
    import subprocess
    import sys

    code = (
        "import sys, chainform; heavy = [m for m in ('torch', 'transformers', 'openai', 'anthropic', "
        "'google.genai', 'boto3', 'llguidance') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
