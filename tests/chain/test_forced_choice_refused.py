"""A refused forced tool choice (Anthropic with thinking on, and each provider's own wording):
the tool strategy goes on with tool choice auto, the output tool alone on the last turn, and the
refusal is learnt for the model. ScriptedClient only; the wire shapes are in tests/providers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import chainform as cf
from chainform.clients._errors import classify
from chainform.testing import ScriptedClient, tool_call
from chainform.types import ToolMode

pytestmark = pytest.mark.unit

TOOLS_ONLY = cf.ModelProfile(name="tools-only", supports_json_schema=True, supports_tools_with_schema=False)
WORDINGS = json.loads(
    (Path(__file__).parents[1] / "core" / "data" / "forced_choice_refusals.json").read_text()
)["refusals"]


def get_weather(city: str) -> dict:
    """Current weather for a city."""
    return {"city": city, "temp_c": 21}


def refusing(message: str, then: object):
    """A reply that refuses any forced tool choice as the server words it, else `then`."""

    def reply(messages, options):
        if options.tool_mode is not None and options.tool_mode.mode == "required":
            return cf.ProviderError(message, status=400, kind=classify(400, message))
        return then

    return reply


@pytest.mark.parametrize("refusal", WORDINGS, ids=[w["provider"] for w in WORDINGS])
def test_the_refusal_degrades_to_auto_with_the_output_tool_alone_and_ends_in_a_value(refusal):
    message = refusal["message"]
    final = tool_call("final_result", city="Paris", temp_c=21)
    client = ScriptedClient(
        [tool_call("get_weather", city="Paris"), refusing(message, final), refusing(message, final)],
        TOOLS_ONLY,
    )
    model = cf.Model(client)
    chain = model.chain("Weather in Paris?", tools=[get_weather], schema="city, temp_c int", chain_limit=2)
    assert chain.value == {"city": "Paris", "temp_c": 21}
    assert chain.strategy == "tool" and "tool choice auto" in chain.strategy.reason
    forced, unforced = client.requests[1][1], client.requests[2][1]
    assert forced.tool_mode == ToolMode.required("final_result")
    assert unforced.tool_mode == ToolMode.AUTO and [t.name for t in unforced.tools] == ["final_result"]
    assert "tool_choice" in model.refusals and message[:40] in model.refusals["tool_choice"]
    assert [c.failed for c in chain.responses] == [None, "ProviderError", None]
    # learnt: the model's next chain never forces a tool choice
    client.script.append(tool_call("final_result", city="Rome", temp_c=19))
    again = model.chain("Rome?", schema="city, temp_c int", strategy="tool")
    assert again.value == {"city": "Rome", "temp_c": 19}
    assert client.requests[-1][1].tool_mode == ToolMode.AUTO


def test_a_model_that_never_calls_the_output_tool_unforced_is_rescued_by_the_formatting_call():
    message = WORDINGS[0]["message"]
    client = ScriptedClient(
        [refusing(message, ""), "Paris, 21 C.", "Prose.", "More prose.", '{"city": "Paris", "temp_c": 21}'],
        TOOLS_ONLY,
    )
    chain = cf.Model(client).chain("Paris?", schema="city, temp_c int", strategy="tool")
    assert chain.value == {"city": "Paris", "temp_c": 21}
    assert chain.strategy == "deferred" and chain.responses[-1].purpose == "format"
