"""Exit codes: docs/cli.md's one table is the code's ExitCode; `map` and `eval` exit ROWS_FAILED
(9) when rows failed, with the failures by kind on stderr, unless `--allow-failures` accepts them;
a template naming a field the first row lacks is refused before any call."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import chainform as cf
from chainform.cli import cli
from chainform.cli._exit import ExitCode
from chainform.errors import ProviderError
from chainform.models import Model
from chainform.testing import ScriptedClient

ROOT = Path(__file__).resolve().parents[2]


def documented_codes() -> dict[int, str]:
    """The rows of the table under `## Exit codes` in docs/cli.md: code -> name."""
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    section = text.split("\n## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) \| ([A-Z_]+) \|", section, flags=re.MULTILINE)
    assert len(re.findall(r"^\| code \|", text, flags=re.MULTILINE)) == 1, "one exit-code table"
    return {int(code): name for code, name in rows}


def test_the_documented_table_is_the_code() -> None:
    assert documented_codes() == {code.value: code.name for code in ExitCode}


def test_every_exit_of_the_cli_names_its_code() -> None:
    """No literal status in the CLI's source: each exit goes through ExitCode, which the table lists."""
    for path in (ROOT / "src" / "chainform" / "cli").glob("*.py"):
        source = path.read_text(encoding="utf-8")
        assert not re.search(r"Exit\(\s*\d", source), path
        assert not re.search(r"sys\.exit\(\s*\d", source), path


def invoke(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def scripted_map(monkeypatch: pytest.MonkeyPatch, items: list[Any]) -> ScriptedClient:
    from chainform.cli import _map

    client = ScriptedClient(items)
    monkeypatch.setattr(_map, "map_model", lambda name, **kw: cf.AsyncModel(client, name="scripted"))
    return client


def down() -> ProviderError:
    return ProviderError("server down", status=503, provider="openai")


@pytest.fixture
def rows_file(tmp_path: Path) -> Path:
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"text": f"row {n}"}) + "\n" for n in range(4)))
    return path


def run_map(rows_file: Path, *extra: str) -> Result:
    out = rows_file.parent / "out.jsonl"
    return invoke(
        "map",
        str(rows_file),
        "--output",
        str(out),
        "-p",
        "{text}",
        "--retries",
        "0",
        "-n",
        "--concurrency",
        "1",
        *extra,
    )


def test_map_exits_rows_failed_with_the_failures_by_kind(monkeypatch, rows_file) -> None:
    scripted_map(monkeypatch, ["ok", down(), down(), "ok"])
    result = run_map(rows_file)
    assert result.exit_code == ExitCode.ROWS_FAILED == 9, result.output
    assert "2 ok, 2 failed" in result.stderr
    assert "map: 2 of 4 rows failed: provider 2 (e.g. ProviderError:" in result.stderr
    assert "--allow-failures 0" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("allowance", "code"),
    [("2", 0), ("1", 9), ("50%", 0), ("0.5", 0), ("0.25", 9), ("49%", 9)],
)
def test_allow_failures_takes_a_count_or_a_ratio(monkeypatch, rows_file, allowance: str, code: int) -> None:
    scripted_map(monkeypatch, ["ok", down(), down(), "ok"])
    result = run_map(rows_file, "--allow-failures", allowance)
    assert result.exit_code == code, result.output
    assert "map: 2 of 4 rows failed" in result.stderr  # said even when accepted


@pytest.mark.parametrize("allowance", ["-1", "1.5", "150%", "some", "nan"])
def test_a_bad_allowance_is_a_usage_error(monkeypatch, rows_file, allowance: str) -> None:
    client = scripted_map(monkeypatch, ["ok"] * 4)
    result = run_map(rows_file, "--allow-failures", allowance)
    assert result.exit_code == 2 and "--allow-failures" in result.stderr
    assert client.requests == []


def test_map_with_every_row_ok_exits_0(monkeypatch, rows_file) -> None:
    scripted_map(monkeypatch, ["ok"] * 4)
    result = run_map(rows_file)
    assert result.exit_code == 0 and "failed:" not in result.stderr


def test_a_template_field_the_first_row_lacks_is_refused_before_any_call(monkeypatch, rows_file) -> None:
    client = scripted_map(monkeypatch, ["ok"] * 4)
    result = run_map(rows_file, "-p", "Sum up {body} for {text}")
    assert result.exit_code == 2
    assert "{body}, which the first row does not have (its fields: text)" in result.stderr
    assert client.requests == [] and not (rows_file.parent / "out.jsonl").exists()


def test_a_line_of_stdin_fills_text(monkeypatch, tmp_path) -> None:
    scripted_map(monkeypatch, ["ok"] * 2)
    out = tmp_path / "out.jsonl"
    result = invoke("map", "-", "--output", str(out), "-p", "Say {text}", "-n", input="a\nb\n")
    assert result.exit_code == 0, result.output
    refused = invoke("map", "-", "--output", str(out), "-p", "Say {line}", "-n", input="a\nb\n")
    assert refused.exit_code == 2 and "{line}" in refused.stderr


SCHEMA = '{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}'


@pytest.fixture
def eval_data(tmp_path: Path) -> Path:
    path = tmp_path / "data.jsonl"
    path.write_text("".join(json.dumps({"text": f"{n}", "expected": {"n": n}}) + "\n" for n in range(3)))
    return path


def scripted_eval(monkeypatch: pytest.MonkeyPatch, items: list[Any]) -> ScriptedClient:
    import chainform.models

    client = ScriptedClient(items)
    monkeypatch.setattr(chainform.models, "get_model", lambda name, **kw: Model(client, name=name))
    return client


def run_eval(data: Path, *extra: str) -> Result:
    return invoke(
        "eval", str(data), "--schema", SCHEMA, "-p", "{text}", "-m", "scripted", "--concurrency", "1", *extra
    )


def test_eval_exits_rows_failed_when_a_chain_failed(monkeypatch, eval_data) -> None:
    refused = ProviderError("bad request", status=400, provider="openai")  # not retried
    scripted_eval(monkeypatch, ['{"n": 0}', refused, '{"n": 5}'])
    result = run_eval(eval_data, "--json")
    assert result.exit_code == 9, result.output
    assert json.loads(result.stdout)["cells"][0]["rows"] == 3  # the report is printed first
    assert "eval: 1 of 3 rows failed: provider 1" in result.stderr  # a wrong answer is no failure
    accepted = run_eval(eval_data, "--resume", "--json", "--allow-failures", "1")
    assert accepted.exit_code == 0, accepted.output


def test_eval_refuses_a_template_field_the_rows_lack(monkeypatch, eval_data) -> None:
    client = scripted_eval(monkeypatch, [])
    result = run_eval(eval_data, "-p", "{text} {expected}")  # the answer is no input field
    assert result.exit_code == 2 and "{expected}, which the first row does not have" in result.stderr
    assert client.requests == []
