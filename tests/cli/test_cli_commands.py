"""Subcommands: logs, schemas, models, tools, keys, local prepare."""

from __future__ import annotations

import json
import os
import stat
import sys
import types
from pathlib import Path

from cli_helpers import Scripted
from click.testing import CliRunner

from chainform.cli import _tools, cli
from chainform.store import Store
from chainform.testing import tool_call


def _fill_log(run, scripted: Scripted) -> None:
    scripted.script(
        ["Pelicans are birds.", tool_call("current_time"), "It is noon.", '{"hour": 12}'], chunk_size=100
    )
    run("Tell me about pelicans")
    run("What hour is it?", "-T", "current_time", "--schema", "hour int", "--strategy", "deferred")


def test_cli_logs_markdown(run, scripted: Scripted) -> None:
    _fill_log(run, scripted)
    out = run("logs", "-n", "0").stdout
    assert out.index("Tell me about pelicans") < out.index("What hour is it?")
    assert "### Tool calls" in out and "`current_time({})`" in out and "### Tool results" in out
    assert "· format · strategy deferred" in out
    assert "Format context: policy compact" in out and "PREFERRED SOURCE" not in out
    assert "Usage:" not in out
    full = run("logs", "-n", "1", "--format-context", "-u").stdout
    assert "### Format context (policy compact)" in full and "It is noon." in full and "Usage: " in full
    assert "pelicans" not in full
    assert run("logs", "path").stdout.strip() == str(Store().path)


def test_cli_logs_json_and_filters(run, scripted: Scripted) -> None:
    _fill_log(run, scripted)
    rows = json.loads(run("logs", "-n", "0", "--json").stdout)
    assert [r["purpose"] for r in rows] == ["chain", "chain", "chain", "format"]
    assert rows[-1]["parsed"] == {"hour": 12} and rows[-1]["format_context"]
    assert [r["prompt"] for r in json.loads(run("logs", "-q", "pelicans", "--json").stdout)] == [
        "Tell me about pelicans"
    ]
    first_cid = rows[0]["conversation_id"]
    assert len(json.loads(run("logs", "--cid", first_cid, "--json").stdout)) == 1
    assert len(json.loads(run("logs", "-c", "-n", "0", "--json").stdout)) == 3
    assert len(json.loads(run("logs", "--chain", rows[-1]["chain_id"], "-n", "0", "--json").stdout)) == 3
    by_schema = json.loads(run("logs", "--schema", "hour int", "-n", "0", "--json").stdout)
    assert len(by_schema) == 3
    assert (
        json.loads(run("logs", "--schema", rows[-1]["schema_id"][:6], "-n", "0", "--json").stdout)
        == by_schema
    )
    assert run("logs", "-n", "-1").exit_code == 2


def test_cli_logs_empty(run) -> None:
    assert run("logs").stdout.strip() == ""
    assert json.loads(run("logs", "--json").stdout) == []


def test_cli_schemas(run, scripted: Scripted) -> None:
    _fill_log(run, scripted)
    listed = json.loads(run("schemas", "--json").stdout)
    assert len(listed) == 1 and listed[0]["uses"] == 3
    sid = listed[0]["id"]
    assert sid[:12] in run("schemas", "list").stdout
    assert json.loads(run("schemas", "show", sid[:8]).stdout)["required"] == ["hour"]
    missing = run("schemas", "show", "ffffffff")
    assert missing.exit_code == 2 and "no saved schema" in missing.stderr
    dsl = json.loads(run("schemas", "dsl", "name, age int: years").stdout)
    assert dsl["properties"]["age"] == {"type": "integer", "description": "years"}
    assert json.loads(run("schemas", "dsl", "name", "--multi").stdout)["required"] == ["items"]
    bad = run("schemas", "dsl", "name blob")
    assert bad.exit_code == 2 and "unknown type" in bad.stderr


def test_cli_models_lists_registry(run) -> None:
    out = run("models").stdout
    assert "openai/gpt-4.1-mini" in out and "tools" in out
    entries = json.loads(run("models", "--json").stdout)
    mini = next(e for e in entries if e["name"] == "openai/gpt-4.1-mini")
    assert "supports_tools_with_schema" in mini["capabilities"]
    assert run("models", "default").stdout.strip() == "local"


def test_cli_models_without_registry(run, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "chainform.clients.registry", None)
    result = run("models")
    assert result.exit_code == 1 and "registry" in result.stderr


def test_cli_tools_builtins_and_plugins(run, monkeypatch) -> None:
    def weather(city: str) -> str:
        """Weather for a city."""
        return "sunny"

    class EP:
        def __init__(self, name: str, target: object) -> None:
            self.name, self.dist, self._target = name, types.SimpleNamespace(name="demo-plugin"), target

        def load(self) -> object:
            if isinstance(self._target, Exception):
                raise self._target
            return self._target

    eps = [EP("weather", weather), EP("broken", ImportError("no module named x"))]
    monkeypatch.setattr(
        "importlib.metadata.entry_points", lambda group: eps if group == _tools.ENTRY_POINT_GROUP else []
    )
    out = run("tools").stdout
    assert "current_time" in out and "python" in out and "weather" in out and "plugin demo-plugin" in out
    assert "failed to load" in out
    data = json.loads(run("tools", "--json").stdout)
    assert next(s for s in data if s["source"] == "weather")["tools"][0]["parameters"]["required"] == ["city"]
    assert [t.name for t in _tools.resolve_tools(("weather",))] == ["weather"]
    result = run("x", "-T", "broken")
    assert result.exit_code == 2 and "failed to load" in result.stderr


def test_cli_keys(run, home) -> None:
    assert run("keys", "set", "openai", "--value", "sk-abc").exit_code == 0
    assert run("keys", "set", "gemini", input="g-key\n").exit_code == 0
    path = run("keys", "path").stdout.strip()
    assert path == str(home / "keys.json")
    assert json.loads(Path(path).read_text()) == {"gemini": "g-key", "openai": "sk-abc"}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    listed = run("keys", "list").stdout
    assert listed.split() == ["gemini", "openai"] and "sk-abc" not in listed
    assert run("keys", "set", "x", "--value", "").exit_code == 2


def test_cli_local_prepare(run, monkeypatch) -> None:
    calls = []
    fake = types.ModuleType("chainform.local")
    fake.prepare = lambda *a, **k: calls.append((a, k)) or "/cache/smollm2"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "chainform.local", fake)
    result = run("local", "prepare")
    defaults = {"backend": "torch", "precision": "int8", "force": False}
    assert result.exit_code == 0 and calls == [(("smollm2",), defaults)] and "/cache/smollm2" in result.stdout
    run("local", "prepare", "--model", "m.gguf", "--force")
    assert calls[-1] == (("m.gguf",), {**defaults, "force": True})
    run("local", "prepare", "--backend", "onnx", "--precision", "fp32")
    assert calls[-1] == (("smollm2",), {**defaults, "backend": "onnx", "precision": "fp32"})
    assert run("local", "prepare", "--backend", "gguf").exit_code == 2
    monkeypatch.setitem(sys.modules, "chainform.local", types.ModuleType("chainform.local"))
    result = run("local", "prepare")
    assert result.exit_code == 1 and "chainform[local]" in result.stderr


def test_prompt_and_map_share_one_definition_of_their_common_options(run) -> None:
    """-m, --strategy and --chain-limit are declared once (cli/_options.py) for both commands."""
    for command in (["prompt", "--help"], ["map", "--help"]):
        out = " ".join(run(*command).stdout.split())
        assert "--strategy [auto|native|tool|prompted|deferred]" in out, command
        assert "How the schema is enforced. [default: auto]" in out, command
        assert "--cl, --chain-limit INTEGER RANGE" in out and "Most model calls in the tool phase." in out
    for command in (["prompt"], ["map", "in.jsonl", "-o", "out.jsonl"]):
        bad = CliRunner().invoke(cli, [*command, "-m", " ", "x"])
        assert bad.exit_code == 2 and "the model name is empty" in bad.output, command
