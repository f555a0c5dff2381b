"""Broken and hostile streams through the real openai SDK and the emulator: nothing is lost."""

from __future__ import annotations

import json

import pytest

import chainform as cf
from chainform.store import Store
from chainform.testing.emulator import DropConnection, Emulator, MalformedEvent

pytestmark = pytest.mark.usefixtures("openai_isolated")


@pytest.mark.parametrize(
    "fault",
    [
        DropConnection(after_events=3, reply="The answer is forty-two, obviously."),
        MalformedEvent(after_events=3, reply="The answer is forty-two, obviously."),
    ],
    ids=["dropped", "malformed"],
)
def test_text_before_a_broken_stream_is_logged(fault) -> None:
    with Emulator([fault]) as emu:
        model = cf.get_model("openai/gpt-4.1-mini", base_url=emu.base_url + "/v1", key="test")
        chain = model.prompt("Question?")
        with pytest.raises(cf.StreamInterruptedError) as info:
            list(chain)  # a reader: the call streams
    arrived = info.value.partial_response.text
    assert arrived.startswith("The answer is")
    with Store() as store:
        (row,) = store.recent(n=None)
    assert row.text == arrived
    assert row.error and "StreamInterruptedError" in row.error


def test_lone_surrogate_in_a_streamed_answer_is_kept_and_logged() -> None:
    answer = {"name": "a\ud800b", "n": 1}
    with Emulator([json.dumps(answer)] * 2) as emu:
        model = cf.get_model("openai/gpt-4.1-mini", base_url=emu.base_url + "/v1", key="test")
        conversation = model.conversation()
        first = conversation.prompt("Invent", schema="name, n int")
        assert first.value == answer
        second = conversation.prompt("Again", schema="name, n int")
        assert second.value == answer
    with Store() as store:
        rows = store.recent(n=None)
    assert len(rows) == 2  # neither this call nor a later one of the conversation is dropped
    assert all(row.parsed == answer for row in rows)  # parsed JSON keeps the surrogate exactly
    assert all("\\ud800" in row.text for row in rows)  # text columns keep it escaped
