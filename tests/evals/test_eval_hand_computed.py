"""A 30-row eval with repeats, tool trajectories and a rubric, whose every figure is counted here
by hand from the rules the scripted models follow (plain loops over the rows and runs; nothing of
chainform's scoring is called to get the expected figures)."""

from __future__ import annotations

import json
import re
import threading

import pytest

import chainform as cf
from chainform.evals._tools import TOOLS
from chainform.models import Model
from chainform.testing import ScriptedClient
from chainform.testing._scripted import tool_call

N, RUNS = 30, 2
SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "qty": {"type": "integer"}, "note": {"type": "string"}},
    "required": ["name", "qty", "note"],
}


def lookup(n: int) -> str:
    "Look an item up."
    return f"item {n}"


def expected_tools(n: int) -> list[str] | None:
    if n % 2 == 0:
        return ["lookup"]  # even rows should look their item up
    if n % 7 == 0:
        return []  # rows 7 and 21 should call nothing
    return None  # the other odd rows: trajectory not scored


def calls_lookup(n: int) -> bool:
    return (n % 2 == 0 and n % 6 != 4) or n % 7 == 0  # 4, 10, 16, 22 forget; 7, 21 (and 28) call it anyway


# the rules the answering model follows, run k (0 or 1) of row n
def name_right(n: int) -> bool:
    return n % 5 != 0


def qty_right(n: int, k: int) -> bool:
    return not (n % 3 == 0 and k == 1)  # rows 0, 3, ... 27 miscount on their second run


def note_passes(n: int) -> bool:
    return n % 4 != 0  # the judge passes a note naming its number; rows 0, 4, ... 28 write none


def tools_right(n: int) -> bool:
    wanted = expected_tools(n)
    return wanted is None or (("lookup" in wanted) == calls_lookup(n))


ROWS = [
    {"text": f"row {n}", "expected": {"name": f"item {n}", "qty": n}}
    | ({"expected_tools": expected_tools(n)} if expected_tools(n) is not None else {})
    for n in range(N)
]


def answering() -> Model:
    finals: dict[int, int] = {}
    lock = threading.Lock()

    def reply(messages, options):
        n = int(re.search(r"row (\d+)", next(m for m in messages if m.role == "user").text).group(1))
        if calls_lookup(n) and not any(m.role == "tool" for m in messages):
            return tool_call("lookup", n=n)
        with lock:
            k = finals.get(n, 0)
            finals[n] = k + 1
        return json.dumps(
            {
                "name": f"item {n}" if name_right(n) else "something",
                "qty": n if qty_right(n, k) else n + 1,
                "note": f"about item {n}" if note_passes(n) else "about it",
            }
        )

    return Model(ScriptedClient([reply] * 200), name="answers")


def judging() -> Model:
    def verdict(messages, options):
        answered = messages[-1].text.split("<<<")[1].split(">>>")[0]
        passed = bool(re.search(r"\d", answered))
        return json.dumps({"pass": passed, "reason": "names its number" if passed else "no number"})

    return Model(ScriptedClient([verdict] * 100), name="judge")


def test_thirty_rows_with_repeats_trajectories_and_a_rubric_give_the_hand_counted_figures():
    report = cf.evaluate(
        ROWS, schema=SCHEMA, prompt="{text}", models=[answering()], strategies=["native"], repeat=RUNS,
        tools=[lookup], judge=judging(), judge_fields=[], rubric={"note": "names the item's number"},
        concurrency=4,
    )  # fmt: skip
    cell = report.cells[0]
    runs = [(n, k) for n in range(N) for k in range(RUNS)]

    # by hand: each field's right runs out of all runs; the trajectory out of the runs of rows that expect one
    name = sum(name_right(n) for n, _ in runs)
    qty = sum(qty_right(n, k) for n, k in runs)
    note = sum(note_passes(n) for n, _ in runs)
    scored = [(n, k) for n, k in runs if expected_tools(n) is not None]
    tools = sum(tools_right(n) for n, _ in scored)
    assert (name, qty, note, len(scored), tools) == (48, 50, 44, 34, 22)  # the counts, spelled out
    tp = sum(1 for n, _ in scored if "lookup" in expected_tools(n) and calls_lookup(n))
    fp = sum(1 for n, _ in scored if "lookup" not in expected_tools(n) and calls_lookup(n))
    fn = sum(1 for n, _ in scored if "lookup" in expected_tools(n) and not calls_lookup(n))
    assert (tp, fp, fn) == (22, 4, 8)
    figures = cell.fields()
    assert {p: (f.right, f.total) for p, f in figures.items()} == {
        "name": (name, 60), "qty": (qty, 60), "note": (note, 60), TOOLS: (tools, 34),
    }  # fmt: skip
    assert (figures[TOOLS].tp, figures[TOOLS].fp, figures[TOOLS].fn) == (tp, fp, fn)
    assert figures[TOOLS].precision == pytest.approx(tp / (tp + fp))  # 22 / 26
    assert figures[TOOLS].recall == pytest.approx(tp / (tp + fn))  # 22 / 30
    assert cell.field_accuracy == pytest.approx((48 / 60 + 50 / 60 + 44 / 60 + 22 / 34) / 4)

    def right(n: int, k: int) -> bool:
        return name_right(n) and qty_right(n, k) and note_passes(n) and tools_right(n)

    rows_right = sum(right(n, k) for n, k in runs)
    per_row = [sum(right(n, k) for k in range(RUNS)) for n in range(N)]
    assert (cell.n, cell.rows_right) == (60, rows_right)
    assert cell.pass_at(1) == pytest.approx(sum(c / RUNS for c in per_row) / N)
    assert cell.pass_at(2) == pytest.approx(sum(c > 0 for c in per_row) / N)
    assert cell.pass_all(2) == pytest.approx(sum(c == RUNS for c in per_row) / N)
    # agreement: a row's two runs give a field one value; only qty differs, in rows 0, 3, ... 27
    assert cell.agreement() == pytest.approx({"name": 1.0, "qty": 20 / 30, "note": 1.0})
    # calls: a row that calls lookup makes two chain calls a run, the others one; one judge call a run
    chain_calls = sum(2 if calls_lookup(n) else 1 for n, _ in runs)
    assert cell.calls_per_row() == pytest.approx({"chain": chain_calls / 60, "judge": 1.0})
    mistakes = cell.tool_mistakes()
    assert mistakes == {"wrongly_called": {"lookup": 4}, "missed": {"lookup": 8}}
    reasons = {r.rubric["note"] for r in cell.rows}
    assert reasons == {"pass: names its number", "fail: no number"}
    summary = report.to_dict(rows=False)["cells"][0]
    assert summary["rows_right"] == rows_right and summary["pass_all_k"]["2"] == pytest.approx(
        cell.pass_all(2)
    )
