"""Progress: `eval` shows a bar per cell (rows, right so far, cost, ETA) on a terminal and nothing
on a pipe; an in-process model's loading is a step of its own in `map` and `eval`, before any row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import chainform as cf
from chainform.cli import cli
from chainform.models import Model
from chainform.testing import ScriptedClient


class LoadingClient(ScriptedClient):
    """A scripted in-process model with weights to load (as the local client has)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.events: list[str] = []

    def load(self) -> None:
        self.events.append("load")

    async def _stream(self, messages, options):  # type: ignore[no-untyped-def, override]
        self.events.append("call")
        async for update in super()._stream(messages, options):
            yield update


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), input="", catch_exceptions=False)


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    from chainform.cli import _output

    monkeypatch.setattr(_output, "stderr_is_terminal", lambda: True)


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps({"text": f"{n}", "expected": {"n": n}}) + "\n" for n in range(3)))
    return path


def scripted_eval(monkeypatch: pytest.MonkeyPatch) -> LoadingClient:
    import chainform.models

    client = LoadingClient(['{"n": 0}', '{"n": 1}', '{"n": 7}'])
    monkeypatch.setattr(chainform.models, "get_model", lambda name, **kw: Model(client, name=name))
    return client


def run_eval(data: Path) -> Result:
    return invoke(
        "eval", str(data), "--schema", "n int", "-p", "{text}", "-m", "scripted", "--concurrency", "1"
    )


def test_eval_shows_a_bar_per_cell_on_a_terminal(monkeypatch, data, terminal) -> None:
    client = scripted_eval(monkeypatch)
    result = run_eval(data)
    assert result.exit_code == 0, result.output
    assert client.events == ["load", "call", "call", "call"]
    assert result.stderr.startswith("eval: loading model scripted... loaded\n")
    bar = next(line for line in result.stderr.splitlines() if line.startswith("scripted / auto"))
    assert "3/3 rows, 2 right, cost unknown" in bar or "3/3 rows, 2 right, $" in bar


def test_eval_shows_nothing_on_a_pipe(monkeypatch, data) -> None:
    client = scripted_eval(monkeypatch)
    result = run_eval(data)
    assert result.exit_code == 0, result.output
    assert client.events[0] == "load"  # loaded all the same, silently
    assert "loading" not in result.stderr and "rows," not in result.stderr
    assert result.stderr.startswith("eval: ")


def test_map_loads_the_model_as_a_step_before_the_bar(monkeypatch, tmp_path, terminal) -> None:
    from chainform.cli import _map

    client = LoadingClient(["a", "b"])
    monkeypatch.setattr(_map, "map_model", lambda name, **kw: cf.AsyncModel(client, name="scripted"))
    rows = tmp_path / "in.txt"
    rows.write_text("x\ny\n")
    result = invoke("map", str(rows), "--output", str(tmp_path / "out.jsonl"), "-m", "local", "-n")
    assert result.exit_code == 0, result.output
    assert client.events == ["load", "call", "call"]
    assert result.stderr.startswith("map: loading model local... loaded\n")
