"""`rubric=`/`--rubric FIELD="..."`: the judge passes or fails a free-text field on a rubric with no
expected value; the verdicts and reasons are kept, priced like other calls, reused by rescore."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

import chainform as cf
from chainform.cli import cli
from chainform.evals import EvalInputError, rescore
from chainform.models import Model
from chainform.testing import ScriptedClient

SCHEMA = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "summary": {"type": ["string", "null"]}},
    "required": ["title", "summary"],
}
ANSWERS = [
    {"title": "Car", "summary": "A red car."},  # passes
    {"title": "Sky", "summary": "It is large."},  # fails
    {"title": "Sea", "summary": None},  # null: never sent to the judge
]
ROWS = [{"text": f"item {n}", "expected": {"title": a["title"]}} for n, a in enumerate(ANSWERS)]
RUBRIC = {"summary": "names a colour"}


def answering() -> Model:
    def reply(messages, options):
        n = int(re.search(r"item (\d+)", messages[-1].text).group(1))
        return json.dumps(ANSWERS[n])

    return Model(ScriptedClient([reply] * 20), name="writer")


def judging() -> tuple[Model, ScriptedClient]:
    def verdict(messages, options):
        text = messages[-1].text
        coloured = "red" in text.split("<<<")[1]
        return json.dumps({"pass": coloured, "reason": "names red" if coloured else "no colour named"})

    client = ScriptedClient([verdict] * 20)
    return Model(client, name="judge"), client


def test_a_rubric_field_is_judged_with_no_expected_value_and_its_reasons_kept():
    judge, client = judging()
    report = cf.evaluate(ROWS, schema=SCHEMA, prompt="{text}", models=[answering()], judge=judge,
                         rubric=RUBRIC, concurrency=1)  # fmt: skip
    cell = report.cells[0]
    rows = cell.rows
    assert [r.fields["summary"].status for r in rows[:2]] == ["right", "wrong"]
    assert rows[2].error is None and rows[2].fields["summary"].status == "null"  # answered null: no call
    assert len(client.requests) == 2 and all("names a colour" in m[-1].text for m, _ in client.requests)
    assert [r.rubric for r in rows] == [
        {"summary": "pass: names red"},
        {"summary": "fail: no colour named"},
        {},
    ]
    assert [r.right for r in rows] == [True, False, False]
    assert cell.calls_per_row()["judge"] == pytest.approx(2 / 3)  # two judge calls over three rows
    assert report.settings["scoring"]["rubric"] == RUBRIC
    again = rescore(report.eval_id)  # no model called: the kept verdicts are applied again
    assert len(client.requests) == 2
    assert [r.fields["summary"].status for r in again.cells[0].rows] == ["right", "wrong", "null"]
    assert again.cells[0].rows[1].rubric == {"summary": "fail: no colour named"}


def test_rubric_fields_must_be_free_text_and_have_a_text():
    with pytest.raises(EvalInputError, match="--rubric names 'nope', which is no free-text field"):
        cf.evaluate(ROWS, schema=SCHEMA, prompt="{text}", models=[answering()], rubric={"nope": "x"})
    with pytest.raises(EvalInputError, match="give the rubric's text"):
        cf.evaluate(ROWS, schema=SCHEMA, prompt="{text}", models=[answering()], rubric={"summary": " "})


def test_a_bad_rubric_flag_is_a_usage_error(tmp_path):
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    result = CliRunner().invoke(
        cli, ["eval", str(data), "--schema", json.dumps(SCHEMA), "-p", "{text}", "-m", "openai/gpt-4.1-mini",
              "--key", "sk-test", "--rubric", "summary"],
    )  # fmt: skip
    assert result.exit_code == 2 and 'give FIELD="the rubric"' in result.stderr


def test_a_failed_rubric_field_shows_the_judges_reason():
    from chainform.evals._report import wrong_fields

    judge, _ = judging()
    report = cf.evaluate(ROWS, schema=SCHEMA, prompt="{text}", models=[answering()], judge=judge,
                         rubric=RUBRIC, concurrency=1)  # fmt: skip
    assert wrong_fields(report.cells[0].rows[1]) == [
        ("summary", "wrong", "fail: no colour named", "It is large.")
    ]
