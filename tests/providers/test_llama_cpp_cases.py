"""The llama-cpp-python user journeys of tests/llama_cases.py (a conversation continued with `-c`,
`map` over 50 rows, the README's CLI example), here against the emulator playing the server's
quirks (LLAMA_CPP_PYTHON: json_schema refused with HTTP 500, null content refused, no streamed
tool calls), so CI runs what tests/real runs against the real server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import llama_cases
from chainform.testing import tool_call
from chainform.testing.emulator import LLAMA_CPP_PYTHON, Emulator

pytestmark = pytest.mark.usefixtures("openai_isolated")


@pytest.fixture
def server(emulator: Emulator) -> Emulator:
    emulator.quirks = LLAMA_CPP_PYTHON
    return emulator


def test_readme_example_at_the_server(server: Emulator) -> None:
    server.add('{"name": "Rex", "age": 3}')
    assert llama_cases.readme_example(server.base_url + "/v1") == {"name": "Rex", "age": 3}
    formats = [(r.body.get("response_format") or {}).get("type") for r in server.requests]
    assert formats == ["json_schema", "json_object"]  # refused with a 500, sent once, then json_object


def test_continued_conversation_replays_the_tool_turn_as_the_server_takes_it(
    server: Emulator, tmp_path: Path
) -> None:
    # under "auto" the server's text replies are empty (""): each is asked again with tools off
    found, again = "It is 18 C in Paris.", "I found 18 C in Paris."
    server.add(tool_call("get_weather", city="Paris"), found, found, again, again)
    first, second = llama_cases.continued_conversation(server.base_url + "/v1", tmp_path)
    assert "18 C" in first.stdout and "18 C" in second.stdout
    last = server.requests[-1].body["messages"]
    roles = [m["role"] for m in last]
    # the first exchange as the log holds it; the empty reply was asked again with tools off
    assert roles == ["user", "assistant", "tool", "assistant", "user", "user"]
    assert [r.body.get("tool_choice") for r in server.requests][-1] == "none"
    called = last[1]
    assert called["content"] == "" and called["tool_calls"][0]["function"]["name"] == "get_weather"
    assert json.loads(last[2]["content"]) == {"city": "Paris", "temp_c": 18.0}
    assert last[-2]["content"] == "And what did you find?" and "empty" in last[-1]["content"]
    assert all(r.body["messages"][0]["content"].startswith("What is") for r in server.requests)


def test_map_over_50_rows_at_the_server(server: Emulator) -> None:
    server.default = lambda request: '{"name": "Dog", "age": 2}'
    results = llama_cases.map_rows(server.base_url + "/v1", 50)
    assert all(r.ok and r.value == {"name": "Dog", "age": 2} for r in results)
    refused = [
        r for r in server.requests if (r.body.get("response_format") or {}).get("type") == "json_schema"
    ]
    assert 1 <= len(refused) <= 4  # the refusal is learnt once per model, by the rows already in flight
    assert len(server.requests) == 50 + len(refused)
