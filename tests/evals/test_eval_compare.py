"""Comparing two cells: the difference in rows right, its paired bootstrap interval (fixed seed),
McNemar's exact test and what got worse, against figures worked out by hand."""

from __future__ import annotations

import pytest
from eval_helpers import two_cell_report

from chainform.evals import EvalInputError
from chainform.evals._compare import bootstrap_interval, compare, mcnemar

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


@pytest.fixture
def report(priced):
    return two_cell_report()


def test_good_against_bad(report):
    bad, good = report.cells
    result = compare(bad, good)
    assert (result.rows, result.a_right, result.b_right, result.only_a, result.only_b) == (6, 2, 6, 0, 4)
    assert result.difference == 4 / 6
    # the mean of six resampled differences from [0, 0, 1, 1, 1, 1] is Binomial(6, 2/3) / 6:
    # P(<= 1/6) = 13/729 < 2.5% < P(<= 2/6) = 73/729, and P(<= 5/6) = 665/729 < 97.5%
    assert (result.low, result.high) == (2 / 6, 1.0)
    assert result.p_value == 0.125  # 4 discordant pairs, all one way: 2 * (1/2)^4
    assert result.worse_fields == {} and result.worse_rows == []
    back = compare(good, bad)
    assert back.worse_rows == ["2", "3", "4", "5"]
    assert back.worse_fields["date"] == (1.0, 5 / 6) and len(back.worse_fields) == 8
    assert (back.low, back.high) == (-1.0, -2 / 6)


def test_the_interval_is_fixed_by_its_seed_and_degenerate_when_every_row_agrees():
    diffs = [1, 0, -1, 0, 1, 1, 0, 0, -1, 1]
    first = bootstrap_interval(diffs, seed=7, resamples=2000, level=0.95)
    assert first == bootstrap_interval(diffs, seed=7, resamples=2000, level=0.95)
    assert first[0] < sum(diffs) / len(diffs) < first[1]
    assert bootstrap_interval([1, 1, 1], seed=1, resamples=500, level=0.95) == (1.0, 1.0)


def test_mcnemar_exact_values():
    assert mcnemar(0, 0) == 1.0
    assert mcnemar(1, 1) == 1.0
    assert mcnemar(0, 5) == 2 / 32
    assert mcnemar(2, 8) == pytest.approx(2 * (1 + 10 + 45) / 1024)


def test_cells_of_different_rows_are_refused(report):
    bad, good = report.cells
    good.rows = good.rows[:3]
    with pytest.raises(EvalInputError, match="did not score the same rows"):
        compare(bad, good)


def test_cells_of_other_expected_answers_are_refused_unless_forced(report):
    bad, good = report.cells
    good.rows[1].expected = {**good.rows[1].expected, "total": 0}
    with pytest.raises(EvalInputError, match=r"scored different expected answers \(1 rows differ: 1\)"):
        compare(bad, good)
    result = compare(bad, good, force=True, labels=("E1#1 (bad)", "E1#2 (good)"))
    assert result.expected_differ == ["1"] and (result.a, result.b) == ("E1#1 (bad)", "E1#2 (good)")
    assert result.better_fields["total"] == (4 / 6, 1.0) and result.better_rows == ["2", "3", "4", "5"]
