"""`chainform map`: JSONL/CSV/stdin in, one line per row out, --resume exactly once (also after kill -9)."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from click.testing import CliRunner
from map_helpers import (
    TOOLS_PY,
    answer_text,
    answer_with_tool,
    assert_exactly_once,
    map_argv,
    order_number,
    read_lines,
    start_cli,
    write_orders,
)

from chainform.cli import cli
from chainform.testing.emulator import Emulator, Fault


@pytest.fixture
def tools_file(tmp_path: Path) -> Path:
    path = tmp_path / "tools.py"
    path.write_text(TOOLS_PY)
    return path


def invoke(*args: str, input: str | None = None):
    return CliRunner().invoke(cli, ["map", *args], input=input, catch_exceptions=False)


def test_jsonl_rows_with_schema_and_tool(tmp_path, tools_file, emulator: Emulator):
    inp = write_orders(tmp_path / "in.jsonl", 30)
    out = tmp_path / "out.jsonl"
    emulator.default = answer_with_tool
    result = invoke(*map_argv(inp, out, emulator.base_url, tools_file, "--concurrency", "4"))
    assert result.exit_code == 0, result.output
    lines = read_lines(out)
    assert_exactly_once(lines, 30)
    assert lines[0]["text"].startswith("order ") and lines[0]["_map"]["tokens"] > 0
    assert "map: 30 rows" in result.stderr and "30 ok, 0 failed" in result.stderr


def test_csv_and_stdin_inputs(tmp_path, emulator: Emulator):
    csv_in = tmp_path / "in.csv"
    csv_in.write_text("name,text\na,order 1\nb,order 2\n")
    emulator.default = answer_text
    out = tmp_path / "csv.jsonl"
    result = invoke(*map_argv(csv_in, out, emulator.base_url, None, "--id-field", "name"))
    assert result.exit_code == 0, result.output
    lines = sorted(read_lines(out), key=lambda line: line["name"])
    assert [(x["name"], x["value"], x["_map"]["key"]) for x in lines] == [
        ("a", "done 1", "a"),
        ("b", "done 2", "b"),
    ]
    out2 = tmp_path / "stdin.jsonl"
    argv = ["-", "-o", str(out2), "-m", "openai/x", "--base-url", emulator.base_url + "/v1", "--key", "k"]
    result = invoke(*argv, input="order 5\n\norder 6\n")
    assert result.exit_code == 0, result.output
    assert sorted(x["value"] for x in read_lines(out2)) == ["done 5", "done 6"]


def test_refuses_to_overwrite_and_resume_cuts_a_torn_line(tmp_path, tools_file, emulator: Emulator):
    inp = write_orders(tmp_path / "in.jsonl", 20)
    out = tmp_path / "out.jsonl"
    emulator.default = answer_with_tool
    assert invoke(*map_argv(inp, out, emulator.base_url, tools_file)).exit_code == 0
    again = invoke(*map_argv(inp, out, emulator.base_url, tools_file))
    assert again.exit_code != 0 and "--resume" in again.stderr
    kept = out.read_text().splitlines(True)[:8]
    out.write_text("".join(kept) + kept[8 - 1][:25])  # 8 rows done, a 9th torn mid-write
    before = len(emulator.requests)
    resumed = invoke(*map_argv(inp, out, emulator.base_url, tools_file, "--resume"))
    assert resumed.exit_code == 0, resumed.output
    # the 12 rows missing from OUT had finished chains in the log: replayed from it, nothing sent
    assert len(emulator.requests) == before
    assert "8 already done" in resumed.stderr
    assert_exactly_once(read_lines(out), 20)


def failing(*broken: int):
    """Rows whose order number is in `broken` get HTTP 500 on every call; the others an answer."""

    def answer(request):
        return Fault(500, message="down") if order_number(request) in broken else answer_with_tool(request)

    return answer


def test_resume_retries_error_rows_and_keep_errors_does_not(tmp_path, tools_file, emulator: Emulator):
    inp = write_orders(tmp_path / "in.jsonl", 20)
    out = tmp_path / "out.jsonl"
    emulator.default = failing(3, 11, 17)
    first = invoke(*map_argv(inp, out, emulator.base_url, tools_file, "--transport-retries", "0"))
    assert first.exit_code == 9, first.output  # rows failed (ROWS_FAILED)
    assert "17 ok, 3 failed" in first.stderr
    errors = {line["_map"]["key"] for line in read_lines(out) if "error" in line}
    assert errors == {"3", "11", "17"}

    emulator.default = failing(11)  # 3 and 17 would now succeed: --keep-errors must not ask
    before = len(emulator.requests)
    kept = invoke(*map_argv(inp, out, emulator.base_url, tools_file, "--resume", "--keep-errors"))
    assert kept.exit_code == 0, kept.output
    assert len(emulator.requests) == before and "20 already done" in kept.stderr
    assert {line["_map"]["key"] for line in read_lines(out) if "error" in line} == errors

    retried = invoke(
        *map_argv(inp, out, emulator.base_url, tools_file, "--resume", "--transport-retries", "0")
    )
    assert retried.exit_code == 9, retried.output  # row 11 failed again
    assert "17 already done, 3 earlier errors retried" in retried.stderr
    assert len(emulator.requests) - before == 2 + 1 + 2  # rows 3 and 17: 2 calls each; 11 fails at once
    lines = read_lines(out)
    assert sorted((line["_map"]["key"] for line in lines), key=int) == [str(n) for n in range(20)]
    assert [line["_map"]["key"] for line in lines if "error" in line] == ["11"]
    assert all(
        line["value"] == {"id": line["id"], "total": line["id"] / 2} for line in lines if "value" in line
    )

    emulator.default = answer_with_tool
    final = invoke(*map_argv(inp, out, emulator.base_url, tools_file, "--resume"))
    assert final.exit_code == 0 and "1 earlier errors retried" in final.stderr
    assert_exactly_once(read_lines(out), 20)  # the error line replaced by its success


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT])
def test_killed_mid_run_then_resume_yields_each_row_exactly_once(
    tmp_path, tools_file, emulator, held_rows, stop
):
    count = 150
    inp = write_orders(tmp_path / "in.jsonl", count)
    out = tmp_path / "out.jsonl"
    # Rows from 40 on wait at the emulator until the CLI has ended: the signal lands mid-run with
    # the CLI stuck (its 8 requests in flight held), however slow the machine is.
    gate = held_rows(failing(*range(3, count, 10)), order_number, 40)
    emulator.default, emulator.record = gate, False
    argv = map_argv(inp, out, emulator.base_url, tools_file, "--concurrency", "8", "--transport-retries", "0")
    proc = start_cli(argv)
    gate.wait(proc, 8, lambda: out.exists() and out.read_text().count("\n") >= 20)
    proc.send_signal(stop)
    _, err = proc.communicate(timeout=60)
    gate.release()
    if stop == signal.SIGINT:
        assert proc.returncode == 130 and "--resume" in err
    partial = out.read_bytes()
    assert 20 <= partial.count(b"\n") < count
    assert b'"error"' in partial  # some rows ended in an error before the kill
    emulator.default = answer_with_tool  # the provider is back: the resume finishes the job
    resumed = start_cli([*argv, "--resume"])
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert "earlier errors retried" in err
    assert_exactly_once(read_lines(out), count)


def test_a_lone_surrogate_in_model_text_is_committed_as_a_json_escape(tmp_path):
    from chainform._map._jsonl import JsonlSink

    sink = JsonlSink(tmp_path / "out.jsonl")
    sink.prepare(resume=False)
    sink.commit({"text": "order 1", "value": "broken \ud800 text", "_map": {"key": "0"}})
    sink.commit({"text": "ordre é", "value": {"id": 2}, "_map": {"key": "1"}})
    sink.close()
    raw = (tmp_path / "out.jsonl").read_bytes()
    assert b"\\ud800" in raw
    assert [line["value"] for line in read_lines(tmp_path / "out.jsonl")] == ["broken \ud800 text", {"id": 2}]
