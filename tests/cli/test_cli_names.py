"""Consistent names: `logs list` is `logs`, bare `keys` lists the key names (never a key),
`eval list` lists past evals, `tools --functions FILE` lists your own tools."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import Scripted
from click.testing import CliRunner, Result

from chainform.cli import cli
from chainform.models import Model
from chainform.testing import ScriptedClient


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), input="", catch_exceptions=False)


def test_logs_list_is_logs(scripted: Scripted) -> None:
    scripted.script(["first", "second"])
    invoke("prompt", "one", "-m", "openai/gpt-4.1-mini")
    invoke("prompt", "two", "-m", "openai/gpt-4.1-mini")
    assert invoke("logs", "list", "-n", "1", "--json").stdout == invoke("logs", "-n", "1", "--json").stdout
    assert [row["text"] for row in json.loads(invoke("logs", "list", "--json").stdout)] == ["first", "second"]
    assert "second" in invoke("logs", "list").stdout


def test_bare_keys_lists_the_names_never_the_keys() -> None:
    from chainform.keys import set_key

    set_key("openai", "sk-secret-value-1")
    set_key("anthropic", "sk-ant-secret-2")
    bare = invoke("keys")
    assert bare.exit_code == 0 and sorted(bare.stdout.split()) == ["anthropic", "openai"]
    assert bare.stdout == invoke("keys", "list").stdout and "secret" not in bare.output


def test_eval_list_lists_past_evals(monkeypatch, tmp_path: Path) -> None:
    import chainform.models

    def answer(messages, options) -> str:  # row "0" right, row "1" wrong, in whatever order rows run
        return '{"n": 0}' if messages[-1].text.strip().endswith("0") else '{"n": 7}'

    client = ScriptedClient([answer, answer])
    monkeypatch.setattr(chainform.models, "get_model", lambda name, **kw: Model(client, name=name))
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"text": f"{n}", "expected": {"n": n}}) + "\n" for n in range(2)))
    assert invoke("eval", "list").stdout == ""
    ran = invoke("eval", str(data), "--schema", "n int", "-p", "{text}", "-m", "scripted", "--json")
    eval_id = json.loads(ran.stdout)["eval_id"]
    listed = invoke("eval", "list")
    assert listed.exit_code == 0 and listed.stdout.startswith(eval_id)
    assert "1/2 right" in listed.stdout
    [item] = json.loads(invoke("eval", "list", "--json").stdout)
    assert item["id"] == eval_id and item["cells"][0]["right"] == 1


def test_tools_functions_lists_your_own_tools(tmp_path: Path) -> None:
    path = tmp_path / "mine.py"
    path.write_text("def add(a: int, b: int) -> int:\n    'Add two numbers.'\n    return a + b\n")
    listed = json.loads(invoke("tools", "--functions", str(path), "--json").stdout)
    assert [(s["origin"], [t["name"] for t in s["tools"]]) for s in listed] == [("functions", ["add"])]
    table = invoke("tools", "--functions", str(path)).stdout
    assert "add" in table and "Add two numbers" in table and "current_time" not in table
    bad = invoke("tools", "--functions", str(tmp_path / "none.py"))
    assert bad.exit_code == 2 and "file not found" in bad.stderr
