"""Strategies as objects: the decision table row by row, each strategy's protocol, refusals learnt."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

import chainform as cf
from chainform.errors import Attempt, ChainError, StructuredOutputError, StructuredOutputGenerationError
from chainform.output import OutputSpec, StrategyChoice, select_strategy
from chainform.output._select import Refusals
from chainform.output.strategies import NOT_FINAL, Deferred, Native, Plain, Prompted, Settings, Tool
from chainform.output.strategies._context import ContextPolicy
from chainform.testing import ScriptedClient, tool_call
from chainform.types import ChatOptions, ChatResponse, Message, ModelProfile, TextContent, ToolMode

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


class Answer(BaseModel):
    city: str
    temp_c: float


def get_weather(city: str) -> dict:
    """Current weather for a city."""
    return {"city": city, "temp_c": 21.5}


SPEC = OutputSpec.from_user(Answer)
NATIVE_BOTH = ModelProfile(name="both", supports_json_schema=True, supports_tools_with_schema=True)
NATIVE_ALONE = ModelProfile(name="alone", supports_json_schema=True)
TOOLS_FORCIBLE = ModelProfile(name="forcible")
# Several Bedrock open-weight models: tools, but no native schema and no forced tool choice.
OPEN_WEIGHTS = ModelProfile(name="open-weights", supports_tool_choice_required=False)
NOTHING = ModelProfile(name="nothing", supports_tools=False)
SCHEMA_NO_TOOLS = ModelProfile(name="schema-only", supports_tools=False, supports_json_schema=True)

# One row per line of the table in docs/strategies.md.
TABLE = [
    (NATIVE_ALONE, False, "native"),
    (TOOLS_FORCIBLE, False, "tool"),
    (OPEN_WEIGHTS, False, "prompted"),
    (NOTHING, False, "prompted"),
    (NATIVE_BOTH, True, "native"),
    (NATIVE_ALONE, True, "tool"),
    (OPEN_WEIGHTS, True, "deferred"),
    (SCHEMA_NO_TOOLS, True, "deferred"),
]


@pytest.mark.parametrize(("profile", "has_tools", "expected"), TABLE, ids=lambda v: getattr(v, "name", v))
def test_decision_table_row(profile: ModelProfile, has_tools: bool, expected: str) -> None:
    choice = select_strategy(profile, has_tools=has_tools)
    assert choice == expected and choice.requested == "auto" and choice.fallback is None


@pytest.mark.parametrize(
    ("refused", "has_tools", "expected"),
    [
        ({"tools_with_schema": "400"}, True, "deferred"),
        ({"json_schema": "500"}, False, "native"),  # json_object + schema next
        ({"json_schema": "500", "json_object_schema": "500"}, False, "tool"),
        ({"json_schema": "500"}, True, "tool"),
    ],
)
def test_decision_table_rows_after_refusals(refused, has_tools, expected) -> None:
    memory = Refusals()
    for feature, reason in refused.items():
        memory.remember(feature, reason)
    choice = select_strategy(NATIVE_BOTH, has_tools=has_tools, refusals=memory)
    assert choice == expected
    assert (choice.fallback is not None) == (expected != "native")


def test_strategy_choice_equals_its_name_and_keys_dicts() -> None:
    choice = StrategyChoice("native", "because", "auto", fallback=None)
    assert choice == "native" and choice != "tool" and str(choice) == "native"
    assert {choice: 1}["native"] == 1 and {"native": 2}[choice] == 2
    assert (choice.name, choice.reason, choice.requested, choice.fallback) == (
        "native",
        "because",
        "auto",
        None,
    )
    explicit = select_strategy(NOTHING, has_tools=True, requested="native")
    assert explicit == "native" and explicit.requested == "native"
    with pytest.raises(ValueError, match="unknown strategy"):
        select_strategy(NOTHING, has_tools=False, requested="magic")


def _response(*parts) -> ChatResponse:
    return ChatResponse([Message.assistant([TextContent(p) if isinstance(p, str) else p for p in parts])])


def test_native_object_sends_the_schema_and_reads_text() -> None:
    native = Native(SPEC, NATIVE_BOTH, Settings())
    tools = [cf.Tool.from_function(get_weather)]
    options = native.options(ChatOptions(), tools, last=False, force=False)
    assert options.response_format.kind == "json_schema" and options.tool_mode is None
    assert native.options(ChatOptions(), tools, last=True, force=False).tool_mode == ToolMode.NONE
    assert native.check(_response(tool_call("get_weather", city="Rome"))) is NOT_FINAL
    assert native.check(_response('{"city": "Rome", "temp_c": 27}')) == Answer(city="Rome", temp_c=27)
    with pytest.raises(StructuredOutputGenerationError):
        native.check(_response("no json"))
    feedback = native.feedback(StructuredOutputGenerationError("bad", raw_text="x"), _response("x"))
    assert "corrected JSON" in feedback.message and not feedback.run_calls
    assert native.feature == "json_schema"


def test_native_object_after_json_schema_was_refused_sends_json_object_with_the_schema() -> None:
    memory = Refusals()
    memory.remember("json_schema", "HTTP 500: Input should be 'text' or 'json_object'")
    native = Native(SPEC, NATIVE_ALONE, Settings(refusals=memory))
    fmt = native.options(ChatOptions(), [], last=True, force=False).response_format
    assert fmt.kind == "json_object" and fmt.schema == SPEC.schema
    assert native.feature == "json_object_schema"


def test_tool_object_offers_forces_and_feeds_back() -> None:
    tool = Tool(SPEC, TOOLS_FORCIBLE, Settings())
    tools = [cf.Tool.from_function(get_weather)]
    options = tool.options(ChatOptions(), tools, last=False, force=False)
    assert [t.name for t in options.tools] == ["get_weather", "final_result"]
    assert tool.options(ChatOptions(), tools, last=False, force=True).tool_mode == ToolMode.REQUIRED_ANY
    last = tool.options(ChatOptions(), tools, last=True, force=False)
    assert [t.name for t in last.tools] == ["final_result"]
    assert last.tool_mode == ToolMode.required("final_result")
    unforcible = Tool(SPEC, OPEN_WEIGHTS, Settings()).options(ChatOptions(), tools, last=True, force=True)
    assert unforcible.tool_mode is None and len(unforcible.tools) == 2
    assert tool.check(_response(tool_call("get_weather", city="Rome"))) is NOT_FINAL
    assert tool.check(_response(tool_call("final_result", city="Oslo", temp_c=1))).city == "Oslo"
    twice = _response(
        tool_call("final_result", city="A", temp_c=1), tool_call("final_result", city="B", temp_c=2)
    )
    with pytest.raises(StructuredOutputGenerationError, match="exactly once") as info:
        tool.check(twice)
    feedback = tool.feedback(info.value, twice)
    assert feedback.run_calls and len(feedback.results) == 2 and not feedback.force
    text = tool.feedback(
        StructuredOutputGenerationError("call the tool", raw_text="prose"), _response("prose")
    )
    assert text.force and text.message == "call the tool"


def test_prompted_object_describes_the_schema_in_the_system_prompt() -> None:
    prompted = Prompted(SPEC, NOTHING, Settings())
    messages = [Message.system("Be brief."), Message.user("x")]
    prompted.prepare(messages)
    assert messages[0].text.startswith("Be brief.\n\n") and "JSON Schema" in messages[0].text
    bare = [Message.user("x")]
    prompted.prepare(bare)
    assert bare[0].role == "system" and len(bare) == 2
    assert prompted.options(ChatOptions(), [], last=False, force=False).response_format is None


def test_plain_object_answers_in_text_and_cannot_retry() -> None:
    plain = Plain(NOTHING, Settings(chain_limit=3))
    assert plain.check(_response("hello")) == "hello" and not plain.validates
    assert plain.check(_response(tool_call("f"))) is NOT_FINAL
    with pytest.raises(ChainError, match="chain_limit=3"):
        plain.feedback(StructuredOutputGenerationError("x", raw_text=""), _response(tool_call("f")))
    gather = Plain(NOTHING, Settings(), gather=True)
    assert gather.runs_last_tools and not gather.answers


def test_deferred_object_is_its_tool_phase_and_describes_the_formatting_call_as_data() -> None:
    """The engine runs deferred: the object gathers (plain, tools to the last turn) and says what
    the formatting call carries; it never calls back into the chain."""
    deferred = Deferred(SPEC, OPEN_WEIGHTS, Settings(chain_limit=3, policy=ContextPolicy("full")))
    assert not hasattr(deferred, "run") and deferred.output is None and not deferred.validates
    assert deferred.runs_last_tools and not deferred.answers
    assert deferred.check(_response(tool_call("get_weather", city="Rome"))) is NOT_FINAL
    assert deferred.check(_response("Rome: 21.5")) == "Rome: 21.5"
    assert Native(SPEC, NATIVE_BOTH, Settings()).formatting is None
    transcript = [Message.user("Rome?"), Message.assistant("Rome: 21.5")]
    context, messages = deferred.formatting.messages(transcript, cut_off=True)
    assert "Rome: 21.5" in context and "cut off by the chain limit (3 model calls)" in context
    assert [m.role for m in messages] == ["system", "user"] and '"temp_c"' in messages[1].text
    failed = deferred.formatting.error(
        StructuredOutputError("x", attempts=[]), context, [Attempt("{}", "bad", "format")]
    )
    assert isinstance(failed, cf.FormattingError) and failed.context == context
    assert "after 1 attempt(s): bad" in str(failed)


def test_deferred_formatting_call_on_open_weights_profile_is_prompted() -> None:
    """Tools but neither native schema nor forced tools: the +1 call must not offer final_result."""
    client = ScriptedClient(
        [tool_call("get_weather", city="Paris"), "Paris: 21.5", '{"city": "Paris", "temp_c": 21.5}'],
        OPEN_WEIGHTS,
    )
    chain = cf.Model(client).chain("x", tools=[get_weather], schema=Answer, strategy="deferred")
    assert chain.value.city == "Paris" and chain.strategy == "deferred"
    messages, options = client.requests[-1]
    assert options.tools is None and options.tool_mode is None and options.response_format is None
    assert "JSON Schema" in messages[0].text


def test_formatting_call_falls_back_json_schema_then_json_object_then_prompted() -> None:
    def refused(what: str) -> cf.ProviderError:
        return cf.ProviderError(
            f"Input should be 'text' or 'json_object' ({what})", status=500, kind="response_format_rejected"
        )

    client = ScriptedClient(
        ["Rome is warm.", refused("json_schema"), refused("json_object"), '{"city": "Rome", "temp_c": 27}'],
        NOTHING.replace(supports_json_schema=True),
    )
    model = cf.Model(client)
    chain = model.chain("x", tools=[get_weather], schema=Answer, strategy="deferred")
    assert chain.value.city == "Rome"
    kinds = [
        options.response_format.kind if options.response_format else None for _, options in client.requests
    ]
    assert kinds == [None, "json_schema", "json_object", None]
    assert client.requests[2][1].response_format.schema == OutputSpec.from_user(Answer).schema
    assert "JSON Schema" in client.requests[3][0][0].text  # prompted: the schema is in the system prompt
    assert set(model.refusals) == {"json_schema", "json_object_schema"}
    assert [c.purpose for c in chain.responses] == ["chain", "format", "format", "format"]


def test_explicit_strategy_never_falls_back_on_a_refused_format() -> None:
    refused = cf.ProviderError("no json_schema", status=500, kind="response_format_rejected")
    model = cf.Model(ScriptedClient([refused], NATIVE_ALONE))
    with pytest.raises(cf.ProviderError):
        model.prompt("x", schema=Answer).text() if False else model.chain(
            "x", schema=Answer, strategy="native"
        ).text()
    assert dict(model.refusals) == {}


def test_conversation_after_a_tool_chain_keeps_tool_turns_not_output_plumbing() -> None:
    client = ScriptedClient(
        [
            tool_call("get_weather", city="Rome"),
            tool_call("final_result", city="Rome"),  # invalid: fed back, then fixed
            tool_call("final_result", city="Rome", temp_c=21.5),
            "It was 21.5.",
        ],
        NATIVE_ALONE,
    )
    conv = cf.Model(client).conversation()
    assert conv.chain("Rome?", tools=[get_weather], schema=Answer).value.temp_c == 21.5
    conv.chain("And then?").text()
    sent = client.requests[-1][0]
    assert [m.role for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    assert sent[1].function_calls[0].name == "get_weather"
    assert sent[2].function_results[0].result == {"city": "Rome", "temp_c": 21.5}
    assert json.loads(sent[3].text) == {"city": "Rome", "temp_c": 21.5}


def test_a_types_schema_is_built_once_and_each_spec_gets_its_own_copy(monkeypatch) -> None:
    built: list[type] = []
    original = Answer.model_json_schema.__func__  # type: ignore[attr-defined]

    class Fresh(Answer):
        pass

    def counting(cls, *args, **kwargs):
        built.append(cls)
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(Fresh, "model_json_schema", classmethod(counting))
    first = OutputSpec.from_user(Fresh)
    first.schema["properties"]["city"]["type"] = "integer"  # a caller changing its copy
    second = OutputSpec.from_user(Fresh)
    assert built == [Fresh]
    assert second.schema["properties"]["city"]["type"] == "string"
    assert second.schema == Fresh.model_json_schema() and second.python_type is Fresh
    assert OutputSpec.from_user(list[int]).schema == {"items": {"type": "integer"}, "type": "array"}
    # the log's content address, worked out once per type, is the one the store computes
    from chainform.store._rows import schema_id

    assert second.content is not None and second.content[1] == schema_id(Fresh.model_json_schema())
