"""`map --ordered`, `--limit N` (map and eval), and one spelling of model options: `-o KEY VALUE`
on every command, map's output file `--output FILE` (the old `-o FILE` still runs, with a warning)."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import chainform as cf
from chainform.cli import cli
from chainform.cli._map import map_command
from chainform.cli._map_args import DEPRECATION, old_output_spelling
from chainform.testing import ScriptedClient
from chainform.testing.emulator import Emulator, RecordedRequest


def invoke(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def scripted_map(monkeypatch: pytest.MonkeyPatch, count: int) -> ScriptedClient:
    from chainform.cli import _map

    client = ScriptedClient([lambda messages, options: "seen " + messages[-1].text] * count)
    monkeypatch.setattr(_map, "map_model", lambda name, **kw: cf.AsyncModel(client, name="scripted"))
    return client


@pytest.fixture
def rows_file(tmp_path: Path) -> Path:
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"text": f"row {n}"}) + "\n" for n in range(5)))
    return path


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_limit_runs_the_first_rows_only(monkeypatch, rows_file, tmp_path) -> None:
    client = scripted_map(monkeypatch, 5)
    out = tmp_path / "out.jsonl"
    result = invoke("map", str(rows_file), "--output", str(out), "-p", "{text}", "--limit", "2", "-n")
    assert result.exit_code == 0, result.output
    assert sorted(line["text"] for line in lines(out)) == ["row 0", "row 1"]
    assert len(client.requests) == 2 and "map: 2 rows" in result.stderr
    more = invoke(
        "map", str(rows_file), "--output", str(out), "-p", "{text}", "--limit", "3", "--resume", "-n"
    )
    assert more.exit_code == 0 and [line["text"] for line in lines(out)][-1] == "row 2"


def test_limit_is_not_max_rows(monkeypatch, tmp_path) -> None:
    """eval: --limit takes the first rows of a larger file; --max-rows still refuses it."""
    import chainform.models
    from chainform.models import Model

    client = ScriptedClient(['{"n": 0}', '{"n": 1}'])
    monkeypatch.setattr(chainform.models, "get_model", lambda name, **kw: Model(client, name=name))
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"text": f"{n}", "expected": {"n": n}}) + "\n" for n in range(4)))
    argv = ["eval", str(data), "--schema", "n int", "-p", "{text}", "-m", "scripted", "--json"]
    refused = invoke(*argv, "--max-rows", "2")
    assert refused.exit_code == 2 and "more than 2 rows" in refused.stderr and client.requests == []
    result = invoke(*argv, "--limit", "2", "-o", "temperature", "0")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["cells"][0]["rows"] == 2
    assert [options.temperature for _, options in client.requests] == [0, 0]


def row_of(request: RecordedRequest) -> int:
    return int(re.search(r"row (\d+)", json.dumps(request.json["messages"])).group(1))


def test_ordered_writes_rows_in_input_order(emulator: Emulator, rows_file, tmp_path) -> None:
    """Row 0 is answered only once row 4 was asked: it finishes late, and is written first."""
    last_asked = threading.Event()

    def answer(request: RecordedRequest) -> str:
        row = row_of(request)
        if row == 4:
            last_asked.set()
        if row == 0:
            last_asked.wait(60)
        return f"answer {row}"

    emulator.default = answer
    out = tmp_path / "out.jsonl"
    result = invoke(
        "map", str(rows_file), "--output", str(out), "-p", "{text}", "--ordered", "--concurrency", "5", "-n",
        "-m", "openai/gpt-4.1-mini", "--base-url", emulator.base_url + "/v1", "--key", "sk-test",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert [line["value"] for line in lines(out)] == [f"answer {n}" for n in range(5)]


def test_o_is_a_model_option_on_map(monkeypatch, rows_file, tmp_path) -> None:
    client = scripted_map(monkeypatch, 5)
    out = tmp_path / "out.jsonl"
    result = invoke(
        "map", str(rows_file), "-o", "temperature", "0.2", "--output", str(out), "-p", "{text}", "--limit", "1",
        "-o", "max_tokens", "9", "-n",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert DEPRECATION not in result.stderr
    [(_, options)] = client.requests
    assert (options.temperature, options.max_output_tokens) == (0.2, 9)


@pytest.mark.parametrize("spelling", [["-o", "OUT"], ["-oOUT"]])
def test_the_old_output_spelling_runs_with_a_warning(monkeypatch, rows_file, tmp_path, spelling) -> None:
    scripted_map(monkeypatch, 5)
    out = tmp_path / "out.jsonl"
    argv = [str(out) if arg == "OUT" else arg.replace("OUT", str(out)) for arg in spelling]
    result = invoke("map", str(rows_file), *argv, "-p", "{text}", "--limit", "1", "-n")
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith(DEPRECATION) and len(lines(out)) == 1


def test_a_model_option_without_output_is_a_missing_output(monkeypatch, rows_file) -> None:
    client = scripted_map(monkeypatch, 5)
    result = invoke("map", str(rows_file), "-o", "temperature", "0.2", "-p", "{text}")
    assert result.exit_code == 2 and "Missing option '--output'" in result.stderr
    assert client.requests == [] and not Path("temperature").exists()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["in", "-o", "out.jsonl"], ["in", "--output", "out.jsonl"]),
        (["in", "-oout.jsonl", "-o", "seed", "1"], ["in", "--output", "out.jsonl", "-o", "seed", "1"]),
        (["in", "-p", "-o", "-o", "out"], ["in", "-p", "-o", "--output", "out"]),  # -p's value is no option
        (["in", "--output", "f", "-o", "k", "v"], ["in", "--output", "f", "-o", "k", "v"]),
        (["in", "--output=f", "-o", "k", "v"], ["in", "--output=f", "-o", "k", "v"]),
        (["in", "-o", "top_p", "1"], ["in", "-o", "top_p", "1"]),
        (["in", "-o", "max_tokens", "1"], ["in", "-o", "max_tokens", "1"]),
        (["in", "--ray", "-o", "out"], ["in", "--ray", "--output", "out"]),
        (["in", "--", "-o", "out"], ["in", "--", "-o", "out"]),
    ],
)
def test_how_the_old_spelling_is_told_apart(argv: list[str], expected: list[str]) -> None:
    assert old_output_spelling(map_command, argv) == expected
