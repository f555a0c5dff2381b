"""`repeat=N`: each row runs N times; the report adds pass@k, pass^k and per-field agreement across
the runs (hand-computed here), `--repeat` prints them, and the kept report reads back the same."""

from __future__ import annotations

import json
import re

import pytest

import chainform as cf
from chainform.evals import EvalInputError, load_report
from chainform.models import Model
from chainform.testing import ScriptedClient

SCHEMA = "name, n int"
ROWS = [{"text": f"row {i}", "expected": {"name": f"item {i}", "n": i}} for i in range(3)]


def runs_of(answers: dict[int, list[dict[str, object]]]) -> Model:
    """A model answering row i's k-th call with answers[i][k]."""
    calls: dict[int, int] = {}

    def reply(messages, options):
        i = int(re.search(r"row (\d+)", messages[-1].text).group(1))
        k = calls.get(i, 0)
        calls[i] = k + 1
        return json.dumps(answers[i][k])

    return Model(ScriptedClient([reply] * 20), name="scripted")


ANSWERS = {
    0: [{"name": "item 0", "n": 0}] * 3,  # right 3 times of 3
    1: [{"name": "item 1", "n": 1}, {"name": "item 1", "n": 7}, {"name": "ITEM 1", "n": 1}],  # 2 of 3
    2: [{"name": "other", "n": 2}] * 3,  # never right, always the same answer
}


def test_pass_at_k_pass_all_k_and_agreement_are_the_hand_computed_ones():
    report = cf.evaluate(ROWS, schema=SCHEMA, prompt="{text}", models=[runs_of(ANSWERS)], repeat=3)
    cell = report.cells[0]
    assert (cell.n, cell.rows_right, cell.repeats) == (9, 5, 3)
    assert sorted((r.key, r.repeat) for r in cell.rows) == [(str(i), k) for i in range(3) for k in range(3)]
    # right runs per row: c = 3, 2, 0 of n = 3
    assert cell.pass_at(1) == pytest.approx((3 / 3 + 2 / 3 + 0) / 3)
    assert cell.pass_at(2) == pytest.approx((1 + (1 - 0 / 3) + 0) / 3)  # C(1, 2) = 0: some pair is right
    assert cell.pass_at(3) == pytest.approx(2 / 3)
    assert cell.pass_all(2) == pytest.approx((1 + 1 / 3 + 0) / 3)  # C(2, 2) / C(3, 2) = 1/3
    assert cell.pass_all(3) == pytest.approx(1 / 3)
    # name: every row's runs agree (case folded: "ITEM 1" is "item 1"); n: row 1 answered 1, 7, 1
    assert cell.agreement() == pytest.approx({"name": 1.0, "n": 2 / 3})
    summary = report.to_dict(rows=False)["cells"][0]
    assert summary["pass_at_k"]["3"] == pytest.approx(2 / 3) and summary["pass_all_k"]["1"] == pytest.approx(
        5 / 9
    )
    back = load_report(report.eval_id).cells[0]
    assert (back.pass_at(3), back.pass_all(3), back.agreement()) == (
        cell.pass_at(3),
        cell.pass_all(3),
        cell.agreement(),
    )


def test_a_failed_run_agrees_with_nothing_and_resume_runs_no_row_twice():
    answers = {
        0: [{"name": None}] * 20,
        1: [{"name": "item 1", "n": 1}] * 3,
        2: [{"name": "item 2", "n": 2}] * 3,
    }
    model = runs_of(answers)  # row 0 never valid: each of its runs fails
    first = cf.evaluate(ROWS, schema=SCHEMA, prompt="{text}", models=[model], repeat=3, concurrency=1)
    cell = first.cells[0]
    assert (
        cell.rows_right == 6
        and cell.valid_rate == 6 / 9
        and cell.agreement() == pytest.approx({"name": 2 / 3, "n": 2 / 3})
    )
    sent = len(model.client.requests)
    again = cf.evaluate(ROWS, schema=SCHEMA, prompt="{text}", models=[model], repeat=3, concurrency=1,
                        resume=True)  # fmt: skip
    assert len(model.client.requests) == sent and again.eval_id == first.eval_id
    assert again.cells[0].rows_right == 6


@pytest.mark.parametrize(
    ("argument", "value"),
    [("repeat", 0), ("repeat", -3), ("repeat", 10**9), ("repeat", True), ("repeat", 2.0),
     ("concurrency", 0), ("concurrency", -1), ("concurrency", 10**9), ("concurrency", "8")],
)  # fmt: skip
def test_repeat_and_concurrency_are_held_to_the_flags_range_before_any_call(argument, value):
    """`repeat=` and `concurrency=` take what `--repeat` and `--concurrency` take (one constant each,
    chainform/_bounds.py); anything else is refused, naming the argument, value and range."""
    from chainform._bounds import MAX_CONCURRENCY, MAX_REPEAT

    model = runs_of(ANSWERS)
    top = MAX_REPEAT if argument == "repeat" else MAX_CONCURRENCY
    with pytest.raises(
        EvalInputError, match=re.escape(f"{argument}={value!r}: give a whole number from 1 to {top:,}")
    ):
        cf.evaluate(ROWS, schema=SCHEMA, prompt="{text}", models=[model], **{argument: value})
    assert model.client.requests == []


def test_the_cli_takes_the_same_repeat_and_concurrency_range():
    from click.testing import CliRunner

    from chainform._bounds import MAX_CONCURRENCY, MAX_REPEAT
    from chainform.cli import cli

    for flag, top in (("--repeat", MAX_REPEAT), ("--concurrency", MAX_CONCURRENCY)):
        for value in (0, top + 1):
            result = CliRunner().invoke(
                cli, ["eval", "run", "d.jsonl", "-p", "{text}", "-m", "x", flag, str(value)]
            )
            assert result.exit_code == 2 and f"1<=x<={top}" in result.stderr, result.stderr
