"""`cf.evaluate` on scripted models whose answers are right for a known subset: every figure of the
report equals the one computed by hand from eval_helpers' table."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pytest
from eval_helpers import PROMPT, ROWS, SCHEMA, expected, rows, scripted, sloppy, two_cells

import chainform as cf
from chainform.evals import EvalInputError, load_report
from chainform.testing import ScriptedClient

pytestmark = [pytest.mark.usefixtures("priced"), pytest.mark.unit]


run = two_cells


def deep(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return value


def test_every_figure_of_a_cell_is_the_hand_computed_one():
    report, bad_script, _good_script = run()
    bad, good = report.cells
    assert (bad.model, bad.strategy, good.model) == ("bad", "native", "good")
    k = bad_script.calls[4]  # row 4 never answers valid JSON: its first call and its retries
    assert k > 1 and all(bad_script.calls[n] == 1 for n in (0, 1, 2, 3, 5))
    assert bad.n == ROWS and bad.valid_rate == 5 / 6
    assert bad.rows_right == 2 and [r.key for r in bad.rows if r.right] == ["0", "1"]
    figures = bad.fields()
    assert {p: (f.right, f.total) for p, f in figures.items()} == {
        "vendor": (4, 6),
        "total": (4, 6),
        "currency": (4, 6),
        "date": (5, 6),
        "paid": (4, 6),
        "items": (4, 6),
        "items[].name": (9, 12),
        "items[].qty": (9, 12),
    }
    items = figures["items"]
    assert (items.tp, items.fp, items.fn) == (9, 0, 3)
    assert items.precision == 1.0 and items.recall == 0.75 and items.f1 == pytest.approx(2 * 0.75 / 1.75)
    assert bad.field_accuracy == pytest.approx((5 * 4 / 6 + 5 / 6 + 2 * 0.75) / 8)  # the mean of the fields'
    row5 = {p: o.status for p, o in bad.rows[5].fields.items()}
    assert row5["vendor"] == "missing" and row5["paid"] == "null"
    row4 = bad.rows[4]
    assert (
        not row4.valid
        and row4.error_phase == "output"
        and set(o.status for o in row4.fields.values()) == {"error"}
    )
    assert bad.calls_per_row() == {"chain": 1.0, "retry": (k - 1) / 6}
    assert bad.cost == Decimal(5 + k) and bad.cost_per_row == Decimal(5 + k) / 6
    assert bad.cost_per_correct_row == Decimal(5 + k) / 2
    assert bad.tokens == 100 * (5 + k)
    assert good.rows_right == 6 and good.field_accuracy == 1.0 and good.cost_per_correct_row == Decimal(1)
    assert bad.strategies_ran == ["native"]
    latencies = sorted(r.latency_ms for r in bad.rows)
    assert bad.latency(0.5) == latencies[2] and bad.latency(0.95) == latencies[5]
    assert all(len(r.call_ids) == (k if r.key == "4" else 1) for r in bad.rows)


def test_the_report_is_kept_and_reads_back_the_same():
    report, _, _ = run()
    again = load_report(report.eval_id[:12])
    assert again.to_dict() == report.to_dict()
    assert [c.run_id for c in again.cells] == [c.run_id for c in report.cells]
    assert len({c.run_id for c in report.cells}) == 2


def test_assert_at_least_names_each_shortfall():
    report, _, _ = run()
    report.cell("good").rows  # one cell by model
    with pytest.raises(AssertionError) as failure:
        report.assert_at_least(valid=0.9, field_accuracy={"total": 0.7})
    text = str(failure.value)
    assert "bad / native: valid 83.3% < 90.0%" in text
    assert "bad / native: field 'total' accuracy 66.7% < 70.0%" in text
    assert "good" not in text
    report.assert_at_least(valid=0.8, field_accuracy=0.7, rows_right=1 / 3)


def test_a_resumed_eval_runs_only_the_rows_not_done_and_reports_the_same():
    first, _, _ = run()
    again, bad_script, good_script = run(resume=True)
    assert again.eval_id == first.eval_id
    assert bad_script.calls == {} and good_script.calls == {}  # every row was done
    assert again.to_dict(rows=False)["cells"] == first.to_dict(rows=False)["cells"]


def test_a_cap_leaves_rows_not_run_scored_wrong_and_resume_runs_them():
    capped, _, _ = run(max_cost=2)
    bad = capped.cells[0]
    not_run = [r for r in bad.rows if r.error_phase == "not-run"]
    assert not_run and all(not r.right for r in not_run)
    assert bad.n == ROWS  # never dropped
    finished, _, _ = run(resume=True)
    assert finished.eval_id == capped.eval_id
    assert not [r for c in finished.cells for r in c.rows if r.error_phase == "not-run"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([{"text": "invoice 0"}], "row 0 has no expected answer"),
        (
            [{"text": "invoice 0", "expected": {**expected(0), "total": "ten"}}],
            "row 0: the expected answer does not match",
        ),
        ([], "no rows"),
        (
            [{"text": "invoice 0", "expected": {**expected(0), "total": float("nan")}}],
            "row 0: the expected answer holds nan, which is no JSON number",
        ),
        (
            [{"text": "invoice 0", "expected": {**expected(0), "total": float("-inf")}}],
            "row 0: the expected answer holds -inf",
        ),
        (
            [{"text": "invoice 0", "expected": {**expected(0), "vendor": deep(10_000)}}],
            "row 0: the expected answer is nested more than 100 levels deep",
        ),
        (
            [{"id": None, "text": "invoice 0", "expected": expected(0)}],
            "row 0 has a null or empty 'id' field",
        ),
        (
            [
                {"id": 1, "text": "invoice 0", "expected": expected(0)},
                {"id": 2, "txt": "x", "expected": expected(1)},
            ],
            "row '2': the prompt template names 'text', which this row does not have",
        ),
    ],
)
def test_bad_rows_are_refused_before_any_call(data, message):
    model, script = scripted("bad", sloppy)
    with pytest.raises(EvalInputError, match=message):
        cf.evaluate(
            data,
            schema=SCHEMA,
            prompt=PROMPT,
            models=[model],
            id_field="id" if data and "id" in data[0] else None,
        )
    assert script.calls == {}


def test_a_model_answer_of_nan_is_not_json_and_never_valid():
    model = cf.Model(ScriptedClient(['{"n": NaN}', '{"n": Infinity}', '{"n": -Infinity}']), name="nan")
    report = cf.evaluate(
        [{"text": "a", "expected": {"n": 1.0}}], schema="n float", prompt="{text}", models=[model]
    )
    row = report.cells[0].rows[0]
    assert not row.valid and row.error_phase == "output" and row.actual is None


def test_a_date_time_without_its_zone_is_refused_as_an_expected_answer():
    model, script = scripted("bad", sloppy)
    schema = {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}}}
    with pytest.raises(EvalInputError, match="is not a 'date-time'"):
        cf.evaluate(
            [{"text": "x", "expected": {"at": "2024-03-01T10:00:00"}}],
            schema=schema,
            prompt="{text}",
            models=[model],
        )
    assert script.calls == {}


def test_a_row_keyed_by_id_field_is_named_by_its_key():
    model, script = scripted("bad", sloppy)
    data = [{"id": "a", "text": "invoice 0", "expected": expected(0)}, {"id": "b", "text": "invoice 1"}]
    with pytest.raises(EvalInputError, match="row 'b' has no expected answer"):
        cf.evaluate(data, schema=SCHEMA, prompt=PROMPT, models=[model], id_field="id")
    assert script.calls == {}


def test_nearest_rank_quantiles():
    report, _, _ = run()
    cell = report.cells[1]
    values = sorted(r.latency_ms for r in cell.rows)
    for q in (0.5, 0.95, 1.0):
        assert cell.latency(q) == values[math.ceil(q * len(values)) - 1]


def test_a_capped_eval_prices_the_rows_that_ran_and_a_resume_under_the_same_cap_spends_nothing():
    capped, _, _ = run(max_cost=2)
    bad = capped.cells[0]
    ran = [r for r in bad.rows if r.error_phase != "not-run"]
    assert 0 < len(ran) < ROWS
    assert bad.cost == sum(Decimal(r.cost) for r in ran) and bad.cost_per_row == bad.cost / len(ran)
    assert capped.to_dict(rows=False)["cells"][0]["not_run"] == ROWS - len(ran)
    again, bad_script, good_script = run(resume=True, max_cost=2)  # the cap was spent: nothing more
    assert bad_script.calls == {} and good_script.calls == {}
    assert again.eval_id == capped.eval_id and again.stopped_by_cost


def test_a_row_of_unknown_cost_leaves_the_others_priced():
    from chainform.evals import Cell, RowResult

    rows = [
        RowResult("a", {}, 1, cost="0.5"),
        RowResult("b", {}, 1, cost=None),
        RowResult("c", {}, 1, cost="1.5"),
    ]
    cell = Cell("m", "auto", "{x}", "run", rows)
    assert (cell.cost, cell.unpriced_rows, cell.cost_per_row) == (Decimal(2), 1, Decimal(1))
    assert cell.cost_per_correct_row == Decimal(2) / 3


def test_scoring_settings_are_kept_and_a_resume_with_others_is_refused_leaving_the_report_as_it_was():
    first, _, _ = run(fuzzy=0.9)
    assert first.settings["scoring"] == {
        "tolerance": {"total": 0.01}, "default_tolerance": 0.0, "fuzzy": 0.9, "scorers": [], "judge": None,
        "judge_fields": [],
    }  # fmt: skip
    from chainform.evals._keep import eval_dir

    kept = (eval_dir(first.eval_id) / "report.json").read_text()
    model, script = scripted("bad", sloppy)
    with pytest.raises(
        EvalInputError, match=f"eval {first.eval_id} was scored with other settings \\(fuzzy\\)"
    ):
        cf.evaluate(rows(), schema=SCHEMA, prompt=PROMPT, models=[model, scripted("good", expected)[0]],
                    strategies=["native"], tolerance={"total": 0.01}, resume=True)  # fmt: skip
    assert (eval_dir(first.eval_id) / "report.json").read_text() == kept and script.calls == {}
    assert load_report(first.eval_id).settings["scoring"]["fuzzy"] == 0.9


def test_accuracy_among_valid_rows_leaves_the_failed_call_out():
    report, _, _ = run()
    bad, good = report.cells
    # the five valid rows: vendor, total, currency, paid, items 4/5; date 5/5; item fields 9/10 each
    assert bad.valid_field_accuracy == pytest.approx((4 * 0.8 + 1.0 + 0.8 + 2 * 0.9) / 8)
    assert bad.field_accuracy < bad.valid_field_accuracy and good.valid_field_accuracy == 1.0
    assert report.to_dict(rows=False)["cells"][0]["valid_field_accuracy"] == bad.valid_field_accuracy


def test_wrong_fields_show_expected_against_answered_in_the_terminal_html_and_csv():
    import csv
    import io

    from chainform.evals._csv import csv_text
    from chainform.evals._html import html
    from chainform.evals._table import wrong_lines

    report, _, _ = run()
    lines = wrong_lines(report)
    assert ("bad / native", "2", "total", "wrong", "102.0", "107.10000000000001") in lines
    by_field = {line[:3]: line for line in lines}
    assert by_field["bad / native", "3", "items[].qty"][3] == "missing"
    assert by_field["bad / native", "4", "*"][3] == "output"  # a failed row: one line
    assert not [line for line in lines if line[0] == "good / native"]
    page = html(report)
    assert (
        "<code>total</code> wrong: expected <code>102.0</code>, answered <code>107.10000000000001</code>"
        in page
    )
    table = list(csv.DictReader(io.StringIO(csv_text(report))))
    assert len(table) == 2 * ROWS * 8  # two cells, six rows, eight fields
    line = next(r for r in table if r["cell"] == "bad / native" and r["row"] == "2" and r["field"] == "total")
    assert (line["status"], line["right"], line["total"], line["expected"], line["answered"]) == (
        "wrong", "0", "1", "102.0", "107.10000000000001",
    )  # fmt: skip
    failed = next(
        r for r in table if r["cell"] == "bad / native" and r["row"] == "4" and r["field"] == "total"
    )
    assert failed["status"] == "error" and failed["error"].startswith("output: StructuredOutputError")


def test_csv_cells_a_spreadsheet_would_run_are_quoted():
    from chainform.evals._csv import _plain

    assert [_plain(t) for t in ("=1+1", "+A1", "@x", "-cmd", "-5", "-0.5", "plain")] == [
        "'=1+1", "'+A1", "'@x", "'-cmd", "-5", "-0.5", "plain",
    ]  # fmt: skip
