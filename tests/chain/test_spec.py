"""ChainSpec: one immutable, versioned JSON value for what a chain is asked; the two retry names."""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal

import pytest

import chainform as cf
from chainform.chain._spec import SPEC_VERSION, ChainSpec, SpecError
from chainform.chain._tools import normalize_tools
from chainform.output import OutputSpec
from chainform.testing import ScriptedClient


def send_mail(to: str, body: str) -> str:
    "Send a mail."
    return "sent"


def spec(**changes: object) -> ChainSpec:
    settings: dict[str, object] = dict(
        prompt=cf.Message.user("Mail Bob"),
        system="Be brief.",
        history=[cf.Message.user("Hi"), cf.Message.assistant("Hello")],
        tools=normalize_tools([send_mail]),
        output=OutputSpec.from_user("sent bool"),
        strategy="tool",
        chain_limit=4,
        validation_retries=1,
        max_cost="0.25",
        format_context="last",
        format_prompt="{context} {schema}",
        options={"temperature": 0.2, "seed": 3, "extra": "x"},
        stream=False,
        fallbacks=["openai/gpt-4.1-mini"],
        requires_approval=["send_mail"],
    )
    settings.update(changes)
    return ChainSpec.build("local", **settings)  # type: ignore[arg-type]


def test_a_spec_round_trips_through_json_and_is_immutable():
    made = spec()
    back = ChainSpec.from_json(made.to_json())
    assert back.to_dict() == made.to_dict()
    assert back.limits.max_cost == Decimal("0.25") and back.limits.validation_retries == 1
    assert back.tools[0].name == "send_mail" and back.tools[0].requires_approval
    assert back.needs_approval("send_mail") and not back.needs_approval("other")
    assert back.options.temperature == 0.2 and back.options.additional_properties == {"extra": "x"}
    assert back.formatting.policy.name == "last" and back.fallbacks == ("openai/gpt-4.1-mini",)
    assert json.loads(made.to_json())["version"] == SPEC_VERSION
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.strategy = "native"  # type: ignore[misc]


def test_a_spec_never_holds_a_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-0123456789abcdef")
    text = spec(options={"api_key": "sk-secret-0123456789abcdef"}).to_json()
    assert "sk-secret" not in text


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda d: {**d, "version": SPEC_VERSION + 1}, "newer chainform"),
        (lambda d: {k: v for k, v in d.items() if k != "version"}, "no version"),
        (lambda d: {**d, "limits": {"chain_limit": 0, "validation_retries": 1}}, "malformed"),
        (lambda d: {**d, "model": 3}, "malformed"),
        (lambda d: {**d, "formatting": {"policy": "everything"}}, "malformed"),
        (lambda d: [d], "not a JSON object"),
        (lambda d: {**d, "version": str(SPEC_VERSION)}, "no version number"),
        (lambda d: {**d, "strategy": "bogus"}, "malformed .*strategy 'bogus' is none of"),
        (lambda d: {**d, "options": {"temperature": "hot"}}, "malformed .*temperature must be a number"),
        (lambda d: {**d, "output": {"schema": {"type": "nope"}}}, "malformed .*Invalid JSON Schema"),
        (
            lambda d: {**d, "tools": [{"name": "send_mail", "parameters": {"type": 3}}]},
            "malformed .*Invalid JSON",
        ),
        (
            lambda d: {**d, "limits": {**d["limits"], "max_cost": "abc"}},
            "malformed .*max_cost must be a number",
        ),
    ],
)
def test_a_spec_edited_by_hand_or_from_a_newer_version_is_refused(edit, says):
    data = json.loads(spec().to_json())
    with pytest.raises(SpecError, match=says):
        ChainSpec.from_json(json.dumps(edit(data)))
    with pytest.raises(SpecError, match="not valid JSON"):
        ChainSpec.from_json("{broken")


HOSTED = (
    cf.WebSearch(max_uses=2, allowed_domains=["example.com"]),
    cf.CodeExecution(),
    cf.FileSearch(["vs_1"], 3),
)


def test_hosted_tools_are_kept_typed_and_a_version_1_spec_without_them_still_reads():
    made = spec(options=cf.ChatOptions(seed=3, hosted_tools=HOSTED))
    data = json.loads(made.to_json())
    assert data["hosted_tools"] == [
        {"kind": "web_search", "max_uses": 2, "allowed_domains": ["example.com"]},
        {"kind": "code_execution"},
        {"kind": "file_search", "store_ids": ["vs_1"], "max_results": 3},
    ]
    back = ChainSpec.from_json(made.to_json())
    assert back.hosted_tools == HOSTED and back.options.hosted_tools == HOSTED and back.options.seed == 3
    older = {k: v for k, v in json.loads(spec().to_json()).items() if k != "hosted_tools"}
    read = ChainSpec.from_json(json.dumps({**older, "version": 1}))
    assert read.hosted_tools == () and read.options.hosted_tools is None and read.version == 1


@pytest.mark.parametrize(
    "hosted",
    [
        [{"kind": "teleport"}],
        [{"kind": "web_search", "max_uses": 0}],
        [{"kind": "web_search", "x": 1}],
        "web_search",
        [3],
    ],
)
def test_hosted_tools_edited_into_something_else_are_refused(hosted):
    data = json.loads(spec().to_json())
    with pytest.raises(SpecError, match="malformed"):
        ChainSpec.from_json(json.dumps({**data, "hosted_tools": hosted}))


def test_validation_retries_and_transport_retries_have_two_names():
    client = ScriptedClient(["not json", "still not", '{"n": 1}'])
    model = cf.Model(client)
    assert model.chain("x", schema="n int", validation_retries=2, log=False).value == {"n": 1}
    with pytest.warns(DeprecationWarning, match="validation_retries"):
        assert cf.Model(ScriptedClient(['{"n": 2}'])).chain("x", schema="n int", retries=0, log=False).value
    with pytest.warns(DeprecationWarning, match="transport_retries"):
        list(cf.Model(ScriptedClient(["a"])).map(["a"], log=False, retries=0))
    with pytest.warns(DeprecationWarning, match="validation_retries"):
        cf.Agent(model, name="a", description="d", retries=1)
