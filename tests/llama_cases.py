"""What a user does with a llama-cpp-python server, as cases run twice (issue 30): against the real
server (tests/real, `-m real_server`) and against the emulator's LLAMA_CPP_PYTHON quirks, in CI
(tests/providers/test_llama_cpp_cases.py). Each case asserts what holds on both; the callers add
what only they can see (the emulator's recorded requests, the real server's numbers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

import chainform as cf
from chainform.cli import cli
from chainform.map import MapResult

MODEL = "llamacpp/smollm2"
TOOLS = """
def get_weather(city: str) -> dict:
    "Current weather for a city."
    return {"city": city, "temp_c": {"Paris": 18.0, "Rome": 24.5}.get(city, 20.0)}
"""


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def readme_example(base: str) -> dict[str, Any]:
    """The README's first line, `chainform "Invent a dog" --schema 'name, age int'`, at the server."""
    result = run("Invent a dog", "--schema", "name, age int", "-m", MODEL, "--base-url", base)
    assert result.exit_code == 0, result.stderr
    value = json.loads(result.stdout)
    assert isinstance(value["name"], str) and isinstance(value["age"], int)
    return dict(value)


def continued_conversation(base: str, folder: Path) -> tuple[Result, Result]:
    """A tool chain, then `-c`: the second prompt goes out with the first exchange replayed from
    the log (its tool-call turn included) and the server takes it."""
    tools = folder / "weather_tools.py"
    tools.write_text(TOOLS)
    common = ("-m", MODEL, "--base-url", base, "--functions", str(tools))
    first = run("What is the weather in Paris? Call get_weather.", *common)
    assert first.exit_code == 0, first.stderr
    second = run("And what did you find?", "-c", *common)
    assert second.exit_code == 0, second.stderr
    assert second.stdout.strip()
    return first, second


def map_rows(base: str, rows: int = 50) -> list[MapResult]:
    """`model.map` over `rows` rows with a schema: one result per row, each a value that validates
    or a typed row error, none lost."""
    model = cf.get_model(MODEL, base_url=base)
    with model:
        results = list(
            model.map(
                [{"n": i} for i in range(rows)],
                prompt="Invent dog number {n}.",
                schema="name, age int",
                concurrency=4,
                log=False,
            )
        )
    assert len(results) == rows
    assert sorted(r.index for r in results) == list(range(rows))
    for r in results:
        if r.error is None:
            assert isinstance(r.value["name"], str) and isinstance(r.value["age"], int)
    return results
