"""Red-team CLI cases: each bad input or hostile reply is one line, its documented exit code, and
nothing already logged is lost."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import Scripted
from click.testing import CliRunner

import chainform as cf
from chainform.cli import cli
from chainform.store import Store

DEEP = "[" * 1000 + "]" * 1000


def one_line(result, code: int) -> str:
    """The one error line (usage errors also show click's usage hint above it)."""
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and "Traceback" not in result.stderr, result.stderr
    if code != 2:
        assert result.stderr.count("\n") == 1, result.stderr
    return errors[0]


def logged(home: Path) -> list:
    if not (home / "logs.db").exists():
        return []
    with Store(home / "logs.db") as store:
        return store.recent(n=None)


def test_deeply_nested_replies_end_in_exit_4_with_every_call_logged(run, scripted: Scripted, home) -> None:
    scripted.script([DEEP, DEEP, DEEP])
    line = one_line(run("x", "--schema", "name"), 4)
    assert "nested more than" in line or "validat" in line
    assert len(logged(home)) == 3


@pytest.mark.parametrize("schema", [None, "name"])
def test_lone_surrogate_answer_is_printed_escaped_and_logged(run, scripted: Scripted, home, schema) -> None:
    reply = json.dumps({"name": "a\ud800b"}) if schema else "a\ud800b"
    scripted.script([reply])
    result = run("prompt", "x", *(["--schema", schema] if schema else []))
    assert result.exit_code == 0, result.stderr
    assert "a\\ud800b" in result.stdout
    (row,) = logged(home)
    assert "\\ud800" in row.text
    if schema:
        assert row.parsed == {"name": "a\ud800b"}  # the JSON column is exact


def test_empty_schema_is_a_usage_error(run, scripted: Scripted) -> None:
    scripted.script(["ok"])
    assert "schema is empty" in one_line(run("x", "--schema", ""), 2)
    assert scripted.client.requests == []


@pytest.mark.parametrize(
    "args",
    [["caf\udce9?"], ["x", "-s", "sys\udcff"], ["x", "--schema", "name\udcff"]],
    ids=["prompt", "system", "schema"],
)
def test_invalid_utf8_arguments_are_usage_errors(run, scripted: Scripted, home, args) -> None:
    scripted.script(["ok"])
    assert "not valid UTF-8" in one_line(run(*args), 2)
    assert scripted.client.requests == [] and logged(home) == []


def test_invalid_utf8_on_stdin_is_a_usage_error(scripted: Scripted, home) -> None:
    scripted.script(["ok"])
    result = CliRunner().invoke(cli, ["prompt", "question"], input=b"caf\xe9 \xff\n")
    assert "stdin is not valid UTF-8" in one_line(result, 2)
    assert scripted.client.requests == [] and logged(home) == []


def test_unknown_default_model_is_refused(run) -> None:
    line = one_line(run("models", "default", "gpt-4.1-mnii"), 3)
    assert "gpt-4.1-mnii" in line and "gpt-4.1-mini" in line  # the close match is suggested
    assert run("models", "default").stdout.strip() == "local"


def test_functions_calling_exit_is_a_usage_error(run, scripted: Scripted) -> None:
    scripted.script(["ok"])
    assert "SystemExit" in one_line(run("x", "--functions", "raise SystemExit(0)"), 2)


def test_functions_file_that_is_not_utf8_is_named(run, scripted: Scripted, tmp_path: Path) -> None:
    scripted.script(["ok"])
    path = tmp_path / "tools.py"
    path.write_bytes(b"def f():\n    return '\xff'\n")
    line = one_line(run("x", "--functions", str(path)), 2)
    assert "tools.py" in line and "not UTF-8" in line


@pytest.mark.parametrize("damage", ["garbage", "directory"])
def test_unusable_log_is_found_before_the_model_is_called(run, scripted: Scripted, home, damage) -> None:
    scripted.script(["ok", "ok"])
    home.mkdir(parents=True, exist_ok=True)
    db = home / "logs.db"
    if damage == "garbage":
        db.write_bytes(b"this is not a database" * 100)
    else:
        db.mkdir()
    line = one_line(run("prompt", "x"), 2)
    assert str(db) in line and "--no-log" in line and "move" in line and "-wal and -shm" in line
    assert scripted.client.requests == []
    result = run("x", "--no-log")  # the way on that the message names
    assert result.exit_code == 0 and result.stdout.strip() == "ok"


@pytest.mark.parametrize("pair", [("max_tokens", "Infinity"), ("temperature", "NaN"), ("top_p", "-Infinity")])
def test_non_finite_numeric_options_are_usage_errors(run, scripted: Scripted, pair) -> None:
    scripted.script(["ok"])
    assert pair[0] in one_line(run("x", "-o", *pair), 2)
    assert scripted.client.requests == []


def test_interrupted_stream_keeps_its_partial_text_in_the_log(run, scripted: Scripted, home) -> None:
    arrived = cf.ChatResponse([cf.Message.assistant("half an answ")])
    scripted.script([cf.StreamInterruptedError("stream broke", partial_response=arrived)])
    one_line(run("prompt", "x"), 3)
    (row,) = logged(home)
    assert row.text == "half an answ" and "stream broke" in row.error


def _deep_schema(levels: int) -> str:
    return '{"type": "array", "items": ' * levels + '{"type": "string"}' + "}" * levels


@pytest.mark.parametrize("levels", [10_000, 500])
@pytest.mark.parametrize("where", ["inline", "file"])
def test_a_schema_nested_too_deep_is_a_usage_error_and_nothing_is_sent(
    run, scripted: Scripted, home, tmp_path: Path, where: str, levels: int
) -> None:
    scripted.script(["ok"])
    text = _deep_schema(levels)
    if where == "file":
        path = tmp_path / "deep.json"
        path.write_text(text)
        text = str(path)
    line = one_line(run("x", "--schema", text), 2)
    assert "nested more than 100 levels deep" in line and "Recursion" not in line
    assert scripted.client.requests == [] and logged(home) == []
    line = one_line(run("schemas", "show", "--dialect", "gemini", text), 2)
    assert "nested more than 100 levels deep" in line


@pytest.mark.parametrize("argv", [["prompt", "x"], ["logs"], ["logs", "status"], ["keys", "list"]])
def test_home_that_is_a_file_is_one_usage_line(run, scripted: Scripted, tmp_path, monkeypatch, argv) -> None:
    blocker = tmp_path / "home-file"
    blocker.write_text("")
    monkeypatch.setenv("CHAINFORM_HOME", str(blocker))
    scripted.script(["ok"])
    line = one_line(run(*argv), 2)
    assert "CHAINFORM_HOME" in line and "it is a file" in line and "Errno" not in line
    assert scripted.client.requests == []


def test_damaged_log_is_one_line_with_the_way_on_and_backup_keeps_it(
    run, scripted: Scripted, damaged_log
) -> None:
    scripted.script(["ok"])
    line = one_line(run("prompt", "x"), 2)
    assert "is damaged" in line and "logs backup" in line and "--no-log" in line
    assert scripted.client.requests == []  # found before the model is called
    assert "is damaged" in one_line(run("logs"), 2)
    assert "is damaged" in one_line(run("logs", "--json", "-n", "0"), 2)
    kept = damaged_log.parent / "kept.db"
    result = run("logs", "backup", str(kept))
    assert result.exit_code == 0 and kept.exists()
    damaged_log.rename(damaged_log.with_name("logs.db.bad"))  # the way on: a fresh log
    assert run("prompt", "x").exit_code == 0 and len(logged(damaged_log.parent)) == 1


@pytest.mark.parametrize(
    ("pair", "why"),
    [
        (("", "1"), "not an option name"),
        (("a b", "1"), "not an option name"),
        (("stop", "{}"), "stop must be a string or a list of strings"),
        (("stop", "[1]"), "stop must be a string or a list of strings"),
        (("max_tokens", "-5"), "max_tokens must be at least 1"),
        (("max_tokens", "0"), "max_tokens must be at least 1"),
        (("top_k", "2.5"), "top_k must be an integer"),
        (("top_p", "1.5"), "top_p must be between 0 and 1"),
        (("temperature", "-0.1"), "temperature must be at least 0"),
        (("seed", "true"), "seed must be an integer"),
        (("allow_multiple_tool_calls", "1"), "must be true or false"),
        (("tools", "[]"), "set by chainform itself"),
        (("response_format", "{}"), "set by chainform itself"),
    ],
)
def test_option_names_and_values_are_checked_before_the_call(run, scripted: Scripted, pair, why) -> None:
    scripted.script(["ok"])
    assert why in one_line(run("x", "-o", *pair), 2)
    assert scripted.client.requests == []


def test_checked_options_still_reach_the_model_converted(run, scripted: Scripted) -> None:
    scripted.script(["ok"])
    argv = ["-o", "max_tokens", "5.0", "-o", "stop", '["a", "b"]', "-o", "top_p", "1", "-o", "x-extra", "{}"]
    assert run("x", *argv).exit_code == 0
    options = scripted.client.requests[0][1]
    assert (options.max_output_tokens, options.stop_sequences, options.top_p) == (5, ["a", "b"], 1.0)
    assert options.additional_properties == {"x-extra": {}}  # provider extras pass as given


@pytest.mark.parametrize(
    ("argv", "stdin"), [(["   "], None), (["\t\n"], None), ([], " \n\n "), (["  "], "\n")]
)
def test_a_whitespace_only_prompt_is_not_sent(run, scripted: Scripted, argv, stdin) -> None:
    scripted.script(["ok"])
    assert "the prompt is empty" in one_line(run(*argv, input=stdin), 2)
    assert scripted.client.requests == []


@pytest.mark.parametrize(
    "argv", [["x", "-m", ""], ["x", "-m", "  "], ["map", "-", "-o", "out.jsonl", "-m", ""]]
)
def test_an_empty_model_name_is_not_the_default_model(run, scripted: Scripted, tmp_path, argv) -> None:
    scripted.script(["ok"])
    argv = [str(tmp_path / a) if a.endswith(".jsonl") else a for a in argv]
    assert "the model name is empty" in one_line(run(*argv, input="q\n"), 2)
    assert scripted.asked == []


def test_a_huge_logs_count_is_a_usage_error_not_an_overflow(run) -> None:
    line = one_line(run("logs", "-n", "99999999999999999999"), 2)
    assert "OverflowError" not in line and "99999999999999999999" in line
    assert run("logs", "-n", str(2**63 - 1)).exit_code == 0


def test_keys_set_reads_a_piped_key_and_stdin_at_its_end_is_one_line(run, home) -> None:
    result = run("keys", "set", "openai", input="")
    line = one_line(result, 2)
    assert "no key given" in line and "Aborted" not in result.output
    assert "GetPassWarning" not in result.stderr
    assert run("keys", "set", "openai", input="sk-piped-123\n").exit_code == 0
    from chainform.keys import get_key

    assert get_key("openai") == "sk-piped-123"


@pytest.mark.parametrize("status", [0, 3])
def test_functions_file_calling_os_exit_while_loading_is_reported(
    run, scripted: Scripted, tmp_path, status
) -> None:
    scripted.script(["ok"])
    path = tmp_path / "tools.py"
    path.write_text(f"import os\n\ndef f(x: int) -> int:\n    return x\n\nos._exit({status})\n")
    line = one_line(run("x", "--functions", str(path)), 2)
    assert f"os._exit({status})" in line
    assert scripted.client.requests == []


def test_functions_tool_calling_os_exit_is_a_tool_error_the_model_reads(
    run, scripted: Scripted, tmp_path
) -> None:
    from chainform.testing import tool_call

    path = tmp_path / "tools.py"
    path.write_text('import os\n\ndef quit_now() -> str:\n    "Ends everything."\n    os._exit(0)\n')
    scripted.script([tool_call("quit_now"), "the tool failed, as expected"])
    result = run("x", "--functions", str(path))
    assert result.exit_code == 0 and "the tool failed, as expected" in result.stdout
    (messages, _) = scripted.client.requests[1]
    results = [c for m in messages for c in m.contents if isinstance(c, cf.FunctionResultContent)]
    assert "os._exit(0)" in (results[-1].error or "")


# issue 38: hostile attachments, each one `Error:` line, exit 2, nothing sent or logged
HOSTILE_ATTACHMENTS = [
    (["-a", "http://a:1:2/x.png"], "malformed URL"),
    (["-a", "http://[::1]x/y.png"], "malformed URL"),
    (["-a", "http://xn--/a.png"], "malformed URL"),
    (["-a", "http://[::1]:99999/x"], "malformed URL"),
    (["-a", "https://user:cli-pass-61c2@127.0.0.1:1/x.png"], "private, loopback"),
    (["--at", "/dev/zero", "image/png"], "not a regular file"),
    (["-a", "/dev/zero"], "not a regular file"),
    (["-a", "PDF", "--max-pages", "0"], "--max-pages"),
    (["-a", "PDF", "--ocr-timeout", "nan"], "--ocr-timeout"),
    (["-a", "PDF", "--ocr-timeout", "inf"], "--ocr-timeout"),
]


@pytest.mark.parametrize(("args", "message"), HOSTILE_ATTACHMENTS)
def test_hostile_attachments_are_one_error_line_and_exit_2(
    run, scripted: Scripted, home, tmp_path: Path, args: list[str], message: str
) -> None:
    client = scripted.script(["never sent"])
    pdf = tmp_path / "doc.pdf"
    pdf.write_bytes(b"%PDF-1.4\n")
    result = run("Read", *[str(pdf) if a == "PDF" else a for a in args])
    line = one_line(result, 2)
    assert message in result.stderr, line
    assert "cli-pass-61c2" not in result.stderr and not client.requests and logged(home) == []


CLOSED = ["--base-url", "http://127.0.0.1:9/v1", "--key", "sk-test"]  # nothing listens there


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (
            ["x", "-m", "openai/gpt-4.1-mini", *CLOSED, "--fallback", "openai/gpt-4.1-mini"],
            "the model itself",
        ),
        (["x", "-m", "openai/gpt-4.1-mini", *CLOSED, "--fallback", "4.1-mini"], "the model itself"),
        (
            [
                "x",
                "-m",
                "openai/gpt-4.1-mini",
                *CLOSED,
                "--fallback",
                "openai/gpt-4o",
                "--fallback",
                "openai/gpt-4o",
            ],
            "again",
        ),
        (["x", "-m", "local", "--fallback", "smollm2"], "fallback 'smollm2'"),
        (["x", "-m", "openai/gpt-4.1-mini", *CLOSED, "--fallback", ""], "fallback model name is empty"),
        (["x", "-m", "openai/gpt-4.1-mini", *CLOSED, "--fallback", " "], "fallback model name is empty"),
        (["x", "-m", "local", "--profile", "vllm"], "take no key, base_url, timeout or profile"),
        (["x", "-m", "anthropic/claude-haiku-4-5", "--key", "k", "--profile", "vllm"], "profile"),
        (
            ["x", "-m", "openai/gpt-4.1-mini", "--base-url", "http://u:p@127.0.0.1:9/v1", "--key", "k"],
            "not both",
        ),
        (
            ["x", "-m", "openai/gpt-4.1-mini", *CLOSED, "-o", "seed", "1e100"],
            "seed must be an integer between",
        ),
        (
            ["x", "-m", "openai/gpt-4.1-mini", *CLOSED, "-o", "max_tokens", "99999999999999999999999"],
            "max_tokens",
        ),
        (["x", "-m", "openai/gpt-4.1-mini", *CLOSED, "--price", "1e309/1"], "input price"),
        (["x", "-m", "openai/gpt-4.1-mini", *CLOSED, "--price", "1e999999999/1"], "input price"),
        (["x", "-m", "openai/gpt-4.1-mini", *CLOSED, "--price", "1_000/1"], "input price"),
        (["x", "-m", "openai/gpt-4.1-mini", *CLOSED, "--max-cost", "1e-200000"], "--max-cost"),
        (["x", "-m", "openai/gpt-4.1-mini", *CLOSED, "--max-cost", "-0"], "--max-cost"),
        (
            ["map", "IN", "-o", "OUT", "-p", "{text}", "-m", "local", "--fallback", "smollm2"],
            "fallback 'smollm2'",
        ),
        (["map", "IN", "-o", "OUT", "-p", "{text}", "-m", "local", "--profile", "vllm"], "profile"),
        (
            [
                "map",
                "IN",
                "-o",
                "OUT",
                "-p",
                "{text}",
                "-m",
                "openai/gpt-4.1-mini",
                *CLOSED,
                "--fallback",
                "",
            ],
            "empty",
        ),
    ],
)
def test_hostile_model_and_number_arguments_are_one_usage_line_before_any_call(
    tmp_path: Path, argv: list[str], says: str
) -> None:
    (tmp_path / "in.jsonl").write_text('{"text": "a"}\n')
    argv = [{"IN": str(tmp_path / "in.jsonl"), "OUT": str(tmp_path / "out.jsonl")}.get(a, a) for a in argv]
    result = CliRunner().invoke(cli, argv)
    line = one_line(result, 2)
    assert says in line and len(line) < 300, line
    assert not (tmp_path / "out.jsonl").exists()
