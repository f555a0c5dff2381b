"""`chainform map` with issue 46's options: --stop-at (a tool's result is the row's value),
--retry-max-tokens, and a cut-off row failing with phase 'truncated'."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from map_helpers import TOOLS_PY, map_argv, read_lines

from chainform.cli import cli
from chainform.testing import tool_call
from chainform.testing.emulator import Emulator, Reply


def invoke(*args: str):
    return CliRunner().invoke(cli, ["map", *args], catch_exceptions=False)


def _rows(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps({"text": f"order {i}"}) + "\n" for i in range(1, n + 1)))
    return path


def test_stop_at_makes_the_tools_result_each_rows_value_after_one_call(tmp_path, emulator: Emulator):
    tools = tmp_path / "tools.py"
    tools.write_text(TOOLS_PY)
    emulator.default = lambda request: tool_call("lookup", order=4)
    out = tmp_path / "out.jsonl"
    own = ["--schema", "order int, total float", "--functions", str(tools), "--stop-at", "lookup"]
    argv = map_argv(_rows(tmp_path / "in.jsonl", 2), out, emulator.base_url, None, *own)
    result = invoke(*argv)
    assert result.exit_code == 0, result.output
    assert [line["value"] for line in read_lines(out)] == [{"order": 4, "total": 2.0}] * 2
    assert len(emulator.requests) == 2


def test_a_cut_row_fails_as_truncated_after_one_call(tmp_path, emulator: Emulator):
    emulator.default = lambda request: Reply(['{"order": 1, "to'], finish_reason="length")
    out = tmp_path / "out.jsonl"
    tools = tmp_path / "tools.py"
    tools.write_text(TOOLS_PY)
    argv = map_argv(
        _rows(tmp_path / "in.jsonl", 1), out, emulator.base_url, tools, "--option", "max_tokens", "8"
    )
    result = invoke(*argv)
    assert result.exit_code != 2, result.output
    (line,) = read_lines(out)
    assert line["error"]["phase"] == "truncated" and len(emulator.requests) == 1


def test_bad_stop_at_and_retry_limit_are_usage_errors_before_any_call(tmp_path, emulator: Emulator):
    tools = tmp_path / "tools.py"
    tools.write_text(TOOLS_PY)
    inp = _rows(tmp_path / "in.jsonl", 1)
    for extra in (["--stop-at", "lookups"], ["--option", "max_tokens", "50", "--retry-max-tokens", "20"]):
        result = invoke(*map_argv(inp, tmp_path / "out.jsonl", emulator.base_url, tools, *extra))
        assert result.exit_code == 2, result.output
    assert emulator.requests == []
