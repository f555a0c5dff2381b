"""Scoring from the schema: each kind of field, null vs missing vs present, arrays as sets or in
order, arrays of objects aligned, custom scorers, and the fields a tolerance or scorer may name."""

from __future__ import annotations

import pytest

from chainform.evals import EvalInputError, Options, compile_plan, score
from chainform.evals._leaves import Tolerance
from chainform.evals._score import _greedy, assign

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def plan(properties, **options):
    return compile_plan({"type": "object", "properties": properties}, Options(**options))


def statuses(p, expected, actual):
    return {path: o.status for path, o in score(p, expected, actual).items()}


def test_numbers_within_a_relative_tolerance_integers_exact():
    p = plan(
        {"total": {"type": "number"}, "tax": {"type": "number"}, "n": {"type": "integer"}},
        tolerance={"total": 0.01},
    )
    e = {"total": 200.0, "tax": 10.0, "n": 3}
    assert statuses(p, e, {"total": 201.9, "tax": 10.0, "n": 3.0}) == {
        "total": "right",
        "tax": "right",
        "n": "right",
    }
    assert statuses(p, e, {"total": 202.1, "tax": 10.01, "n": 4})["total"] == "wrong"
    assert statuses(p, e, {"total": 202.1, "tax": 10.01, "n": 4}) == {
        "total": "wrong",
        "tax": "wrong",
        "n": "wrong",
    }
    default = plan({"tax": {"type": "number"}}, default_tolerance=0.01)
    assert statuses(default, {"tax": 10.0}, {"tax": 10.05}) == {"tax": "right"}


def test_strings_normalised_and_fuzzy():
    p = plan({"name": {"type": "string"}})
    assert statuses(p, {"name": "Café  ACME\u00a0Ltd"}, {"name": " café acme ltd "}) == {"name": "right"}
    assert statuses(p, {"name": "ﬁsh"}, {"name": "FISH"}) == {"name": "right"}  # NFKC folds the ligature
    assert statuses(p, {"name": "Acme Ltd"}, {"name": "Acme Ltd."}) == {"name": "wrong"}
    fuzzy = plan({"name": {"type": "string"}}, fuzzy=0.9)
    assert statuses(fuzzy, {"name": "Acme Ltd"}, {"name": "Acme Ltd."}) == {"name": "right"}
    assert statuses(fuzzy, {"name": "Acme Ltd"}, {"name": "Apex Inc"}) == {"name": "wrong"}


def test_dates_and_times_by_their_format_booleans_and_enums():
    p = plan(
        {
            "day": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "date-time"},
            "paid": {"type": "boolean"},
            "cur": {"enum": ["EUR", "USD"]},
        }
    )
    e = {"day": "2024-03-01", "at": "2024-03-01T10:00:00Z", "paid": True, "cur": "EUR"}
    right = {"day": "2024-03-01", "at": "2024-03-01T11:00:00+01:00", "paid": True, "cur": "EUR"}
    assert set(statuses(p, e, right).values()) == {"right"}
    wrong = {"day": "2024-03-02", "at": "2024-03-01T10:00:00+01:00", "paid": 1, "cur": "eur"}
    assert set(statuses(p, e, wrong).values()) == {"wrong"}


def test_null_missing_and_present_are_counted_apart():
    p = plan({"a": {"type": ["string", "null"]}})
    assert statuses(p, {"a": "x"}, {}) == {"a": "missing"}
    assert statuses(p, {"a": "x"}, {"a": None}) == {"a": "null"}
    assert statuses(p, {"a": None}, {"a": "x"}) == {"a": "unexpected"}
    assert statuses(p, {"a": None}, {}) == {"a": "missing"}
    assert statuses(p, {}, {"a": None}) == {"a": "null"}
    assert statuses(p, {}, {}) == {"a": "right"}
    assert statuses(p, {"a": None}, {"a": None}) == {"a": "right"}


def test_nested_objects_score_by_path_and_a_missing_parent_misses_its_fields():
    p = plan(
        {
            "customer": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "vat": {"type": "string"}},
            }
        }
    )
    e = {"customer": {"name": "Ann", "vat": "X1"}}
    assert statuses(p, e, {"customer": {"name": "ann", "vat": "X2"}}) == {
        "customer.name": "right",
        "customer.vat": "wrong",
    }
    assert statuses(p, e, {}) == {"customer.name": "missing", "customer.vat": "missing"}


def test_arrays_are_sets_with_precision_and_recall_unless_ordered():
    p = plan(
        {
            "tags": {"type": "array", "items": {"type": "string"}},
            "steps": {"type": "array", "items": {"type": "string"}, "x-ordered": True},
        }
    )
    out = score(
        p, {"tags": ["a", "b", "c"], "steps": ["a", "b"]}, {"tags": ["C", "a", "z"], "steps": ["b", "a"]}
    )
    assert out["tags"][:1] == ("wrong",) and (out["tags"].tp, out["tags"].fp, out["tags"].fn) == (2, 1, 1)
    assert (out["steps"].status, out["steps"].tp, out["steps"].fp, out["steps"].fn) == ("wrong", 0, 2, 2)
    same = score(p, {"tags": ["a", "b"], "steps": ["a", "b"]}, {"tags": ["b", "a"], "steps": ["a", "b"]})
    assert same["tags"].status == same["steps"].status == "right"
    assert "tags[]" not in same  # the items of a scalar array are the array's P/R, not a field


def test_arrays_of_objects_are_aligned_before_their_fields_are_scored():
    p = plan(
        {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "qty": {"type": "integer"}},
                },
            }
        }
    )
    e = {"items": [{"name": "pen", "qty": 2}, {"name": "ink", "qty": 1}, {"name": "pad", "qty": 5}]}
    a = {"items": [{"name": "ink", "qty": 1}, {"name": "PEN", "qty": 3}]}
    out = score(p, e, a)
    # pen<->PEN (name right, qty wrong), ink<->ink (both right), pad unmatched
    assert (out["items"].tp, out["items"].fp, out["items"].fn) == (1, 1, 2)
    assert (out["items[].name"].right, out["items[].name"].total) == (2, 3)
    assert (out["items[].qty"].right, out["items[].qty"].total) == (1, 3)


def test_best_alignment_beats_the_greedy_one_and_the_greedy_one_is_documented():
    worth = [[1.0, 0.9], [0.9, 0.0]]
    assert sorted(assign(worth)) == [(0, 1), (1, 0)]  # 1.8 in all
    assert _greedy(worth) == [(0, 0), (1, 1)]  # each row in turn takes its best free column: 1.0


def test_custom_scorers_replace_the_fields_rule():
    p = plan(
        {"code": {"type": "string"}}, scorers={"code": lambda e, a: e.replace("-", "") == a.replace("-", "")}
    )
    assert statuses(p, {"code": "AB-12"}, {"code": "AB12"}) == {"code": "right"}
    assert statuses(p, {"code": "AB-12"}, {"code": "AB13"}) == {"code": "wrong"}


def test_refs_and_optionals_resolve_to_their_kind():
    schema = {
        "type": "object",
        "$defs": {"Money": {"type": "number"}},
        "properties": {"total": {"anyOf": [{"$ref": "#/$defs/Money"}, {"type": "null"}]}},
    }
    p = compile_plan(schema, Options(tolerance={"total": 0.1}))
    assert statuses(p, {"total": 10.0}, {"total": 10.5}) == {"total": "right"}


def test_unknown_fields_in_a_tolerance_or_scorer_are_refused_by_name():
    with pytest.raises(EvalInputError, match=r"'totl', which is no field.*fields: total"):
        plan({"total": {"type": "number"}}, tolerance={"totl": 0.1})
    with pytest.raises(EvalInputError, match="'name', which is not a number"):
        plan({"name": {"type": "string"}}, tolerance={"name": 0.1})
    with pytest.raises(EvalInputError, match="scorer names 'x'"):
        plan({"name": {"type": "string"}}, scorers={"x": lambda e, a: True})
    with pytest.raises(EvalInputError, match="not a number >= 0"):
        plan({"total": {"type": "number"}}, default_tolerance=-1)


def test_precision_and_recall_when_nothing_was_answered_or_expected():
    from chainform.evals import FieldFigures

    nothing_answered = FieldFigures(0, 1, tp=0, fp=0, fn=2, is_array=True)
    assert (nothing_answered.precision, nothing_answered.recall, nothing_answered.f1) == (0.0, 0.0, 0.0)
    nothing_at_all = FieldFigures(1, 1, is_array=True)
    assert (nothing_at_all.precision, nothing_at_all.recall) == (1.0, 1.0)
    extra = FieldFigures(0, 1, tp=0, fp=3, fn=0, is_array=True)
    assert (extra.precision, extra.recall) == (0.0, 0.0)


def test_absolute_tolerances_and_per_field_fuzzy_thresholds():
    p = plan(
        {"total": {"type": "number"}, "tax": {"type": "number"}, "fee": {"type": "number"}},
        tolerance={"total": "abs:0.01", "tax": "rel:0.1"},
        default_tolerance="abs:2",
    )
    e = {"total": 1000.0, "tax": 10.0, "fee": 0.0}
    assert statuses(p, e, {"total": 1000.01, "tax": 11.0, "fee": 2.0}) == dict.fromkeys(e, "right")
    # 1% of 1000 would allow 10, but this tolerance is absolute; a relative one of 0 allows nothing
    assert statuses(p, e, {"total": 1000.02, "tax": 11.01, "fee": -2.5}) == dict.fromkeys(e, "wrong")
    both = plan({"total": {"type": "number"}}, tolerance={"total": Tolerance(0.01, 0.5)})
    assert statuses(both, {"total": 10.0}, {"total": 10.4}) == {"total": "right"}  # absolute allows more
    assert statuses(both, {"total": 100.0}, {"total": 100.9}) == {"total": "right"}  # relative does
    fuzzy = plan(
        {"name": {"type": "string"}, "city": {"type": "string"}},
        fuzzy=0.95,
        fuzzy_fields={"name": 0.8},
    )
    answer = {"name": "Acme Ltd.", "city": "Romee"}
    assert statuses(fuzzy, {"name": "Acme Ltd", "city": "Rome"}, answer) == {"name": "right", "city": "wrong"}
    with pytest.raises(EvalInputError, match="give REL, rel:REL or abs:ABS"):
        plan({"total": {"type": "number"}}, tolerance={"total": "absolute:1"})
    with pytest.raises(EvalInputError, match="--fuzzy names 'total', which is not a string field"):
        plan({"total": {"type": "number"}}, fuzzy_fields={"total": 0.5})
    with pytest.raises(EvalInputError, match="fuzzy threshold of 'name' 2"):
        plan({"name": {"type": "string"}}, fuzzy_fields={"name": 2})


def item_plan():
    item = {"type": "object", "properties": {"q": {"type": "integer"}}}
    return plan({"items": {"type": "array", "items": item}})


def test_no_item_on_either_side_counts_nothing_for_the_item_fields():
    p = item_plan()
    for both in ([], None):
        outcomes = score(p, {"items": both}, {"items": both})
        assert outcomes["items"] == ("right", 1, 1, 0, 0, 0)
        assert outcomes["items[].q"][:3] == ("right", 0, 0)  # was 1 of 1 ([]) and 0 of 1 (null)
    from chainform.evals._report import FieldFigures

    assert FieldFigures(0, 0).accuracy == 1.0


def test_extra_answered_items_are_unexpected_and_missing_ones_missing():
    p = item_plan()
    extra = score(p, {"items": [{"q": 1}]}, {"items": [{"q": 1}, {"q": 2}]})["items[].q"]
    assert (extra.status, extra.right, extra.total) == ("unexpected", 1, 2)
    short = score(p, {"items": [{"q": 1}, {"q": 2}]}, {"items": [{"q": 1}]})["items[].q"]
    assert (short.status, short.right, short.total) == ("missing", 1, 2)


def test_a_field_with_no_type_tells_true_from_1_also_inside_arrays_and_objects():
    p = plan({"x": {}, "xs": {"type": "array", "items": {}}, "o": {}})
    got = statuses(p, {"x": 1, "xs": [1], "o": {"a": [1]}}, {"x": True, "xs": [True], "o": {"a": [True]}})
    assert got == {"x": "wrong", "xs": "wrong", "o": "wrong"}
    assert statuses(p, {"x": 3, "xs": [3], "o": {"a": 3}}, {"x": 3.0, "xs": [3.0], "o": {"a": 3.0}}) == {
        "x": "right",
        "xs": "right",
        "o": "right",
    }


def test_times_compare_in_utc_whatever_offset_and_no_zone_is_utc():
    p = plan({"t": {"type": "string", "format": "time"}})
    for answer in ("11:00:00Z", "11:00:00+00:00", "11:00:00", "13:00:00+02:00"):
        assert statuses(p, {"t": "12:00:00+01:00"}, {"t": answer}) == {"t": "right"}, answer
    assert statuses(p, {"t": "00:30:00+01:00"}, {"t": "23:30:00Z"}) == {"t": "right"}
    assert statuses(p, {"t": "12:00:00+01:00"}, {"t": "12:00:00Z"}) == {"t": "wrong"}
