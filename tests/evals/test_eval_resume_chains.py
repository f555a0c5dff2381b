"""`evaluate(..., resume=True)` goes on with the chain of a row stopped halfway (a tool's
KeyboardInterrupt) from the log: its logged calls are not asked again, its logged tool results not
run again, and the report is an uninterrupted eval's."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

import chainform as cf
from chainform.evals import EvalInterruptedError
from chainform.models import Model
from chainform.testing import ScriptedClient
from chainform.testing._scripted import tool_call

ROWS = [{"text": f"row {n}", "expected": {"total": n * 200 + 3}} for n in (1, 2)]


class Steps:
    """A 3-call tool chain per row (two `step` calls, then the sum), counting the model's calls and
    the tool's runs; the tool raises KeyboardInterrupt once, at `stop` (row, step)."""

    def __init__(self, stop: tuple[int, int] | None) -> None:
        self.stop = stop
        self.asked: list[tuple[int, int]] = []
        self.ran: list[tuple[int, int]] = []

    def reply(self, messages: Any, options: Any) -> Any:
        row = int(re.search(r"row (\d+)", next(m for m in messages if m.role == "user").text).group(1))
        done = [m for m in messages if m.role == "tool"]
        self.asked.append((row, len(done)))
        if len(done) < 2:
            return tool_call("step", row=row, n=len(done) + 1)
        return json.dumps({"total": sum(int(c.result) for m in done for c in m.contents)})

    def step(self, row: int, n: int) -> int:
        "Do step n of a row."
        self.ran.append((row, n))
        if (row, n) == self.stop:
            self.stop = None
            raise KeyboardInterrupt
        return row * 100 + n

    def evaluate(self, **extra: Any) -> Any:
        model = Model(ScriptedClient([self.reply] * 20), name="scripted")
        tool = cf.Tool.from_function(self.step, name="step")
        return cf.evaluate(ROWS, schema="total int", prompt="{text}", models=[model], tools=[tool],
                           strategies=["native"], concurrency=1, **extra)  # fmt: skip


def test_a_row_stopped_halfway_goes_on_from_its_log_on_resume() -> None:
    whole = Steps(None).evaluate()
    assert whole.cells[0].rows_right == 2

    steps = Steps(stop=(2, 2))  # row 2 stops in its second tool: two calls and one tool result logged
    with pytest.raises(EvalInterruptedError):
        steps.evaluate()
    assert steps.asked == [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1)]
    assert steps.ran == [(1, 1), (1, 2), (2, 1), (2, 2)]

    steps.asked.clear()
    steps.ran.clear()
    resumed = steps.evaluate(resume=True)
    assert steps.asked == [(2, 2)]  # row 1 was done; row 2's two logged calls are not asked again
    assert steps.ran == [(2, 2)]  # only the tool whose result was not logged
    assert resumed.cells[0].rows_right == 2
    assert [r.actual for r in resumed.cells[0].rows] == [r.actual for r in whole.cells[0].rows]
