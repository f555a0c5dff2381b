"""`logs` filters as llm has them: -m MODEL, --since, -s/--short, -r/--response, -x/--extract,
-t/--tools, and by map run (--run) or eval (--eval)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from cli_helpers import Scripted
from click.testing import CliRunner, Result

import chainform as cf
from chainform.cli import cli
from chainform.store import Store
from chainform.testing import ScriptedClient, tool_call


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), input="", catch_exceptions=False)


def texts(*args: str) -> list[str]:
    result = invoke("logs", "-n", "0", "--json", *args)
    assert result.exit_code == 0, result.output
    return [row["text"] for row in json.loads(result.stdout)]


@pytest.fixture
def logged(scripted: Scripted) -> None:
    scripted.script(
        [
            "plain answer",
            "code:\n```python\nprint('hi')\n```\nand more\n```\nsecond\n```",
            tool_call("current_time", timezone="UTC"),
            "it is noon",
        ]
    )
    invoke("prompt", "first question", "-m", "openai/gpt-4.1-mini")
    invoke("prompt", "write code", "-m", "anthropic/claude-haiku-4-5")
    invoke("prompt", "what time", "-m", "openai/gpt-4.1-mini", "-T", "current_time")


def test_model_filter(logged) -> None:
    assert texts("-m", "anthropic/claude-haiku-4-5") == [
        "code:\n```python\nprint('hi')\n```\nand more\n```\nsecond\n```"
    ]
    assert texts("-m", "openai/gpt-4.1-mini") == ["plain answer", "", "it is noon"]
    assert texts("-m", "nobody/none") == []


def test_tools_filter_keeps_whole_chains_with_a_tool(logged) -> None:
    assert texts("-t") == ["", "it is noon"]


def test_since(logged) -> None:
    assert len(texts("--since", "1h")) == 4
    assert texts("--since", time.strftime("%Y-%m-%d", time.localtime(time.time() + 2 * 86400))) == []
    bad = invoke("logs", "--since", "yesterday")
    assert bad.exit_code == 2 and "--since" in bad.stderr


def test_response_and_extract(logged) -> None:
    assert invoke("logs", "-r").stdout == "it is noon\n"
    assert invoke("logs", "-r", "-m", "anthropic/claude-haiku-4-5").stdout.startswith("code:\n")
    assert invoke("logs", "-x", "-m", "anthropic/claude-haiku-4-5").stdout == "print('hi')\n"
    none = invoke("logs", "-x")
    assert none.stdout == "" and "no fenced code block" in none.stderr


def test_short_is_one_line_per_call(logged) -> None:
    lines = invoke("logs", "-s", "-n", "0").stdout.splitlines()
    assert len(lines) == 4
    assert "openai/gpt-4.1-mini · chain" in lines[0] and "'first question' -> 'plain answer'" in lines[0]
    assert "tools current_time" in lines[2]


def test_by_map_run_and_by_eval(monkeypatch, tmp_path: Path, scripted: Scripted) -> None:
    from chainform.cli import _map

    scripted.script(["outside the run"])
    invoke("prompt", "not in a run", "-m", "openai/gpt-4.1-mini")
    client = ScriptedClient(["row a", "row b"])
    monkeypatch.setattr(_map, "map_model", lambda name, **kw: cf.AsyncModel(client, name="scripted"))
    rows = tmp_path / "in.txt"
    rows.write_text("a\nb\n")
    out = tmp_path / "out.jsonl"
    assert invoke("map", str(rows), "--output", str(out), "--concurrency", "1").exit_code == 0
    run_id = json.loads(out.read_text().splitlines()[0])["_map"]["run"]
    assert sorted(texts("--run", run_id)) == ["row a", "row b"]
    assert texts("--run", "nosuchrun") == []

    import chainform.models

    evaluated = ScriptedClient(['{"n": 1}'])
    monkeypatch.setattr(chainform.models, "get_model", lambda name, **kw: cf.Model(evaluated, name=name))
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"text": "1", "expected": {"n": 1}}) + "\n")
    ran = invoke("eval", str(data), "--schema", "n int", "-p", "{text}", "-m", "scripted", "--json")
    eval_id = json.loads(ran.stdout)["eval_id"]
    assert texts("--eval", eval_id[:10]) == ['{"n": 1}']
    bad = invoke("logs", "--eval", "nosuch")
    assert bad.exit_code == 2 and "--eval" in bad.stderr
    assert len(Store().recent(None)) == 4
