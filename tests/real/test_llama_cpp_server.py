"""Tool chains with a schema against a real llama-cpp-python server (SmolLM2-135M,
chatml-function-calling), through `openai/` at its base URL and `llamacpp/`, streamed and not.
What each case picked and what fell back is printed (`-s`) for docs/providers.md."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import chainform as cf
import llama_cases

pytestmark = pytest.mark.real_server

SCHEMA = "city, temp_c float"


def get_weather(city: str) -> dict[str, float]:
    "Current weather for a city."
    return {"temp_c": 18.0}


def _model(prefix: str, base: str) -> cf.Model:
    name = "openai/smollm2" if prefix == "openai" else "llamacpp/smollm2"
    return cf.get_model(name, base_url=base, key="x")


def _posts(log: Path) -> int:
    """Chat requests the server has answered so far (uvicorn's access log)."""
    return log.read_bytes().count(b'"POST /v1/chat/completions HTTP')


def _sent_once_each(log: Path, before: int, calls: int) -> int:
    """The requests the server got for a chain: one a recorded call (no SDK retry of a rejection)."""
    deadline = time.monotonic() + 30  # a bound, not a measure: the line comes, late on a busy machine
    while _posts(log) - before < calls and time.monotonic() < deadline:
        time.sleep(0.1)  # the access log line of the last answer may lag behind it
    sent = _posts(log) - before
    assert sent == calls, f"{sent} requests for {calls} calls: a request was retried"
    return sent


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("strategy", ["auto", "tool", "deferred", "prompted"])
@pytest.mark.parametrize("prefix", ["openai", "llamacpp"])
def test_tool_chain_with_a_schema_ends_in_a_valid_value(
    llama_server: str, llama_log: Path, prefix: str, strategy: str, streamed: bool
) -> None:
    """A value that validates, or (only for `prompted`, which the 135M model cannot write: no
    grammar holds it to JSON) the typed StructuredOutputError; never a provider failure."""
    model = _model(prefix, llama_server)
    before = _posts(llama_log)
    chain = model.chain(
        "What is the weather in Paris? Call get_weather, then answer.",
        tools=[get_weather],
        schema=SCHEMA,
        strategy=strategy,
        stream=streamed,
        log=False,
    )
    where = f"REAL {prefix} {strategy} {'streamed' if streamed else 'whole'}"
    try:
        if streamed:
            list(chain)
        value = chain.value
    except cf.StructuredOutputError as exc:
        sent = _sent_once_each(llama_log, before, len(exc.responses))
        print(f"\n{where}: no value ({type(exc).__name__}) calls={sent} refusals={sorted(model.refusals)}")
        assert strategy == "prompted", exc
        return
    sent = _sent_once_each(llama_log, before, len(chain.responses))
    assert isinstance(value["city"], str) and isinstance(value["temp_c"], int | float)
    print(
        f"\n{where}: value {value} picked={chain.strategy.name} requested={chain.strategy.requested} "
        f"calls={sent} refusals={sorted(model.refusals)}"
    )


def test_too_long_a_prompt_is_a_typed_error(llama_server: str) -> None:
    model = _model("llamacpp", llama_server)
    with pytest.raises(cf.ProviderError) as info:
        model.chain("word " * 5000, log=False).value
    assert not info.value.retryable or info.value.kind != "server"


# The user journeys of tests/llama_cases.py; CI runs them against the emulator's quirks
# (tests/providers/test_llama_cpp_cases.py).


def test_readme_example_at_the_real_server(llama_server: str) -> None:
    print(f"\nREAL readme example: {llama_cases.readme_example(llama_server)}")


def test_continued_conversation_at_the_real_server(llama_server: str, tmp_path: Path) -> None:
    first, second = llama_cases.continued_conversation(llama_server, tmp_path)
    print(f"\nREAL -c: first {first.stdout.strip()[:80]!r}, then {second.stdout.strip()[:80]!r}")


def test_map_over_50_rows_at_the_real_server(llama_server: str) -> None:
    results = llama_cases.map_rows(llama_server, 50)
    errors = sorted({r.error.phase for r in results if r.error is not None})
    print(f"\nREAL map: {sum(r.ok for r in results)} of 50 rows a value; row errors {errors}")
    for r in results:
        if r.error is not None:
            print(f"REAL map row {r.index}: {r.error.phase}: {str(r.error)[:200]}")
    assert all(
        r.error is None or r.error.phase in ("output", "format") for r in results
    )  # none a provider failure
