"""`--resume --retry-failed` runs again only the rows whose chain failed; `rescore` scores the kept
answers again (other tolerances, corrected expected answers) with no model call, as a new report
beside the old one."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from eval_helpers import PROMPT, SCHEMA, expected, rows, scripted, sloppy

import chainform as cf
from chainform.cli import cli
from chainform.evals import EvalInputError, load_report, rescore


def run(model, **kwargs):
    return cf.evaluate(rows(), schema=SCHEMA, prompt=PROMPT, models=[model], strategies=["native"],
                       concurrency=1, **kwargs)  # fmt: skip


def test_retry_failed_runs_again_only_the_rows_whose_chain_failed():
    def answer(n):  # row 4 answers no JSON in its first three calls: its chain fails
        return expected(n) if n == 4 and script.calls[n] > 3 else sloppy(n)

    model, script = scripted("bad", answer)
    first = run(model)
    assert [r.key for r in first.cells[0].rows if r.error] == ["4"]
    assert script.calls[4] == 3  # asked, and re-asked twice
    again = run(model, resume=True)  # a failure is a result: a plain resume sends nothing
    assert sum(script.calls.values()) == 8 and again.cells[0].rows[4].error
    with pytest.raises(EvalInputError, match="give resume=True"):
        run(model, retry_failed=True)
    retried = run(model, resume=True, retry_failed=True)
    assert script.calls == {0: 1, 1: 1, 2: 1, 3: 1, 4: 4, 5: 1}  # only row 4 was sent again
    row = retried.cells[0].rows[4]
    assert retried.eval_id == first.eval_id and row.error is None and row.right


def test_rescore_with_a_tolerance_and_with_corrected_expected_answers_calls_no_model():
    model, script = scripted("bad", sloppy)
    first = run(model)
    cell = first.cells[0]
    assert cell.rows_right == 1  # row 0
    assert cell.fields()["total"].right == 3  # rows 1 (0.5% off) and 2 (5%) wrong, 4 failed
    sent = dict(script.calls)
    looser = rescore(first.eval_id[:12], tolerance={"total": 0.01})
    assert script.calls == sent  # no model call
    assert looser.eval_id != first.eval_id and looser.settings["rescored_from"] == first.eval_id
    assert looser.settings["scoring"]["tolerance"] == {"total": 0.01}
    assert looser.cells[0].rows_right == 2 and looser.cells[0].fields()["total"].right == 4
    assert load_report(first.eval_id).cells[0].rows_right == 1  # the old report is as it was
    assert load_report(looser.eval_id).cells[0].rows_right == 2  # the new one is kept
    corrected = rows()
    corrected[2]["expected"]["total"] = 102 * 1.05  # what the model said was right after all
    fixed = rescore(first.eval_id, corrected, tolerance={"total": "abs:1"})
    assert [r.key for r in fixed.cells[0].rows if r.right] == ["0", "1", "2"]
    assert fixed.cells[0].rows[2].expected["total"] == 102 * 1.05 and script.calls == sent
    with pytest.raises(EvalInputError, match="lacks rows 5 that eval"):
        rescore(first.eval_id, rows()[:5])


def test_eval_rescore_on_the_command_line():
    model, _ = scripted("bad", sloppy)
    first = run(model)
    argv = ["eval", "rescore", first.eval_id, "--tolerance", "total=abs:1", "--json"]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["settings"]["rescored_from"] == first.eval_id and report["cells"][0]["rows_right"] == 2
    gated = CliRunner().invoke(cli, ["eval", "rescore", first.eval_id, "--fail-under", "total=0.9"])
    assert gated.exit_code == 6 and "total" in gated.stderr
    missing = CliRunner().invoke(cli, ["eval", "rescore", "nope"])
    assert missing.exit_code == 2 and missing.stderr.strip() == "Error: no kept eval 'nope'"
