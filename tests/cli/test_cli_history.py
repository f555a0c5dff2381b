"""`-c` / `--cid` resume with the same history a live Conversation keeps: tool turns included."""

from __future__ import annotations

import pytest
from cli_helpers import Scripted

from chainform.chain._history import of_conversation
from chainform.store import Store
from chainform.testing import tool_call

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

FUNCTIONS = 'def get_weather(city: str) -> dict:\n    "Weather for a city."\n    return {"temp_c": 21.5}\n'


def test_continue_after_a_tool_chain_sends_the_tool_messages(run, scripted: Scripted) -> None:
    scripted.script([tool_call("get_weather", city="Paris"), "Paris: 21.5 C.", "Yes, 21.5 C."])
    first = run("Weather in Paris?", "--functions", FUNCTIONS)
    assert first.exit_code == 0, first.stderr
    follow_up = run("Sure?", "-c")
    assert follow_up.exit_code == 0, follow_up.stderr
    sent = scripted.client.requests[2][0]
    assert [m.role for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    call, result = sent[1].function_calls[0], sent[2].function_results[0]
    assert call.name == "get_weather" and call.arguments == {"city": "Paris"}
    assert result.call_id == call.call_id and "21.5" in str(result.result)
    assert of_conversation(Store(), Store().last_conversation_id())[:4] == sent[:4]


def test_log_history_equals_live_conversation_history(run, scripted: Scripted) -> None:
    from chainform.models import Model

    script = [tool_call("get_weather", city="Rome"), "Rome: 21.5 C."]
    client = scripted.script([*script, "ok"])
    conversation = Model(client, name="scripted").conversation()
    conversation.chain("Rome?", tools=[get_weather]).text()
    conversation.chain("ok?").text()
    live = client.requests[-1][0][:-1]  # what the second chain was sent, its own prompt aside
    logged = of_conversation(Store(), conversation.id)[: len(live)]
    assert [(m.role, m.text) for m in logged] == [(m.role, m.text) for m in live]
    assert logged[1].function_calls[0].arguments == live[1].function_calls[0].arguments
    assert logged[2].function_results[0].call_id == live[2].function_results[0].call_id


def get_weather(city: str) -> dict:
    """Weather for a city."""
    return {"temp_c": 21.5}
