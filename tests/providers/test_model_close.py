"""Closing a model: its provider connections and its log close; used again, both open afresh."""

from __future__ import annotations

import asyncio

import openai
import pytest

import chainform as cf
from chainform.clients.openai_chat import OpenAIChatClient
from chainform.store import Store
from chainform.testing.emulator import Emulator


def test_async_model_closes_its_sdk_client_and_opens_a_new_one_when_used_again() -> None:
    async def main(emu: Emulator) -> tuple[bool, bool, str]:
        async with cf.get_async_model("openai/gpt-4.1-mini", base_url=emu.base_url + "/v1", key="x") as model:
            assert await model.chain("one?").text() == "one"
            first = model.client.sdk
        closed = first.is_closed()
        again = await model.chain("two?").text()  # a new SDK client, on this loop
        second = model.client.sdk
        await model.aclose()
        return closed and second is not first, second.is_closed(), again

    with Emulator(["one", "two"]) as emu:
        first_closed, second_closed, again = asyncio.run(main(emu))
    assert first_closed and second_closed and again == "two"


def test_sync_model_as_a_context_manager_closes_connections_and_log() -> None:
    with Emulator(["hello"]) as emu:
        with cf.get_model("openai/gpt-4.1-mini", base_url=emu.base_url + "/v1", key="x") as model:
            assert model.chain("hi").text() == "hello"
            sdk, store = model.client.sdk, model._store
        assert sdk.is_closed()
        assert store is not None and store._db is None  # the log's connection is closed ...
    with Store() as log:
        assert [r.text for r in log.recent(None)] == ["hello"]  # ... after its rows were committed


def test_an_sdk_client_the_caller_gave_is_left_open() -> None:
    async def main(emu: Emulator) -> bool:
        sdk = openai.AsyncOpenAI(base_url=emu.base_url + "/v1", api_key="x")
        model = cf.AsyncModel(OpenAIChatClient("gpt-4.1-mini", sdk_client=sdk))
        assert await model.chain("hi").text() == "hello"
        await model.aclose()
        still_open = not sdk.is_closed()
        await sdk.close()
        return still_open

    with Emulator(["hello"]) as emu:
        assert asyncio.run(main(emu))


def test_a_model_without_connections_closes_quietly() -> None:
    from chainform.testing import ScriptedClient

    with cf.Model(ScriptedClient(["x"])) as model:
        assert model.chain("q").text() == "x"


def _http_client(sdk: object) -> object:
    """The HTTP client an SDK client chainform built sends through (anthropic's own, the one
    chainform hands google-genai)."""
    api = getattr(sdk, "_api_client", None)
    return api._async_httpx_client if api is not None else sdk._client  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["anthropic/claude-haiku-4-5", "gemini/gemini-2.5-flash"])
def test_closing_a_model_closes_the_sdk_client_the_registry_built_and_a_new_one_serves_after(
    name: str,
) -> None:
    """`get_model` builds anthropic's and gemini's SDK clients at once (not on first use, as
    openai's): closing the model closes them too (google-genai leaves the HTTP client chainform
    handed it open), and the model used again builds a new one."""
    with Emulator(["one", "two"]) as emu:
        model = cf.get_model(name, base_url=emu.base_url, key="x")
        assert model.chain("one?").text() == "one"
        first = model.client.sdk
        model.close()
        assert _http_client(first).is_closed  # type: ignore[attr-defined]
        assert model.chain("two?").text() == "two"
        second = model.client.sdk
        model.close()
        assert second is not first and _http_client(second).is_closed  # type: ignore[attr-defined]
