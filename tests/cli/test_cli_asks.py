"""The CLI side of issue 46: one `Error:` line and the documented exit code for each bad input,
before any call; a cut-off answer names the option to raise."""

from __future__ import annotations

from chainform.types import ChatResponse, FinishReason, Message, UsageDetails


def _cut(text: str) -> ChatResponse:
    return ChatResponse(
        [Message.assistant(text)], finish_reason=FinishReason.LENGTH, usage_details=UsageDetails(3, 5, 8)
    )


def test_a_cut_answer_exits_4_naming_the_options(run, scripted):
    scripted.script([_cut('{"name": "Re')])
    result = run("Invent a dog", "--schema", "name, age int", "-o", "max_tokens", "5", "--no-log")
    assert result.exit_code == 4
    line = result.stderr.strip()
    assert line.startswith("Error: ") and "\n" not in line
    assert "max_tokens=5" in line and "-o max_tokens" in line and "--retry-max-tokens" in line


def test_retry_max_tokens_grows_the_limit_once(run, scripted):
    client = scripted.script([_cut('{"name": "Re'), '{"name": "Rex", "age": 3}'])
    result = run(
        "Invent a dog", "--schema", "name, age int", "-o", "max_tokens", "5", "--retry-max-tokens", "50"
    )
    assert result.exit_code == 0, result.output
    assert [o.max_output_tokens for _, o in client.requests] == [5, 50]


def test_a_retry_limit_not_above_max_tokens_is_a_usage_error_before_any_call(run, scripted):
    client = scripted.script([])
    result = run("x", "--schema", "name", "-o", "max_tokens", "100", "--retry-max-tokens", "100")
    assert result.exit_code == 2
    assert "--retry-max-tokens (100) must be larger than max_tokens (100)" in result.stderr
    assert client.requests == []


def test_stop_at_ends_the_chain_with_the_tools_result(run, scripted, tmp_path):
    import json

    from chainform.testing import tool_call

    tools = tmp_path / "db.py"
    tools.write_text(
        'def find(customer_id: int) -> dict:\n    "A row."\n    return {"id": customer_id, "name": "Ada"}\n'
    )
    client = scripted.script([tool_call("find", customer_id=1)])
    result = run(
        "Customer 1?", "--functions", str(tools), "--schema", "id int, name", "--stop-at", "find", "--json"
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["value"] == {"id": 1, "name": "Ada"} and out["ended_by"] == "find"
    assert len(client.requests) == 1


def test_stop_at_naming_a_tool_not_offered_is_a_usage_error_before_any_call(run, scripted, tmp_path):
    tools = tmp_path / "db.py"
    tools.write_text('def find(customer_id: int) -> dict:\n    "A row."\n    return {}\n')
    client = scripted.script([])
    result = run("x", "--functions", str(tools), "--stop-at", "fnd")
    assert (
        result.exit_code == 2
        and "--stop-at names 'fnd'" in result.stderr
        and "offered: find" in result.stderr
    )
    assert client.requests == []


def test_fallback_on_output_without_a_fallback_model_is_a_usage_error_before_any_call(run, scripted):
    client = scripted.script([])
    result = run("x", "--schema", "name", "--fallback-on", "output")
    assert result.exit_code == 2 and "needs a model to fall back to" in result.stderr
    assert client.requests == []


def test_hosted_tool_the_model_lacks_is_one_error_line_exit_2_before_any_call(run, scripted):
    client = scripted.script([])
    result = run("x", "--hosted", "web_search", "--no-log")
    assert result.exit_code == 2
    line = result.stderr.strip()
    assert line.startswith("Error: ") and "\n" not in line and "has no hosted web_search tool" in line
    assert client.requests == []


def test_hosted_spelling_that_is_no_tool_is_a_usage_error(run, scripted):
    scripted.script([])
    result = run("x", "--hosted", "browser")
    assert result.exit_code == 2 and "not a hosted tool" in result.stderr


def test_hosted_tool_reaches_the_call(run, scripted):
    import chainform as cf

    profile = cf.ModelProfile(name="searcher", hosted_tools=frozenset({"web_search"}))
    client = scripted.script(["Found it."], profile=profile)
    result = run("x", "--hosted", "web-search", "--no-log")
    assert result.exit_code == 0, result.output
    assert [t.kind for t in client.requests[0][1].hosted_tools] == ["web_search"]
