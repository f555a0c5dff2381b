"""Fallback across models (`cf.get_model(..., fallback=[...])`), through the real SDKs and the
emulator: provider faults on the first model move the chain to the next, whose strategy is
chosen for its own profile; every record names the model that answered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import chainform as cf
from chainform.store import Store
from chainform.testing import tool_call
from chainform.testing.emulator import DropConnection, Emulator, Fault

pytestmark = pytest.mark.usefixtures("openai_isolated")

FIRST = "openai/gpt-4.1-mini"
SECOND = "anthropic/claude-haiku-4-5"


def weather(city: str) -> dict[str, object]:
    """Current weather for a city."""
    return {"city": city, "temp_c": 21}


def _models(emu: Emulator, **kwargs: object) -> cf.Model:
    second = cf.get_model(SECOND, key="sk-ant-test", base_url=emu.base_url, max_retries=0)
    return cf.get_model(
        FIRST,
        key="sk-test",
        base_url=emu.base_url + "/v1",
        max_retries=1,
        fallback=[second],
        profile="openai",  # the emulator plays OpenAI
        **kwargs,
    )


FAULTS = {
    # each fault twice: the first model's SDK retries once (max_retries=1), then the chain moves on
    "429 after retries": [Fault(429, retry_after=0.01, message="rate limited")] * 2,
    "500": [Fault(500)] * 2,
    "dropped connection": [DropConnection(after_events=0)] * 2,
}


@pytest.mark.parametrize("faults", FAULTS.values(), ids=FAULTS.keys())
def test_a_tool_chain_finishes_on_the_second_model(emulator: Emulator, faults: list[object]) -> None:
    emulator.add(
        tool_call("weather", city="Paris"),  # the first model runs a tool, then fails
        *faults,
        '{"city": "Paris", "temp_c": 21}',
    )
    model = _models(emulator)
    chain = model.chain("Weather in Paris?", tools=[weather], schema="city, temp_c int", stream=False)
    assert chain.value == {"city": "Paris", "temp_c": 21}
    calls = chain.responses
    assert [c.model for c in calls] == [FIRST, FIRST, SECOND]
    assert calls[1].failed and calls[2].failed is None
    # the second model continued the transcript: the tool ran once, its result went to Anthropic
    anthropic = [r for r in emulator.requests if r.path.endswith("/messages")]
    assert len(anthropic) == 1
    assert "21" in json.dumps(anthropic[0].json["messages"])
    assert set(chain.usage.by_model) == {FIRST, SECOND}
    with Store() as store:
        rows = store.recent(n=None)
    assert sorted(r.model for r in rows) == sorted([FIRST, FIRST, SECOND])


def test_the_strategy_is_chosen_again_for_the_fallback_model(emulator: Emulator) -> None:
    emulator.add(Fault(500), "Rome: 19 C.", '{"city": "Rome", "temp_c": 19}')
    second = cf.get_model("ollama/llama3.2", base_url=emulator.base_url + "/v1", max_retries=0)
    model = cf.get_model(
        FIRST, key="k", base_url=emulator.base_url + "/v1", max_retries=0, fallback=[second], profile="openai"
    )
    chain = model.chain("Weather?", tools=[weather], schema="city, temp_c int", stream=False)
    assert chain.value == {"city": "Rome", "temp_c": 19}
    assert [(c.model, c.strategy) for c in chain.responses] == [
        (FIRST, "native"),
        # ollama cannot be made to call a tool: its tool phase, then a formatting call
        ("ollama/llama3.2", "deferred"),
        ("ollama/llama3.2", "deferred"),
    ]
    first, again, formatting = (r.json for r in emulator.requests)
    assert "response_format" in first and "response_format" not in again
    assert "final_result" not in json.dumps(again["tools"]) and "tools" not in formatting


def test_a_caller_fault_does_not_fall_through_unless_asked(emulator: Emulator) -> None:
    emulator.add(Fault(400, message="bad field"), Fault(400, message="bad field"), "fine")
    with pytest.raises(cf.ProviderError) as info:
        _models(emulator).prompt("Hi?", stream=False).text()
    assert info.value.kind == "bad_request" and not isinstance(info.value, cf.AllModelsFailedError)
    chain = _models(emulator, fallback_on=["bad_request"]).prompt("Hi?", stream=False)
    assert chain.text() == "fine"
    assert [c.model for c in chain.responses] == [FIRST, SECOND]


def test_every_model_failing_names_each(emulator: Emulator) -> None:
    emulator.add(*[Fault(503)] * 3)
    chain = _models(emulator).prompt("Hi?", stream=False)
    with pytest.raises(cf.AllModelsFailedError) as info:
        chain.text()
    assert [name for name, _ in info.value.errors] == [FIRST, SECOND]
    assert FIRST in str(info.value) and SECOND in str(info.value)
    assert len(info.value.responses) == 2


def test_bad_fallback_lists_fail_before_any_call(emulator: Emulator, monkeypatch: pytest.MonkeyPatch) -> None:
    url = emulator.base_url + "/v1"
    with pytest.raises(cf.ModelNotFoundError, match="nosuch/model"):
        cf.get_model(FIRST, key="k", base_url=url, fallback=["nosuch/model"])
    with pytest.raises(ValueError, match="the model itself"):
        cf.get_model(FIRST, key="k", base_url=url, fallback=[FIRST])
    with pytest.raises(ValueError, match=r"'4\.1-mini' names the model itself"):  # an alias of it
        cf.get_model(FIRST, key="k", base_url=url, fallback=["4.1-mini"])
    with pytest.raises(ValueError, match="'local' again"):
        cf.get_model(FIRST, key="k", base_url=url, fallback=["local", "local"])
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(cf.MissingKeyError, match=SECOND):
        cf.get_model(FIRST, key="k", base_url=url, fallback=[SECOND])
    with pytest.raises(ValueError, match="fallback_on"):
        cf.get_model(FIRST, key="k", base_url=url, fallback=["local"], fallback_on=["oops"])
    assert emulator.requests == []


def test_a_map_finishes_on_the_second_model(emulator: Emulator, tmp_path: Path) -> None:
    emulator.add(*[Fault(500), Fault(500), '{"n": 1}'] * 2)  # each row: the SDK's retry, then the second
    model = _models(emulator)
    results = list(model.map(["one", "two"], schema="n int", concurrency=1, transport_retries=0))
    assert [r.data for r in results] == [{"n": 1}, {"n": 1}]
    with Store() as store:
        rows = store.recent(n=None)
    answered = [r.model for r in rows if not r.error]
    assert answered == [SECOND, SECOND]


def test_cli_prompt_and_map_take_fallbacks(
    emulator: Emulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from chainform.cli import cli

    monkeypatch.setenv("OLLAMA_BASE_URL", emulator.base_url + "/v1")
    first = ["-m", FIRST, "--base-url", emulator.base_url + "/v1", "--key", "sk-test"]
    emulator.add(*[Fault(503)] * 3, "from ollama")  # the OpenAI SDK retries twice by default
    done = CliRunner().invoke(cli, ["Hi?", *first, "--fallback", "ollama/llama3.2", "--json"])
    assert done.exit_code == 0, done.output
    assert [c["model"] for c in json.loads(done.output)["responses"]] == [FIRST, "ollama/llama3.2"]

    rows, out = tmp_path / "in.txt", tmp_path / "out.jsonl"
    rows.write_text("one\ntwo\n")
    emulator.add(*[Fault(500), '{"n": 2}'] * 2)
    argv = ["map", str(rows), "-o", str(out), *first, "--schema", "n int", "--transport-retries", "0"]
    done = CliRunner().invoke(cli, [*argv, "--concurrency", "1", "--fallback", "ollama/llama3.2"])
    assert done.exit_code == 0, done.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(line["value"], line["_map"]["model"]) for line in lines] == [({"n": 2}, "ollama/llama3.2")] * 2

    bad = CliRunner().invoke(cli, ["Hi?", *first, "--fallback", "nosuch/model"])
    assert bad.exit_code != 0 and bad.output.startswith("Error:") and "nosuch/model" in bad.output


def test_a_subagent_falls_back_like_any_chain(emulator: Emulator) -> None:
    emulator.add(
        tool_call("census", task="Rome?"),  # the parent (first model) calls the subagent
        Fault(500),  # the subagent's first model fails (no SDK retry)...
        "2.8 million",  # ...and its fallback answers
        "Rome: 2.8 million",  # the parent's answer
    )
    url = emulator.base_url + "/v1"
    second = cf.get_model("openai/gpt-4.1", key="k", base_url=url, max_retries=0)
    sub = cf.get_model(FIRST, key="k", base_url=url, max_retries=0, fallback=[second])
    agent = cf.Agent(sub, name="census", description="Population of a city")
    parent = cf.get_model(FIRST, key="k", base_url=url, max_retries=0)
    chain = parent.chain("How many in Rome?", tools=[agent], stream=False)
    assert chain.text() == "Rome: 2.8 million"
    (run,) = chain.agent_runs
    assert [c.model for c in run.calls] == [FIRST, "openai/gpt-4.1"]


def test_the_same_model_object_twice_in_fallback_is_refused(emulator: Emulator) -> None:
    url = emulator.base_url + "/v1"
    second = cf.get_model("openai/gpt-4.1", key="k", base_url=url)
    with pytest.raises(ValueError, match="the same model object is given twice"):
        cf.get_model(FIRST, key="k", base_url=url, fallback=[second, second])
    assert emulator.requests == []


def test_max_cost_with_an_unpriced_fallback_is_refused_before_any_call(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from chainform.cli import cli

    monkeypatch.setenv("OLLAMA_BASE_URL", emulator.base_url + "/v1")
    first = ["-m", FIRST, "--base-url", emulator.base_url + "/v1", "--key", "sk-test"]
    result = CliRunner().invoke(cli, ["Hi?", *first, "--fallback", "ollama/llama3.2", "--max-cost", "1"])
    assert result.exit_code == 2 and "ollama/llama3.2" in result.stderr, result.output
    assert emulator.requests == []


def test_a_fallback_taking_over_mid_stream_is_said_on_stderr_and_stdout_starts_over(
    emulator: Emulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from chainform.cli import cli

    monkeypatch.setenv("OLLAMA_BASE_URL", emulator.base_url + "/v1")
    first = ["-m", FIRST, "--base-url", emulator.base_url + "/v1", "--key", "sk-test", "--timeout", "5"]
    emulator.add(DropConnection(after_events=3, reply="AAAA partial answer"), "BBBB answer from B")
    result = CliRunner().invoke(cli, ["Hi?", *first, "--fallback", "ollama/llama3.2"])
    assert result.exit_code == 0, result.output
    assert "failed" in result.stderr and "fallback model" in result.stderr
    assert result.stdout.rstrip().endswith("BBBB answer from B")
    assert "AAAA" not in result.stdout.splitlines()[-1]  # B's answer on a line of its own


def test_a_schema_answer_streamed_across_a_fallback_is_only_the_answering_models_json(
    emulator: Emulator,
) -> None:
    emulator.add(DropConnection(after_events=3, reply='{"city": "Rome and more"}'), '{"city": "Paris"}')
    url = emulator.base_url + "/v1"
    second = cf.get_model("openai/gpt-4.1", key="k", base_url=url, max_retries=0, profile="openai")
    model = cf.get_model(FIRST, key="k", base_url=url, max_retries=0, profile="openai", fallback=[second])
    chain = model.chain("city?", schema="city str")
    partials = [e.value for e in chain.events(partials=True) if e.kind == "partial"]
    assert chain.value == {"city": "Paris"}
    assert partials[-1] == {"city": "Paris"}  # B's JSON alone, never glued to A's cut-short text


def test_a_library_chain_with_max_cost_and_an_unpriced_fallback_is_refused_before_any_call(
    emulator: Emulator,
) -> None:
    url = emulator.base_url + "/v1"
    second = cf.get_model("vllm/my-model", key="k", base_url=url)
    model = cf.get_model(FIRST, key="k", base_url=url, profile="openai", fallback=[second])
    with pytest.raises(cf.errors.PricingError, match="vllm/my-model"):
        model.chain("Hi?", max_cost=1)
    assert emulator.requests == []


def test_a_stream_that_falls_over_says_so_and_its_partials_start_over(emulator: Emulator) -> None:
    emulator.add(DropConnection(after_events=3, reply='{"city": "Rome and more"}'), '{"city": "Paris"}')
    url = emulator.base_url + "/v1"
    second = cf.get_model("openai/gpt-4.1", key="k", base_url=url, max_retries=0, profile="openai")
    model = cf.get_model(FIRST, key="k", base_url=url, max_retries=0, profile="openai", fallback=[second])
    chain = model.chain("city?", schema="city str")
    events = list(chain.events())
    from chainform.schema.partial import PartialJSON

    [at] = [n for n, e in enumerate(events) if e.kind == "fallback"]
    switch = events[at]
    assert (switch.value.failed, switch.value.model) == (FIRST, "openai/gpt-4.1")
    assert switch.value.error.kind == "connection" and "openai/gpt-4.1 answers from here" in switch.text
    assert events[at - 1].kind == "call_end" and "failed" in events[at - 1].text  # A's call closed first
    fed = PartialJSON()  # A's partials are those of its chunks as they came, none made at its end:
    grown = [fed.feed(e.text) for e in events[:at] if e.kind == "text"]  # its cut-short JSON is
    assert [e.value for e in events[:at] if e.kind == "partial"] == [
        v for v in grown if v is not None
    ]  # never finished
    after = events[at + 1 :]
    assert json.loads("".join(e.text for e in after if e.kind == "text")) == {"city": "Paris"}
    fed = PartialJSON()  # B's partials start over: those of B's chunks alone, from the first
    grown = [fed.feed(e.text) for e in after if e.kind == "text"]
    assert [e.value for e in after if e.kind == "partial"] == [v for v in grown if v is not None]
    assert [e.value for e in after if e.kind == "partial"][-1] == {"city": "Paris"}
    assert list(chain.partial())[-1] == {"city": "Paris"}
