"""The hooks chainform installs on an SDK client it builds find each request's own call: every
adapter's request names its call (`_timeouts.CALL_HEADER`, botocore's `CALL_PARAM`), the hooks
touch that call's idle clock, and the name never reaches the server."""

from __future__ import annotations

from typing import Any

import pytest
from adapter_fixtures import bedrock_client, gemini_client, opened

from chainform.clients import _timeouts, anthropic, openai_chat, openai_responses
from chainform.testing.emulator import Emulator
from chainform.types import Message

pytestmark = pytest.mark.usefixtures("openai_isolated")


def _adapters(emu: Emulator) -> dict[str, Any]:
    common = {"key": "sk-test", "base_url": emu.base_url + "/v1", "max_retries": 1, "profile": "openai"}
    return {
        "openai-chat": opened(openai_chat.create_client("gpt-4.1", **common)),
        "openai-responses": opened(openai_responses.create_client("gpt-4.1", **common)),
        "anthropic": opened(
            anthropic.create_client(
                "claude-sonnet-4-6", key="sk-ant-test", base_url=emu.base_url, max_retries=1
            )
        ),
        "gemini": gemini_client(emu, "gemini-2.5-flash"),
        "bedrock": opened(bedrock_client(emu, "anthropic.claude-sonnet-4-5-20250929-v1:0")),
    }


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
async def test_each_adapter_touches_its_own_calls_clock_and_sends_no_call_name(
    emu: Emulator, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    touched: list[str] = []
    touch = _timeouts.Clocks.touch
    on_request = _timeouts.Clocks._on_request

    def touching(self: _timeouts.Clocks, call: str | None) -> None:  # botocore's handler
        touched.append("found" if call in self._calls else "lost")
        touch(self, call)

    async def requested(self: _timeouts.Clocks, request: Any) -> None:  # httpx's hook
        call = request.headers.get(_timeouts.CALL_HEADER)
        touched.append("found" if call in self._calls else "lost")
        await on_request(self, request)

    monkeypatch.setattr(_timeouts.Clocks, "touch", touching)
    monkeypatch.setattr(_timeouts.Clocks, "_on_request", requested)
    adapters = _adapters(emu)
    for name, adapter in adapters.items():
        emu.add("ok")
        touched.clear()
        asked = [Message.user("hi")]
        if stream:
            text = "".join([u.text async for u in adapter.get_streaming_response(asked)])
        else:
            text = (await adapter.get_response(asked)).text
        assert text == "ok", name
        assert touched and set(touched) == {"found"}, (name, touched)
    assert len(emu.requests) == len(adapters)
    for request in emu.requests:
        assert not {k.lower() for k in request.headers} & {_timeouts.CALL_HEADER}
        assert _timeouts.CALL_PARAM.encode() not in request.raw_body
