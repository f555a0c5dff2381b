"""Text chainform does not control (model answers, tool results, logged rows, documents, errors that
quote them) cannot drive the user's terminal: on a terminal its control characters are shown as
`\\xNN`; into a pipe or a file it is written byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import Scripted
from click.testing import CliRunner

from chainform.cli import _output, cli
from chainform.cli._group import warning_line
from chainform.store import fragment_id
from chainform.testing import tool_call

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

# Clear the screen, write the clipboard (OSC 52), go back to the line start, CSI in its 8-bit (C1) form.
HOSTILE = "a\x1b[2Jb\x1b]52;c;ZXZpbA==\x07c\rd\x9b31me\x08f\x7fg"
INERT = "a\\x1b[2Jb\\x1b]52;c;ZXZpbA==\\x07c\\x0dd\\x9b31me\\x08f\\x7fg"
RAW = ("\x1b", "\x07", "\r", "\x9b", "\x08", "\x7f")


def inert(text: str) -> bool:
    return not any(char in text for char in RAW)


@pytest.fixture
def stdout_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_output, "stdout_is_terminal", lambda: True)


@pytest.fixture
def stderr_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_output, "stderr_is_terminal", lambda: True)


def test_every_control_but_newline_and_tab_is_made_visible() -> None:
    from chainform.cli._output import visible_controls

    controls = [*range(0x20), 0x7F, *range(0x80, 0xA0)]
    for code in controls:
        shown = visible_controls(chr(code))
        assert shown == (chr(code) if code in (0x09, 0x0A) else f"\\x{code:02x}")
    text = "plain, accented é, CJK 漢字, emoji 🙂, NBSP\xa0 and a backslash \\x1b stay"
    assert visible_controls(text) == text
    assert visible_controls(HOSTILE) == INERT


@pytest.mark.parametrize("chunk_size", [1, 4])
def test_a_streamed_answer_is_inert_on_a_terminal(
    run, scripted: Scripted, stdout_terminal: None, chunk_size: int
) -> None:
    scripted.script([HOSTILE], chunk_size=chunk_size)  # each escape sequence split across chunks
    result = run("prompt", "x")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == INERT + "\n"


@pytest.mark.parametrize("args", [[], ["--no-stream"]], ids=["streamed", "no-stream"])
def test_an_answer_into_a_pipe_is_byte_exact(run, scripted: Scripted, args: list[str]) -> None:
    scripted.script([HOSTILE], chunk_size=len(HOSTILE))  # click.echo alone strips `\x1b[2J` in a pipe
    result = run("prompt", "x", *args)
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == (HOSTILE + "\n").encode()


def test_no_stream_answer_is_inert_on_a_terminal(run, scripted: Scripted, stdout_terminal: None) -> None:
    scripted.script([HOSTILE])
    assert run("prompt", "x", "--no-stream").stdout == INERT + "\n"


def test_json_answers_escape_c1_and_del_on_a_terminal_and_stay_exact_json(
    run, scripted: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    answer = json.dumps({"name": HOSTILE})
    scripted.script([answer, answer])
    piped = run("prompt", "x", "--schema", "name")
    assert json.loads(piped.stdout) == {"name": HOSTILE}
    assert "\x9b" in piped.stdout  # compact JSON as json.dumps(ensure_ascii=False) writes it
    monkeypatch.setattr(_output, "stdout_is_terminal", lambda: True)
    shown = run("prompt", "x", "--schema", "name").stdout
    assert json.loads(shown) == {"name": HOSTILE} and inert(shown)
    assert "\\u001b[2J" in shown and "\\u009b31m" in shown and "\\u007f" in shown


TOOL = "def fetch(url: str) -> str:\n    'Fetch a page.'\n    return " + repr(HOSTILE) + "\n"


def run_tool(run, scripted: Scripted):
    scripted.script([tool_call("fetch", url="http://x/\x9b2J"), "done"])
    result = run("read it", "--functions", TOOL, "--td")
    assert result.exit_code == 0, result.stderr
    return result.stderr


def test_td_tool_calls_and_results_are_inert_on_a_terminal_and_kept_in_a_pipe(
    run, scripted: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    piped = run_tool(run, scripted)  # shortened and one line, as before; its escapes as the tool wrote them
    assert "a\x1b[2Jb\x1b]52;c;ZXZpbA==" in piped and "\x9b31me" in piped
    assert "http://x/\x9b2J" in piped
    monkeypatch.setattr(_output, "stderr_is_terminal", lambda: True)
    shown = run_tool(run, scripted)
    assert inert(shown), repr(shown)
    assert "Tool call: fetch" in shown and "http://x/\\x9b2J" in shown
    assert "a\\x1b[2Jb\\x1b]52;c;ZXZpbA==\\x07c" in shown  # the result, shown


def test_the_approval_question_is_inert_on_a_terminal(run, scripted: Scripted, stderr_terminal: None) -> None:
    scripted.script([tool_call("fetch", url="\x9b1A\x9b2KRun tool safe()?"), "denied"])
    result = run("read it", "--functions", TOOL, "--ta", input="n\n")
    assert result.exit_code == 0, result.stderr
    question = result.stderr.splitlines()[0]
    assert question.startswith("Run tool fetch(") and "\\x9b1A\\x9b2K" in question and inert(result.stderr)


def logged_hostile(run, scripted: Scripted) -> None:
    scripted.script([HOSTILE])
    assert run("prompt", "x").exit_code == 0


@pytest.mark.parametrize("args", [[], ["-r"], ["--tree"]], ids=["markdown", "response", "tree"])
def test_logs_of_a_hostile_row_are_inert_on_a_terminal(
    run, scripted: Scripted, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    logged_hostile(run, scripted)
    monkeypatch.setattr(_output, "stdout_is_terminal", lambda: True)
    result = run("logs", *args)
    assert result.exit_code == 0, result.stderr
    assert inert(result.stdout), repr(result.stdout)
    assert "\\x1b[2J" in result.stdout


@pytest.mark.parametrize("args", [[], ["-r"], ["--tree"]], ids=["markdown", "response", "tree"])
def test_logs_of_a_hostile_row_into_a_pipe_keep_it(run, scripted: Scripted, args: list[str]) -> None:
    logged_hostile(run, scripted)
    stdout = run("logs", *args).stdout
    if args == ["-r"]:
        assert stdout == HOSTILE + "\n"
    else:
        assert "a\x1b[2Jb\x1b]52;c;ZXZpbA==\x07c" in stdout and "\x9b31me" in stdout


def test_logs_json_stays_escaped_json(run, scripted: Scripted, stdout_terminal: None) -> None:
    logged_hostile(run, scripted)
    stdout = run("logs", "--json").stdout
    assert inert(stdout) and json.loads(stdout)[0]["text"] == HOSTILE


def test_a_fragment_is_shown_inert_on_a_terminal_and_exact_in_a_pipe(
    run, scripted: Scripted, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = tmp_path / "doc.txt"
    document.write_text(HOSTILE, newline="")
    scripted.script(["ok"])
    assert run("Summarize", "-f", str(document)).exit_code == 0
    key = fragment_id(HOSTILE)[:8]
    assert run("fragments", "show", key).stdout_bytes == (HOSTILE + "\n").encode()
    monkeypatch.setattr(_output, "stdout_is_terminal", lambda: True)
    assert run("fragments", "show", key).stdout == INERT + "\n"


def test_an_error_line_that_quotes_the_model_is_inert_on_a_terminal(
    run, scripted: Scripted, stderr_terminal: None
) -> None:
    scripted.script([RuntimeError(f"upstream said {HOSTILE}")])
    result = run("prompt", "x")
    assert result.exit_code != 0
    assert result.stderr.startswith("Error:") and "\\x1b[2J" in result.stderr and inert(result.stderr)


def test_a_warning_is_inert_on_a_terminal(stderr_terminal: None) -> None:
    line = warning_line(UserWarning(f"the page said {HOSTILE}"), UserWarning, "x.py", 1)
    assert line == f"Warning: the page said {INERT}\n"


def test_chat_answers_and_failed_turns_are_inert_on_a_terminal(
    run, scripted: Scripted, stdout_terminal: None, stderr_terminal: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chainform.cli import _chat
    from chainform.errors import ProviderError

    monkeypatch.setattr(_chat, "_stdin_is_terminal", lambda: True)
    scripted.script([HOSTILE, ProviderError(f"the proxy said {HOSTILE}", status=400)])
    result = run("chat", input="hi\nagain\n")
    assert result.exit_code == 0, result.output
    assert INERT in result.stdout and inert(result.stdout)
    assert "Error:" in result.stderr and "\\x1b[2J" in result.stderr and inert(result.stderr)


def row_failures(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    import chainform as cf
    from chainform.cli import _map
    from chainform.errors import ProviderError
    from chainform.testing import ScriptedClient

    client = ScriptedClient(["ok", ProviderError(f"bad row: {HOSTILE}", status=400, provider="openai")])
    monkeypatch.setattr(_map, "map_model", lambda name, **kw: cf.AsyncModel(client, name="scripted"))
    rows = tmp_path / "in.jsonl"
    rows.write_text('{"text": "a"}\n{"text": "b"}\n')
    out = tmp_path / "out.jsonl"
    out.unlink(missing_ok=True)
    args = ["map", str(rows), "--output", str(out), "-p", "{text}", "--transport-retries", "0", "-n"]
    result = CliRunner().invoke(cli, [*args, "--concurrency", "1"], catch_exceptions=False)
    assert result.exit_code == 9, result.output
    return result.stderr


def test_map_failure_lines_quote_the_error_inert_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    piped = row_failures(monkeypatch, tmp_path)
    assert "map: 1 of 2 rows failed" in piped and "bad row: a\x1b[2Jb" in piped
    monkeypatch.setattr(_output, "stderr_is_terminal", lambda: True)
    shown = row_failures(monkeypatch, tmp_path)
    assert "bad row: a\\x1b[2Jb" in shown and "\x1b[2J" not in shown and "\x9b" not in shown


def test_the_eval_table_shows_wrong_answers_and_errors_inert_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import chainform.models
    from chainform.errors import ProviderError
    from chainform.models import Model
    from chainform.testing import ScriptedClient

    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"text": f"{n}", "expected": {"s": "x"}}) + "\n" for n in range(2)))
    schema = '{"type":"object","properties":{"s":{"type":"string"}},"required":["s"]}'

    def table() -> str:
        refused = ProviderError(f"refused: {HOSTILE}", status=400, provider="openai")
        client = ScriptedClient([json.dumps({"s": HOSTILE}), refused])
        monkeypatch.setattr(chainform.models, "get_model", lambda name, **kw: Model(client, name=name))
        args = ["eval", str(data), "--schema", schema, "-p", "{text}", "-m", "scripted", "--concurrency", "1"]
        result = CliRunner().invoke(cli, [*args, "--allow-failures", "1"], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.stdout

    piped = table()
    assert "\x9b31m" in piped and "refused: a\x1b[2Jb" in piped  # the table as the data and model wrote it
    monkeypatch.setattr(_output, "stdout_is_terminal", lambda: True)
    shown = table()
    assert "\\x9b31m" in shown and "refused: a\\x1b[2Jb" in shown and inert(shown), repr(shown)


def test_a_chain_waiting_for_approval_names_the_model_s_call_ids_inert_on_a_terminal(
    run, scripted: Scripted, stdout_terminal: None, stderr_terminal: None
) -> None:
    from chainform.types import FunctionCallContent

    call_id = "call\x9b2J\x1b]0;approved\x07"
    scripted.script([FunctionCallContent(call_id, "fetch", {"url": "x"}, '{"url": "x"}')])
    result = run("read it", "--functions", TOOL, "--approve-later", "fetch")
    assert result.exit_code == 8, result.output
    assert [p["id"] for p in json.loads(result.stdout)] == [call_id] and inert(result.stdout)
    assert "waits for approval of: call\\x9b2J\\x1b]0;approved\\x07" in result.stderr and inert(result.stderr)
    listed = run("logs", "--unfinished").stdout
    assert "fetch (call\\x9b2J" in listed and inert(listed)
