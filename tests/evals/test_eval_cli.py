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
    assert first.exit_code == 9, first.output  # row 4 never validated: a failed row
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
    assert (
        f"A: {b} ({MODEL} / native): 6/6" in back.stdout and f"B: {a} ({MODEL} / native): 2/6" in back.stdout
    )
    forward = invoke("compare", a, b)
    assert "better: total 66.7% -> 100.0%" in forward.stdout and "better rows: 2, 3, 4, 5" in forward.stdout


def test_compare_refuses_evals_of_other_expected_answers_unless_forced(tmp_path, schema_file, emulator):
    emulator.default = answer(wrong=False)
    ids = []
    for total in (100.0, 99.0):
        path = tmp_path / f"d{total}.jsonl"
        data = rows()
        data[0]["expected"]["total"] = total
        path.write_text("".join(json.dumps(row) + "\n" for row in data))
        result = invoke(*eval_argv(path, schema_file, emulator, "--json"))
        ids.append(json.loads(result.stdout)["eval_id"])
    refused = invoke("compare", *ids)
    assert refused.exit_code == 2
    assert (
        refused.stderr.startswith("Error: ")
        and "different expected answers (1 rows differ: 0)" in refused.stderr
    )
    forced = invoke("compare", *ids, "--force")
    assert forced.exit_code == 0 and "Warning: 1 rows have other expected answers" in forced.stderr


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


def test_map_flags_absolute_tolerance_and_repeats_reach_the_run(data, schema_file, emulator: Emulator, home):
    emulator.default = answer(wrong=True)
    result = invoke(
        *eval_argv(data, schema_file, emulator, "--json", "--strategy", "native", "--repeat", "2",
                   "--tolerance", "total=abs:2", "--fuzzy", "vendor=0.5", "-o", "temperature", "0",
                   "--no-log", "--rpm", "6000", "--transport-retries", "0", "--timeout", "30", "--concurrency", "3"),
    )  # fmt: skip
    assert result.exit_code == 9, result.output  # row 4 failed in both runs (ROWS_FAILED)
    cell = json.loads(result.stdout)["cells"][0]
    # rows 0 and 1 right in both runs (row 1's total is 0.505 off, within abs:2; row 2's 5.1 is not)
    assert (cell["rows"], cell["rows_right"], cell["repeats"]) == (12, 4, 2)
    assert cell["pass_at_k"]["2"] == pytest.approx(2 / 6) and cell["pass_all_k"]["2"] == pytest.approx(2 / 6)
    assert len(emulator.requests) == 12 + 2 * 2  # row 4 (never JSON) is asked again twice in each run
    assert {r.json["temperature"] for r in emulator.requests} == {0}
    assert cell["calls_per_row"] == {}  # --no-log: nothing logged, so no calls to count
    assert not (home / "logs.db").exists()
    table = invoke(*eval_argv(data, schema_file, emulator, "--strategy", "native", "--repeat", "2", "--resume",
                              "--tolerance", "total=abs:2", "--fuzzy", "vendor=0.5"))  # fmt: skip
    assert table.exit_code == 9 and "agree 83.3%" in table.stdout  # row 4 failed: its runs agree on nothing
    assert len(emulator.requests) == 16  # --resume sent nothing again


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ("--tolerance", "total=absolute:1"),
            "Error: Invalid value for --tolerance: 'total=absolute:1': give",
        ),
        (
            ("--fuzzy", "vendor=2"),
            "Error: Invalid value for --fuzzy: 'vendor=2': give R or FIELD=R with R from 0",
        ),
        (("--fuzzy", "total=0.9"), "Error: --fuzzy names 'total', which is not a string field"),
    ],
)
def test_bad_tolerances_and_fuzzy_thresholds_are_usage_errors(data, schema_file, emulator, extra, message):
    result = invoke(*eval_argv(data, schema_file, emulator, *extra))
    assert result.exit_code == 2 and message in result.stderr, result.stderr


def test_jsonl_bad_expected_values_are_refused_naming_the_row(tmp_path, schema_file, emulator: Emulator):
    for name, text in {
        "nan": '{"text": "invoice 0", "expected": {"total": NaN}}\n',
        "deep": '{"text": "invoice 0", "expected": ' + "[" * 10_000 + "]" * 10_000 + "}\n",
    }.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_text(json.dumps(rows()[1]) + "\n" + text)
        result = invoke(*eval_argv(path, schema_file, emulator))
        assert result.exit_code == 2, (name, result.output)
        assert result.stderr.startswith("Error: row 1") and len(result.stderr.strip().splitlines()) == 1
    assert emulator.requests == []


def test_a_jsonl_expected_string_is_not_read_again_as_json(tmp_path, emulator: Emulator):
    path = tmp_path / "years.jsonl"
    path.write_text(json.dumps({"text": "year", "expected": "2024"}) + "\n")
    emulator.default = lambda request: json.dumps({"value": "2024"})
    argv = eval_argv(path, Path(tmp_path / "s.json"), emulator, "--json")
    (tmp_path / "s.json").write_text('{"type": "string"}')
    result = invoke(*[a if a != PROMPT else "Say {text}" for a in argv])
    assert result.exit_code == 9, result.output  # the row failed (exit codes: ROWS_FAILED)
    row = json.loads(result.stdout)["results"][0]["rows"][0]
    assert row["expected"] == "2024"


def test_ctrl_c_exits_130_with_the_eval_id_and_a_resume_hint(data, schema_file, emulator: Emulator):
    import os
    import signal
    import threading

    arrived, release = threading.Event(), threading.Event()
    right = answer(wrong=False)

    def reply(request: RecordedRequest) -> str:
        if "invoice 2" in user_text(request):  # rows 0 and 1 answered, row 2 held: Ctrl-C lands here
            arrived.set()
            release.wait(120)
        return right(request)

    def ctrl_c() -> None:
        if arrived.wait(120):
            os.kill(os.getpid(), signal.SIGINT)

    emulator.default = reply
    argv = eval_argv(data, schema_file, emulator, "--concurrency", "1", "--strategy", "native")
    presser = threading.Thread(target=ctrl_c)
    presser.start()
    try:
        stopped = CliRunner().invoke(cli, ["eval", *argv])
    finally:
        release.set()
        presser.join()
    assert stopped.exit_code == 130, stopped.output
    assert "Traceback" not in stopped.output and "RuntimeError" not in stopped.output
    eval_id = re.search(r"eval (\w+) interrupted", stopped.stderr).group(1)
    assert "--resume" in stopped.stderr
    sent = len(emulator.requests)
    resumed = invoke(*argv, "--resume", "--json")
    assert resumed.exit_code == 0, resumed.output
    report = json.loads(resumed.stdout)
    assert report["eval_id"] == eval_id and report["cells"][0]["rows_right"] == 6
    assert len(emulator.requests) - sent == 4  # rows 0 and 1 are not sent again


def test_html_with_a_lone_surrogate_is_written_escaped_and_a_bad_path_is_refused_before_any_call(
    tmp_path, schema_file, emulator: Emulator
):
    path = tmp_path / "odd.jsonl"
    path.write_text('{"id": "a\\ud800", "text": "invoice 2", "expected": ' + json.dumps(expected(2)) + "}\n")
    emulator.default = answer(wrong=True)
    missing = invoke(*eval_argv(path, schema_file, emulator, "--html", str(tmp_path / "no" / "r.html")))
    assert missing.exit_code == 2 and "--html" in missing.stderr and emulator.requests == []
    report = tmp_path / "r.html"
    report.write_text("the last report")
    result = invoke(*eval_argv(path, schema_file, emulator, "--id-field", "id", "--html", str(report)))
    assert result.exit_code == 0, result.output
    assert "a\\ud800" in report.read_text(encoding="utf-8")
    assert re.search(r"eval: \w+ \(`chainform eval show", result.stderr)


def test_a_failing_call_is_sent_three_times_not_nine_and_its_retries_are_shown(
    tmp_path, schema_file, emulator
):
    from chainform.testing.emulator import Fault

    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(rows()[0]) + "\n")
    emulator.default = lambda request: Fault(429, retry_after=0)
    result = invoke(*eval_argv(path, schema_file, emulator, "--json"))
    assert result.exit_code == 9, result.output  # the row failed (exit codes: ROWS_FAILED)
    assert len(emulator.requests) == 3  # the map's two retries; the SDK's own are off
    cell = json.loads(result.stdout)["cells"][0]
    assert cell["calls_per_row"] == {"chain": 1.0, "resent": 2.0} and cell["errors"] == {"provider": 1}


def test_duplicate_ids_are_refused_before_any_call_naming_both_lines(tmp_path, schema_file, emulator):
    data = tmp_path / "dup.jsonl"
    data.write_text(
        "".join(json.dumps({**row, "id": [1, 2, 2, 3][n]}) + "\n" for n, row in enumerate(rows()[:4]))
    )
    result = CliRunner().invoke(cli, ["eval", *eval_argv(data, schema_file, emulator, "--id-field", "id")])
    assert result.exit_code == 2, result.output
    [line] = result.output.strip().splitlines()
    assert line.startswith("Error: ") and "lines 2 and 3" in line and "'id'" in line
    assert emulator.requests == []


def test_the_ci_gate_fails_under_its_floors_with_the_figures_and_a_cost_stop_has_its_own_code(
    data, schema_file, emulator: Emulator
):
    emulator.default = answer(wrong=True)  # total right in 4 of 6 rows
    argv = eval_argv(data, schema_file, emulator, "--tolerance", "total=0.01", "--json")
    below = invoke(*argv, "--fail-under", "total=0.9", "--fail-under", "date=0.5")
    assert below.exit_code == 6, below.output
    assert json.loads(below.stdout)["cells"][0]["rows"] == 6  # the report is printed all the same
    assert below.stderr.strip().splitlines() == [
        "eval: 1 of 6 rows failed: output 1 (e.g. output: StructuredOutputError: structured output failed after "
        "3 attempt(s): no valid JSON found in the reply: 'no JSON …)",  # said; the floors decide the exit
        f"eval: below --fail-under: {MODEL} / auto: field 'total' accuracy 66.7% < 90.0%",
    ]
    eval_id = json.loads(below.stdout)["eval_id"]
    assert invoke("show", eval_id, "--fail-under", "total=0.6").exit_code == 0
    overall = invoke("show", eval_id, "--fail-under", "0.99")
    assert overall.exit_code == 6 and "field accuracy" in overall.stderr
    sent = len(emulator.requests)
    for bad in (("--fail-under", "totl=0.9"), ("--fail-under", "1.5"), ("--fail-under", "=0.5")):
        refused = invoke(*argv, *bad)
        assert refused.exit_code == 2 and "--fail-under" in refused.stderr, refused.output
    assert len(emulator.requests) == sent
    capped = invoke(*argv, "--max-cost", "0.0000001", "--fail-under", "0.1")
    assert capped.exit_code == 7, capped.output
    assert "--max-cost stopped eval" in capped.stderr and "--resume with a higher cap" in capped.stderr


def test_the_terminal_shows_wrong_fields_and_csv_has_every_row_and_field(
    tmp_path, data, schema_file, emulator
):
    emulator.default = answer(wrong=True)
    missing = invoke(*eval_argv(data, schema_file, emulator, "--csv", str(tmp_path / "no" / "r.csv")))
    assert missing.exit_code == 2 and "--csv" in missing.stderr and emulator.requests == []
    out = tmp_path / "rows.csv"
    result = invoke(*eval_argv(data, schema_file, emulator, "--tolerance", "total=0.01", "--csv", str(out)))
    assert result.exit_code == 9, (
        result.output
    )  # row 4 failed (ROWS_FAILED); the report is shown all the same
    assert "valid acc" in result.stdout and "fields not right" in result.stdout
    assert "102.0" in result.stdout and "107.10000000000001" in result.stdout  # expected against answered
    assert len(out.read_text().splitlines()) == 1 + 6 * 8
    eval_id = re.search(r"eval: (\w+) \(", result.stderr).group(1)
    again = tmp_path / "again.csv"
    assert (
        invoke("show", eval_id, "--csv", str(again)).exit_code == 0 and again.read_text() == out.read_text()
    )


def test_a_rubric_judge_with_its_own_key_and_endpoint(data, schema_file, emulator: Emulator):
    def reply(request: RecordedRequest) -> str:
        if "Judge one field" in json.dumps(request.json):
            return json.dumps({"pass": True, "reason": "reads like a shop"})
        return answer(wrong=False)(request)

    emulator.default = reply
    result = invoke(
        *eval_argv(data, schema_file, emulator, "--json", "--strategy", "native", "--rubric",
                   "vendor=names a shop", "--judge", MODEL, "--judge-key", "sk-judge",
                   "--judge-base-url", emulator.base_url + "/v1"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    keys = [
        (r.headers.get("authorization"), "Judge one field" in json.dumps(r.json)) for r in emulator.requests
    ]
    assert sorted(set(keys)) == [("Bearer sk-judge", True), ("Bearer sk-test", False)]
    cell = json.loads(result.stdout)["cells"][0]
    assert cell["rows_right"] == 6 and cell["calls_per_row"]["judge"] == 1.0
