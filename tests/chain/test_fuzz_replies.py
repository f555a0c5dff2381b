"""Seeded fuzz: hundreds of bad replies through the four strategies.

Every chain must end in a validated value or a chainform error; no tool may run on invalid
arguments; every model call must be in the log.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import BaseModel, TypeAdapter

import chainform as cf
from chainform.store import Store, new_id
from chainform.testing import ScriptedClient, tool_call
from chainform.testing.emulator import CutStream, DropConnection, MalformedEvent, Stall

SEED = 18
CHAINS = 280
GOOD = {"city": "Rome", "temp_c": 27.0}
GOOD_TEXT = json.dumps(GOOD)


class Answer(BaseModel):
    city: str
    temp_c: float


PROFILES = {
    "native": cf.ModelProfile(name="both", supports_json_schema=True, supports_tools_with_schema=True),
    "tool": cf.ModelProfile(name="tools-only", supports_json_schema=True, supports_tools_with_schema=False),
    "prompted": cf.ModelProfile(name="plain", supports_json_schema=False),
    "deferred": cf.ModelProfile(name="both", supports_json_schema=True, supports_tools_with_schema=True),
}


@dataclass
class ToolLog:
    calls: list[dict[str, Any]] = field(default_factory=list)
    invalid: list[Any] = field(default_factory=list)


TOOL_LOG = ToolLog()


def lookup(city: str, days: int) -> dict[str, Any]:
    """Weather for a city over some days."""
    if not isinstance(city, str) or not isinstance(days, int) or isinstance(days, bool):
        TOOL_LOG.invalid.append((city, days))
    TOOL_LOG.calls.append({"city": city, "days": days})
    return {"city": city, "temp_c": 20.0}


def nested(rng: random.Random) -> str:
    depth = rng.choice([101, 150, 999, 1000, 5000])
    if rng.random() < 0.5:
        return "[" * depth + "]" * depth
    return '{"a": ' * depth + "1" + "}" * depth


def huge(rng: random.Random) -> str:
    if rng.random() < 0.5:
        return json.dumps({"city": "x" * rng.randint(100_000, 300_000), "temp_c": 1})
    return json.dumps([{"city": str(i), "temp_c": i} for i in range(rng.randint(5_000, 20_000))])


def surrogate(rng: random.Random) -> str:
    lone = rng.choice(["\ud800", "\udfff", "\udc80"])
    return rng.choice(
        [
            json.dumps({"city": "a" + lone + "b", "temp_c": 3}),  # escaped: valid JSON, valid answer
            '{"city": "' + lone + '", "temp_c": 3}',  # a raw lone surrogate in the text
            "Sure " + lone + " " + GOOD_TEXT,
            lone * 3,
        ]
    )


def truncated(rng: random.Random) -> str:
    return GOOD_TEXT[: rng.randint(1, len(GOOD_TEXT) - 1)]


INVALID = ["not json", "{'city': 'Rome'}", '{"city": }', "", "   ", "```json\n{\n```", "NaN", "[1, 2", "}{"]
WRONG_TYPES = [
    '{"city": 5, "temp_c": "hot"}',
    "[]",
    "null",
    '"Rome"',
    '{"city": "Rome"}',
    '{"temp_c": 1e400, "city": null}',
    '{"city": "Rome", "temp_c": true}',
]


def text_reply(rng: random.Random) -> str:
    kind = rng.choice(["invalid", "truncated", "nested", "huge", "surrogate", "wrong"])
    if kind == "invalid":
        return rng.choice(INVALID)
    if kind == "truncated":
        return truncated(rng)
    if kind == "nested":
        return nested(rng)
    if kind == "huge":
        return huge(rng) if rng.random() < 0.3 else truncated(rng)
    if kind == "surrogate":
        return surrogate(rng)
    return rng.choice(WRONG_TYPES)


def bad_arguments(rng: random.Random) -> str:
    return rng.choice(
        [
            "{broken",
            '{"city": 1, "days": "x"}',
            '{"city": "Rome"}',
            '{"city": "Rome", "days": 1.5}',
            '{"city": "Rome", "days": true}',
            "[1, 2]",
            '"just text"',
            '{"city": "Rome", "days": 2, "extra": 1}',
            '{"city": "\\ud800", "days": "2"}',
            '{"city": ' + nested(rng) + ', "days": 1}',
            nested(rng),
            truncated(rng),
        ]
    )


def call_reply(rng: random.Random) -> Any:
    kind = rng.choice(["unknown", "bad_args", "output_args", "several", "mixed"])
    if kind == "unknown":
        return tool_call(rng.choice(["nope", "lookup2", "", "final_result_"]), city="Rome")
    if kind == "bad_args":
        return tool_call("lookup", _raw=bad_arguments(rng))
    if kind == "output_args":
        return tool_call("final_result", _raw=rng.choice([bad_arguments(rng), text_reply(rng)]))
    if kind == "several":
        return [tool_call("final_result", **GOOD), tool_call("final_result", city="Oslo", temp_c=1)]
    return [tool_call("lookup", _raw=bad_arguments(rng)), "some text " + surrogate(rng)]


def fault(rng: random.Random) -> BaseException:
    arrived = cf.ChatResponse([cf.Message.assistant("half an answer " + surrogate(rng))])
    return rng.choice(
        [
            cf.ProviderError("backend exploded", status=500),
            cf.StreamInterruptedError("stream broke", partial_response=arrived),
        ]
    )


def good_reply(strategy: str) -> Any:
    return tool_call("final_result", **GOOD) if strategy == "tool" else GOOD_TEXT


@dataclass
class Case:
    strategy: str
    script: list[Any]
    bad: int
    retries: int
    chunk_size: int


def make_case(rng: random.Random) -> Case:
    strategy = rng.choice(list(PROFILES))
    script: list[Any] = []
    bad = rng.randint(1, 3)
    if strategy == "deferred":
        script.append(rng.choice(["Rome is 27 degrees.", surrogate(rng), call_reply(rng)]))
    for _ in range(bad):
        roll = rng.random()
        script.append(text_reply(rng) if roll < 0.48 else call_reply(rng) if roll < 0.96 else fault(rng))
    if rng.random() < 0.6:
        script.append(good_reply(strategy))
    script += [good_reply(strategy)] * 6  # enough script for any retry/continuation path
    longest = max(len(item if isinstance(item, str) else repr(item)) for item in script)
    chunk_size = 4096 if longest > 50_000 else rng.choice([3, 8, 64, 4096])  # huge ones stay quick
    return Case(strategy, script, bad, rng.randint(0, 2), chunk_size)


def check_value(value: Any) -> None:
    assert isinstance(value, Answer)
    TypeAdapter(Answer).validate_python(value.model_dump())


def run_case(case: Case, store: Store) -> str | None:
    """None when the case held; else what broke."""
    TOOL_LOG.invalid.clear()
    client = ScriptedClient(case.script, PROFILES[case.strategy], chunk_size=case.chunk_size)
    cid = new_id()
    chain = cf.Model(client).chain(
        "Weather in Rome?",
        tools=[lookup],
        schema=Answer,
        strategy=case.strategy,
        validation_retries=case.retries,
        chain_limit=3,
        conversation_id=cid,
    )
    try:
        check_value(chain.value)
    except cf.ChainformError:
        pass
    except Exception as exc:  # the break this test exists to find
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    if TOOL_LOG.invalid:
        return f"a tool ran on invalid arguments: {TOOL_LOG.invalid[:3]}"
    logged = len(store.recent(n=None, conversation_id=cid))
    if logged != len(client.requests):
        return f"{len(client.requests)} model calls, {logged} logged"
    return None


def test_fuzzed_bad_replies_end_typed_validated_and_logged():
    rng = random.Random(SEED)
    cases = [make_case(rng) for _ in range(CHAINS)]
    assert sum(c.bad for c in cases) >= 500
    assert {c.strategy for c in cases} == set(PROFILES)
    with Store() as store:
        failures = [(i, c.strategy, why) for i, c in enumerate(cases) if (why := run_case(c, store))]
    assert not failures, "\n".join(f"case {i} ({s}): {why}" for i, s, why in failures[:20])


@pytest.mark.parametrize("strategy", list(PROFILES))
def test_each_strategy_recovers_from_a_bad_reply_then_answers(strategy):
    script = ["[" * 1000 + "]" * 1000, good_reply(strategy)]
    if strategy == "deferred":
        script.insert(0, "Rome is 27 degrees.")
    if strategy == "tool":
        script[-2] = tool_call("final_result", _raw=script[-2])
    client = ScriptedClient(script, PROFILES[strategy])
    chain = cf.Model(client).chain("x", tools=[lookup], schema=Answer, strategy=strategy)
    assert chain.value == Answer(**GOOD)


# Through the wire: each provider's real SDK against the emulator, with the breaks a server makes
# (issue 28 items 1 and 2): a body that ends cleanly too soon (between events or in the middle of
# one), a server that goes silent mid-stream or before answering, a reset, a bad event.
WIRE = {
    "openai-chat": ("openai/gpt-4.1-mini", "/v1", {}),
    "openai-responses": ("openai-responses/gpt-4.1-mini", "/v1", {}),
    "anthropic": ("anthropic/claude-haiku-4-5", "", {}),
    "gemini": ("gemini/gemini-2.5-flash", "", {"retry_initial_delay": 0.01, "retry_jitter": 0}),
    "bedrock": ("bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0", "", {"region": "us-east-1"}),
}
WIRE_KEYS = {"bedrock": "AKIDFUZZ0123456789:fuzz-secret-0123456789"}
WIRE_CHAINS = 45
READ_S = 0.3  # the read timeout that ends a Stall (which lasts 5 s)
CALM_S = 60.0  # the read timeout of every other case: no load makes one of them time out


def wire_fault(rng: random.Random) -> Any:
    """A break early enough to land in the middle of the answer (GOOD_TEXT is 8+ events here)."""
    after = rng.randint(1, 3)
    return rng.choice(
        [
            CutStream(after, GOOD_TEXT, mid_event=False),
            CutStream(after, GOOD_TEXT, mid_event=True),
            Stall(5, GOOD_TEXT, after_events=after),
            Stall(5, GOOD_TEXT),
            DropConnection(after, GOOD_TEXT),
            MalformedEvent(after, GOOD_TEXT),
            GOOD_TEXT,
        ]
    )


def wire_kind(fault: Any) -> str | None:
    """The ProviderError kind a chain must end in (None: the value). Whether it is a
    StreamInterruptedError depends on whether text had arrived, which the wire format decides."""
    if isinstance(fault, str):
        return None
    return "timeout" if isinstance(fault, Stall) else "connection"


def run_wire_case(emu: Any, rng: random.Random, store: Store) -> str | None:
    """None when the case held; else what broke."""
    transport = rng.choice(list(WIRE))
    name, path, settings = WIRE[transport]
    fault, streamed = wire_fault(rng), rng.random() < 0.7
    emu.chunk_size = rng.choice([2, 3, 4])
    emu.script, emu.position = [fault, GOOD_TEXT], 0
    emu.requests.clear()
    key = WIRE_KEYS.get(transport, "sk-fuzz-0123456789abcdef")
    read = READ_S if isinstance(fault, Stall) else CALM_S
    # only the read timeout is short: a connect timed out under load never sends its request
    model = cf.get_model(
        name, base_url=emu.base_url + path, key=key, max_retries=0, timeout=(CALM_S, read), **settings
    )
    with model:  # each case's SDK client and its connections close here, not in a later test
        return _wire_outcome(emu, model, transport, fault, streamed, store)


def _wire_outcome(
    emu: Any, model: cf.Model, transport: str, fault: Any, streamed: bool, store: Store
) -> str | None:
    cid = new_id()
    chain = model.chain("Weather in Rome?", schema=Answer, conversation_id=cid, validation_retries=0)
    try:
        if streamed:
            for _ in chain:
                pass
        check_value(chain.value)
        outcome: BaseException | None = None
    except cf.ChainformError as exc:
        outcome = exc
    except Exception as exc:  # the break this test exists to find
        return f"{transport} {fault!r}: {type(exc).__name__}: {str(exc)[:200]}"
    what = f"{transport} {'streamed' if streamed else 'whole'} {fault!r}"
    kind = wire_kind(fault)
    if kind is None and outcome is not None:
        return f"{what}: {type(outcome).__name__}: {outcome}"
    if kind is not None:
        if not isinstance(outcome, cf.ProviderError) or outcome.kind != kind or not outcome.retryable:
            return f"{what}: expected a retryable ProviderError ({kind}), got {type(outcome).__name__}: {outcome}"
        partial = getattr(outcome, "partial_response", None)
        if partial is not None and not GOOD_TEXT.startswith(partial.text):
            return f"{what}: partial text {partial.text!r} is not what was sent"
    # a client that timed out can be done before the emulator's thread has read its request
    # (CI, under load: "0 requests"): wait until it is there, so this case counts it, not the next
    requests = emu.wait_for_requests(1)
    if len(requests) != 1:
        return f"{what}: {len(requests)} requests (a broken answer was retried or used)"
    logged = len(store.recent(n=None, conversation_id=cid))
    return None if logged == 1 else f"{what}: 1 model call, {logged} logged"


def test_fuzzed_wire_breaks_end_typed_and_logged_on_every_sdk(emulator: Any) -> None:
    rng = random.Random(SEED)
    with Store() as store:
        failures = [why for _ in range(WIRE_CHAINS) if (why := run_wire_case(emulator, rng, store))]
    assert not failures, "\n".join(failures[:20])
