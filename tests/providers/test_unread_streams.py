"""A call nobody streams is sent whole; a reader's calls stream. Both give the same answer and log."""

from __future__ import annotations

import asyncio

import pytest

import chainform as cf
from chainform.clients.openai_chat import ChatWire
from chainform.store import Store
from chainform.testing import tool_call
from chainform.testing.emulator import STREAMS_ALWAYS, Emulator, MalformedEvent


def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"{city}: 21.5 C"


SCRIPT = [tool_call("get_weather", city="Paris"), "It is 21.5 C in Paris."]


def test_awaited_chain_sends_whole_requests() -> None:
    with Emulator(SCRIPT) as emu:
        model = cf.get_async_model("openai/gpt-4.1-mini", base_url=emu.base_url + "/v1", key="x")
        chain = model.chain("Weather in Paris?", tools=[get_weather])
        assert asyncio.run(chain.text()) == "It is 21.5 C in Paris."
    assert [r.body.get("stream") for r in emu.requests] == [False, False]
    assert len(chain.responses) == 2 and chain.usage.input_tokens  # usage comes with a whole response too
    with Store() as store:
        rows = store.recent(n=None)
    assert sorted(row.text for row in rows) == ["", "It is 21.5 C in Paris."]


def test_a_reader_gets_streamed_calls_and_the_same_events() -> None:
    with Emulator(SCRIPT) as emu:
        model = cf.get_model("openai/gpt-4.1-mini", base_url=emu.base_url + "/v1", key="x")
        chain = model.chain("Weather in Paris?", tools=[get_weather])
        streamed = [e.kind for e in chain.events()]
    assert all(r.body["stream"] is True for r in emu.requests)
    assert all(r.body["stream_options"] == {"include_usage": True} for r in emu.requests)
    with Emulator(SCRIPT) as emu:
        model = cf.get_async_model("openai/gpt-4.1-mini", base_url=emu.base_url + "/v1", key="x")
        whole = model.chain("Weather in Paris?", tools=[get_weather])
        asyncio.run(whole.text())
        kinds = [e.kind for e in whole._events.events]
    assert "text" in kinds and kinds[-1] == "call_end"
    assert [k for k in streamed if k != "text"] == [k for k in kinds if k != "text"]
    assert "".join(chain) == "It is 21.5 C in Paris."


def test_a_server_that_streams_anyway_is_asked_for_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that ignores "stream": false (some proxies, mock servers) made the SDK hand back event
    text; the call is asked again streamed (the request built once), and that client's later calls
    stream from the start."""
    built = []
    build = ChatWire.build_request
    monkeypatch.setattr(ChatWire, "build_request", lambda self, *a: built.append(1) or build(self, *a))
    script = [tool_call("get_weather", city="Paris"), *SCRIPT]  # the first reply goes unread
    with Emulator(script, quirks=STREAMS_ALWAYS) as emu:
        model = cf.get_async_model("openai/gpt-4.1-mini", base_url=emu.base_url + "/v1", key="x")
        chain = model.chain("Weather in Paris?", tools=[get_weather])
        assert asyncio.run(chain.text()) == "It is 21.5 C in Paris."
    assert [r.body.get("stream") for r in emu.requests] == [False, True, True]
    assert len(chain.responses) == 2 and len(built) == 2


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b'{"id": "broken", "choices": [', "application/json"),
        (b'{"id": "chatcmpl-1", "object": "chat.completion"}', "application/json"),
        (b'{"id": "chatcmpl-1", "choices": null}', "application/json"),
        (b"[1, 2]", "application/json"),
        (b"", "application/json"),
        (b"<html>502 Bad Gateway</html>", "text/html"),
    ],
    ids=["cut-short", "no-choices", "null-choices", "array", "empty", "html"],
)
def test_a_whole_answer_that_is_no_completion_is_a_typed_error(body: bytes, content_type: str) -> None:
    """Neither retried nor re-asked streamed: the typed error of a malformed answer, with its request id."""
    with Emulator([MalformedEvent(body=body, content_type=content_type), "never asked"]) as emu:
        model = cf.get_async_model("openai/gpt-4.1-mini", base_url=emu.base_url + "/v1", key="x")
        with pytest.raises(cf.ProviderError) as info:
            asyncio.run(model.prompt("x", log=False).text())
    error = info.value
    assert not isinstance(error, cf.StreamInterruptedError)
    assert (error.kind, error.status, error.retryable) == ("connection", None, True)
    assert "malformed response body" in error.provider_message
    assert error.request_id == emu.requests[0].request_id
    assert [r.body.get("stream") for r in emu.requests] == [False]


def test_an_event_stream_under_a_json_content_type_is_asked_for_streams() -> None:
    """The body, not only its content type, tells a stream: the call is asked again streamed."""
    event = b'data: {"id": "c", "choices": [{"index": 0, "delta": {"content": "hi"}}]}\n\n'
    with Emulator([MalformedEvent(body=event), "streamed answer"]) as emu:
        model = cf.get_async_model("openai/gpt-4.1-mini", base_url=emu.base_url + "/v1", key="x")
        assert asyncio.run(model.prompt("x", log=False).text()) == "streamed answer"
    assert [r.body.get("stream") for r in emu.requests] == [False, True]
