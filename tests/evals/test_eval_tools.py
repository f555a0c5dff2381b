"""`expected_tools`: a row's expected tool calls (a set, a sequence or counts, optionally with
arguments) scored from the logged tool calls like a field, `(tools)`; the report names the tools
wrongly called and the calls missed. Every figure here is counted by hand."""

from __future__ import annotations

import json
import re

import pytest

import chainform as cf
from chainform.evals import EvalInputError
from chainform.evals._tools import TOOLS
from chainform.models import Model
from chainform.testing import ScriptedClient
from chainform.testing._scripted import tool_call


def add(a: int, b: int) -> int:
    "Add two numbers."
    return a + b


def lookup(city: str) -> str:
    "A city's country."
    return "somewhere"


PLANS = {  # the calls each row's chain makes, in order, before it answers
    0: [("add", {"a": 1, "b": 2})],
    1: [("add", {"a": 1, "b": 2}), ("lookup", {"city": "Oslo"})],
    2: [("add", {"a": 1, "b": 2})],
    3: [("lookup", {"city": "Rome"})],
    4: [],
}
EXPECTED_TOOLS = {
    0: ["add"],  # a set: right
    1: {"sequence": ["lookup", "add"]},  # called in the other order: one matched, lookup wrong and missed
    2: {"counts": {"add": 2}},  # called once: one add missed
    3: [{"name": "lookup", "arguments": {"city": "Paris"}}],  # other arguments: wrong and missed
}
ROWS = [
    {"text": f"row {n}", "expected": {"answer": n}}
    | ({"expected_tools": EXPECTED_TOOLS[n]} if n in EXPECTED_TOOLS else {})
    for n in range(5)
]


def reply(messages, options):
    n = int(re.search(r"row (\d+)", next(m for m in messages if m.role == "user").text).group(1))
    done = sum(1 for m in messages if m.role == "tool")
    plan = PLANS[n]
    if done < len(plan):
        name, arguments = plan[done]
        return tool_call(name, **arguments)
    return json.dumps({"answer": n})


def model() -> Model:
    return Model(ScriptedClient([reply] * 40), name="scripted")


def test_trajectories_are_scored_like_a_field_and_the_mistakes_are_named():
    report = cf.evaluate(ROWS, schema="answer int", prompt="{text}", models=[model()], tools=[add, lookup],
                         strategies=["native"], concurrency=2)  # fmt: skip
    cell = report.cells[0]
    rows = {row.key: row for row in cell.rows}
    assert [rows[str(n)].fields[TOOLS].status for n in range(4)] == ["right", "wrong", "wrong", "wrong"]
    assert TOOLS not in rows["4"].fields  # no expectation: not scored
    figures = cell.fields()[TOOLS]
    # tp: 1 + 1 + 1 + 0; fp (calls wrongly made): 0 + 1 + 0 + 1; fn (calls missed): 0 + 1 + 1 + 1
    assert (figures.right, figures.total, figures.tp, figures.fp, figures.fn) == (1, 4, 3, 2, 3)
    assert (figures.precision, figures.recall) == (3 / 5, 3 / 6)
    assert cell.tool_mistakes() == {
        "wrongly_called": {"lookup": 2},
        "missed": {"add": 1, "lookup": 1, 'lookup({"city": "Paris"})': 1},
    }
    assert cell.rows_right == 2  # rows 0 and 4: every answer is right, rows 1-3 miss their tools
    summary = report.to_dict(rows=False)["cells"][0]
    assert summary["tools"]["wrongly_called"] == {"lookup": 2} and summary["fields"][TOOLS]["recall"] == 0.5
    from chainform.evals._html import html
    from chainform.evals._table import tool_lines

    assert tool_lines(cell) == [
        "wrongly called: lookup 2",
        'missed: add 1, lookup 1, lookup({"city": "Paris"}) 1',
    ]
    assert "wrongly called: lookup 2" in html(report) and "&quot;Paris&quot;" in html(report)


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ({"order": ["add"]}, "give a list of tools, or one of"),
        ([3], "3 is not a tool"),
        ({"counts": {"add": -1}}, "the count of 'add' is -1"),
        ([{"name": "add", "arguments": [1]}], "the arguments of 'add' are not an object"),
    ],
)
def test_bad_expected_tools_are_refused_before_any_call(tools, message):
    scripted = model()
    rows = [{"text": "row 0", "expected": {"answer": 0}, "expected_tools": tools}]
    with pytest.raises(
        EvalInputError, match=re.escape(f"row 0: the expected tools ('expected_tools'): {message}")
    ):
        cf.evaluate(rows, schema="answer int", prompt="{text}", models=[scripted], tools=[add])
    assert scripted.client.requests == []


def test_expected_tools_need_the_log():
    scripted = model()
    with pytest.raises(EvalInputError, match="scored from the logged tool calls"):
        cf.evaluate(ROWS, schema="answer int", prompt="{text}", models=[scripted], tools=[add], log=False)
    assert scripted.client.requests == []


def test_a_wrong_trajectory_shows_its_expected_calls_against_the_mistakes():
    from chainform.evals._report import wrong_fields

    report = cf.evaluate(ROWS, schema="answer int", prompt="{text}", models=[model()], tools=[add, lookup],
                         strategies=["native"], concurrency=2)  # fmt: skip
    row = next(r for r in report.cells[0].rows if r.key == "3")
    assert wrong_fields(row) == [
        (TOOLS, "wrong", {"set": [{"name": "lookup", "arguments": {"city": "Paris"}}]},
         {"wrongly called": ["lookup"], "missed": ['lookup({"city": "Paris"})']}),
    ]  # fmt: skip
