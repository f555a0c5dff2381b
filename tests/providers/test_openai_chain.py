"""A whole chain (tools, then a schema) through each OpenAI adapter, the SDK and the emulator."""

from __future__ import annotations

import openai_fixtures
import pytest

import chainform as cf
from chainform.testing import tool_call
from chainform.testing.emulator import Emulator

TEMPS = {"Paris": 18.0, "Rome": 24.5}


def get_weather(city: str) -> dict[str, float]:
    "Current weather for a city."
    return {"temp_c": TEMPS[city]}


@pytest.fixture(autouse=True)
def _isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    openai_fixtures.prepare(monkeypatch)


@pytest.mark.parametrize("name", ["openai/gpt-4.1-mini", "openai-responses/gpt-4.1-mini"])
def test_openai_chain_with_tools_and_schema_ends_in_valid_value(name: str) -> None:
    script = [
        [tool_call("get_weather", city="Paris"), tool_call("get_weather", city="Rome")],
        '{"city": "Rome", "temp_c": 24.5}',
    ]
    with Emulator(script) as emu:
        model = cf.get_model(name, base_url=emu.base_url + "/v1", key="test")
        chain = model.chain("Warmer of Paris and Rome?", tools=[get_weather], schema="city, temp_c float")
        assert chain.value == {"city": "Rome", "temp_c": 24.5}
    second = emu.requests[1].body
    sent = second.get("messages") or second.get("input")
    assert "24.5" in str(sent)  # the tool results went back to the model
    assert len(emu.requests) == 2
