"""The default command on a scripted model: every option of `chainform [PROMPT]`."""

from __future__ import annotations

import json

import pytest
from cli_helpers import Scripted

from chainform.store import Store
from chainform.testing import tool_call
from chainform.types import ModelProfile

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def test_cli_prompt_streams_text(run, scripted: Scripted) -> None:
    scripted.script(["Paris is the capital."])
    result = run("Capital of France?")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Paris is the capital.\n"
    assert scripted.asked == [("local", None, None)]
    [messages, _] = scripted.client.requests[0]
    assert messages[-1].text == "Capital of France?"


def test_cli_prompt_explicit_subcommand_and_model_key_url(run, scripted: Scripted) -> None:
    scripted.script(["ok"])
    result = run("prompt", "hi", "-m", "openai/gpt-x", "--key", "sk-test", "--base-url", "http://h/v1")
    assert result.exit_code == 0
    assert scripted.asked == [("openai/gpt-x", "sk-test", "http://h/v1")]


def test_cli_prompt_default_model_env_and_saved(run, scripted: Scripted, monkeypatch) -> None:
    scripted.script(["a", "b", "c"])
    assert run("models", "default", "openai/saved-model").stdout.strip() == "openai/saved-model"
    run("prompt", "x")
    monkeypatch.setenv("CHAINFORM_MODEL", "env-model")
    run("prompt", "x")
    run("x", "-m", "flag-model")
    assert [a[0] for a in scripted.asked] == ["openai/saved-model", "env-model", "flag-model"]
    monkeypatch.delenv("CHAINFORM_MODEL")
    assert run("models", "default", "--clear").stdout.strip() == "local"


def test_cli_prompt_system_and_stdin(run, scripted: Scripted) -> None:
    scripted.script(["one", "two"])
    assert run("-s", "Be terse.", input="piped text\n").exit_code == 0
    messages, _ = scripted.client.requests[0]
    assert messages[0].role == "system" and messages[0].text == "Be terse."
    assert messages[-1].text == "piped text"
    run("prompt", "Summarize", input="some document\n")
    messages, _ = scripted.client.requests[1]
    assert messages[-1].text == "some document\n\nSummarize"


def test_cli_prompt_schema_json_output(run, scripted: Scripted) -> None:
    scripted.script(['{"name": "Rex", "age": 3}'])
    result = run("Invent a dog", "--schema", "name, age int")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"name": "Rex", "age": 3}
    assert result.stdout.count("\n") == 1  # compact: stdout is not a terminal
    [row] = Store().recent()
    assert row.parsed == {"name": "Rex", "age": 3}
    assert row.schema["required"] == ["name", "age"]


def test_cli_prompt_schema_multi_and_saved_id(run, scripted: Scripted) -> None:
    scripted.script(['{"items": [{"name": "a"}, {"name": "b"}]}', '{"name": "c"}'])
    result = run("Two dogs", "--schema-multi", "name")
    assert json.loads(result.stdout) == {"items": [{"name": "a"}, {"name": "b"}]}
    sid = run("schemas", "save", "name").stdout.strip()
    result = run("One dog", "--schema", sid[:8])
    assert json.loads(result.stdout) == {"name": "c"}
    assert Store().recent(1)[0].schema_id == sid


def test_cli_prompt_schema_from_file_and_json(run, scripted: Scripted, tmp_path) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(schema))
    scripted.script(['{"n": 1}', '{"n": 2}'])
    assert json.loads(run("x", "--schema", str(path)).stdout) == {"n": 1}
    assert json.loads(run("x", "--schema", json.dumps(schema)).stdout) == {"n": 2}


def test_cli_prompt_tool_chain_with_schema_and_debug(run, scripted: Scripted) -> None:
    scripted.script([tool_call("current_time", timezone="UTC"), "It is noon.", '{"hour": 12}'])
    result = run(
        "What hour?", "-T", "current_time", "--td", "--schema", "hour int", "--strategy", "deferred", "-u"
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"hour": 12}
    assert "Tool call: current_time" in result.stderr and '"utc"' in result.stderr
    assert "Strategy: deferred" in result.stderr
    assert "Token usage:" in result.stderr and "format:" in result.stderr
    tools_offered = scripted.client.requests[0][1].tools
    assert [t.name for t in tools_offered] == ["current_time"]
    purposes = [r.purpose for r in reversed(Store().recent(None))]
    assert purposes == ["chain", "chain", "format"]


def test_cli_prompt_functions_file_and_code(run, scripted: Scripted, tmp_path) -> None:
    code = "def add(a: int, b: int) -> int:\n    'Add two numbers.'\n    return a + b\n\ndef _hidden():\n    pass\n"
    path = tmp_path / "tools.py"
    path.write_text(code.replace("add", "mul").replace("a + b", "a * b"))
    scripted.script([[tool_call("add", a=2, b=3), tool_call("mul", a=2, b=3)], "5 and 6"])
    result = run("compute", "--functions", code, "--functions", str(path), "--td")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "5 and 6\n"
    results = scripted.client.requests[1][0][-1].contents
    assert sorted(r.result for r in results) == [5, 6]
    assert sorted(t.name for t in scripted.client.requests[0][1].tools) == ["add", "mul"]


def test_cli_prompt_t_may_name_a_function_of_functions(run, scripted: Scripted, tmp_path) -> None:
    path = tmp_path / "tools.py"
    path.write_text("def get_weather(city: str) -> dict:\n    'Weather.'\n    return {'city': city}\n")
    scripted.script([tool_call("get_weather", city="Paris"), "sunny"])
    result = run("weather?", "-T", "get_weather", "--functions", str(path), "-T", "current_time")
    assert result.exit_code == 0, result.stderr
    assert sorted(t.name for t in scripted.client.requests[0][1].tools) == ["current_time", "get_weather"]
    result = run("weather?", "-T", "get_wether", "--functions", str(path))
    assert result.exit_code == 2 and "unknown tool 'get_wether'" in result.stderr
    assert "get_weather" in result.stderr  # named among the available tools


def test_cli_prompt_tools_approve(run, scripted: Scripted) -> None:
    scripted.script([tool_call("current_time"), tool_call("current_time"), "done"])
    result = run("time?", "-T", "current_time", "--ta", input="n\ny\n")
    assert result.exit_code == 0, result.stderr
    first = scripted.client.requests[1][0][-1].contents[0]
    second = scripted.client.requests[2][0][-1].contents[0]
    assert first.error and "declined" in first.error
    assert second.error is None and "utc" in second.result
    assert result.stderr.count("Run tool current_time") == 2


def test_cli_prompt_chain_limit_retries_format_options(run, scripted: Scripted) -> None:
    scripted.script([tool_call("current_time"), '{"hour": 1}'])
    result = run(
        "x",
        "-T",
        "current_time",
        "--cl",
        "1",
        "--schema",
        "hour int",
        "--strategy",
        "deferred",
        "--format-context",
        "full",
        "--format-prompt",
        "Make JSON. {schema} {context}",
        "--validation-retries",
        "0",
    )
    assert result.exit_code == 0, result.stderr
    format_messages = scripted.client.requests[1][0]
    sent = "\n".join(m.text for m in format_messages)
    assert "Make JSON." in sent
    [row] = Store().recent(1)
    assert row.purpose == "format" and row.format_context_policy == "full"


def test_cli_prompt_retries_then_structured_error(run, scripted: Scripted) -> None:
    scripted.script(
        ["not json", "still not", "nope"],
        profile=ModelProfile(supports_json_schema=False, supports_tools=False),
    )
    result = run("x", "--schema", "n int", "--validation-retries", "1")
    assert result.exit_code == 4
    assert result.stderr.startswith("Error:") and result.stderr.count("\n") == 1
    assert scripted.client.remaining == 1
    assert [r.purpose for r in reversed(Store().recent(None))] == ["chain", "retry"]


def test_cli_prompt_old_retries_spelling_warns(run, scripted: Scripted) -> None:
    """--retries is the old name of --validation-retries: it works, with a warning; both: exit 2."""
    scripted.script(["not json", '{"n": 1}'])
    result = run("x", "--schema", "n int", "--retries", "1")
    assert result.exit_code == 0 and "Warning: --retries is now --validation-retries" in result.stderr
    assert run("x", "--schema", "n int", "--retries", "1", "--validation-retries", "1").exit_code == 2


def test_cli_prompt_options(run, scripted: Scripted) -> None:
    scripted.script(["x"])
    assert (
        run(
            "x", "-o", "temperature", "0.5", "-o", "max_tokens", "9", "-o", "stop", "END", "-o", "custom", "v"
        ).exit_code
        == 0
    )
    options = scripted.client.requests[0][1]
    assert (options.temperature, options.max_output_tokens, options.stop_sequences) == (0.5, 9, ["END"])
    assert options.additional_properties["custom"] == "v"
    result = run("x", "-o", "temperature", "hot")
    assert result.exit_code == 2 and "temperature must be a number" in result.stderr


def test_cli_prompt_no_stream_no_log_json(run, scripted: Scripted) -> None:
    scripted.script(["hello there", "again"])
    result = run("hi", "--no-stream", "-n")
    assert result.stdout == "hello there\n"
    assert Store().recent() == []
    result = run("hi", "--json")
    doc = json.loads(result.stdout)
    assert doc["text"] == "again" and doc["responses"][0]["purpose"] == "chain"
    assert doc["usage"]["total_tokens"] > 0 and doc["conversation_id"]


def test_cli_prompt_continue_conversation(run, scripted: Scripted) -> None:
    scripted.script(["Hello Ada!", "Your name is Ada.", "Still Ada."])
    run("My name is Ada")
    cid = Store().last_conversation_id()
    run("What is my name?", "-c")
    history = [m.text for m in scripted.client.requests[1][0]]
    assert history == ["My name is Ada", "Hello Ada!", "What is my name?"]
    run("And now?", "--cid", cid)
    assert len(scripted.client.requests[2][0]) == 5
    assert {r.conversation_id for r in Store().recent(None)} == {cid}


def test_cli_prompt_continue_errors(run, scripted: Scripted) -> None:
    scripted.script([])
    result = run("x", "-c")
    assert result.exit_code == 2 and "no logged conversation" in result.stderr
    result = run("x", "--cid", "nope")
    assert result.exit_code == 2 and "nope" in result.stderr
