"""`chainform eval` on the provider emulator: the table, --json, bad input as one `Error:` line and
exit 2 before any call, `eval show` and `eval compare`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from eval_helpers import PROMPT, SCHEMA, expected, rows, sloppy

from chainform.cli import cli
from chainform.testing.emulator import Emulator, RecordedRequest

MODEL = "openai/gpt-4.1-mini"


def user_text(request: RecordedRequest) -> str:
    for message in request.json.get("messages", []):
        if message.get("role") == "user":
            content = message.get("content")
            return "".join(p.get("text", "") for p in content) if isinstance(content, list) else str(content)
    return ""


def answer(wrong: bool):
    def reply(request: RecordedRequest) -> str:
        n = int(re.search(r"invoice (\d+)", user_text(request)).group(1))
        got = sloppy(n) if wrong else expected(n)
        return got if isinstance(got, str) else json.dumps(got)

    return reply


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "invoices.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows()))
    return path


@pytest.fixture
def schema_file(tmp_path: Path) -> Path:
    path = tmp_path / "invoice.schema.json"
    path.write_text(json.dumps(SCHEMA))
    return path


def invoke(*args: str):
    return CliRunner().invoke(cli, ["eval", *args], catch_exceptions=False)


def eval_argv(data: Path, schema: Path, emulator: Emulator, *extra: str) -> list[str]:
    return [
        str(data),
        "--schema",
        str(schema),
        "-p",
        PROMPT,
        "-m",
        MODEL,
        "--base-url",
        emulator.base_url + "/v1",
        "--key",
        "sk-test",
        *extra,
    ]


def test_json_report_show_and_compare(data, schema_file, emulator: Emulator):
    emulator.default = answer(wrong=True)
    first = invoke(
        *eval_argv(data, schema_file, emulator, "--tolerance", "total=0.01", "--json", "--strategy", "native")
    )
    assert first.exit_code == 6, first.output  # row 4 never validated: a failed row
    report = json.loads(first.stdout)
    cell = report["cells"][0]
    assert (cell["rows"], cell["rows_right"], cell["valid_rate"]) == (6, 2, 5 / 6)
    assert cell["fields"]["date"]["right"] == 5 and cell["strategy_ran"] == ["native"]
    assert cell["errors"] == {"output": 1}
    assert float(cell["cost_per_correct_row"]) == pytest.approx(float(cell["cost"]) / 2)
    emulator.default = answer(wrong=False)
    second = invoke(
        *eval_argv(data, schema_file, emulator, "--tolerance", "total=0.01", "--json", "--strategy", "native")
    )
    assert second.exit_code == 0, second.output
    b = json.loads(second.stdout)["eval_id"]
    a = report["eval_id"]

    shown = invoke("show", a[:10])
    assert shown.exit_code == 0 and "rows right" in shown.stdout and "2/6" in shown.stdout
    assert "items[].qty" in shown.stdout and "P1.00 R0.75" in shown.stdout

    compared = invoke("compare", a, b, "--json")
    result = json.loads(compared.stdout)
    assert (result["a_right"], result["b_right"], result["only_a"], result["only_b"]) == (2, 6, 0, 4)
    assert result["difference"] == pytest.approx(4 / 6)
    assert result["p_value"] == 2 * 0.5**4  # McNemar exact: 4 discordant rows, all one way
    back = invoke("compare", b, a)
    assert "worse: total 100.0% -> 66.7%" in back.stdout and "worse rows: 2, 3, 4, 5" in back.stdout


@pytest.mark.parametrize(
    ("rows_text", "extra", "message"),
    [
        (
            '{"text": "invoice 0"}\n',
            (),
            "Error: row 0 has no expected answer (no 'expected' field; --expected names it)",
        ),
        (
            json.dumps({"text": "invoice 0", "expected": {**expected(0), "currency": "GBP"}}) + "\n",
            (),
            "Error: row 0: the expected answer does not match the schema: $.currency: 'GBP' is not one of ['EUR', 'USD']",
        ),
        (
            json.dumps({"text": "invoice 0", "expected": expected(0)}) + "\n",
            ("--tolerance", "totl=0.1"),
            "Error: --tolerance names 'totl', which is no field of the schema",
        ),
        (
            json.dumps({"text": "invoice 0", "answer": expected(0)}) + "\n",
            ("--expected", "solution"),
            "Error: row 0 has no expected answer (no 'solution' field",
        ),
    ],
)
def test_bad_input_is_one_error_line_and_exit_2_before_any_call(
    tmp_path, schema_file, emulator: Emulator, rows_text, extra, message
):
    path = tmp_path / "bad.jsonl"
    path.write_text(rows_text)
    result = invoke(*eval_argv(path, schema_file, emulator, *extra))
    assert result.exit_code == 2
    assert result.stderr.startswith(message) and len(result.stderr.strip().splitlines()) == 1
    assert emulator.requests == []


def test_an_unknown_eval_id_and_an_ambiguous_cell(data, schema_file, emulator: Emulator):
    missing = invoke("show", "nope")
    assert missing.exit_code == 2 and missing.stderr.strip() == "Error: no kept eval 'nope'"
    emulator.default = answer(wrong=False)
    two = invoke(
        *eval_argv(data, schema_file, emulator, "--strategy", "native", "--strategy", "prompted", "--json")
    )
    eval_id = json.loads(two.stdout)["eval_id"]
    ambiguous = invoke("compare", eval_id, eval_id + "#2")
    assert ambiguous.exit_code == 2 and "has 2 cells; name one" in ambiguous.stderr
    same = invoke("compare", eval_id + "#1", eval_id + "#2")
    assert same.exit_code == 0 and "+0.0% of rows right" in same.stdout


def test_csv_rows_hold_their_expected_answer_as_json_text(tmp_path, schema_file, emulator: Emulator):
    import csv

    path = tmp_path / "invoices.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "expected"])
        for row in rows()[:3]:
            writer.writerow([row["text"], json.dumps(row["expected"])])
    emulator.default = answer(wrong=True)
    result = invoke(*eval_argv(path, schema_file, emulator, "--json", "--tolerance", "total=0.01"))
    assert result.exit_code == 0, result.output
    cell = json.loads(result.stdout)["cells"][0]
    assert (cell["rows"], cell["rows_right"]) == (3, 2)  # rows 0 and 1 right, row 2's total 5% off
