"""`map --resume` goes on with each unfinished row's chain from the log instead of asking it again.

A `chainform map` over three rows of 3-call tool chains is killed (`kill -9`) with one row's last
request in flight, one row inside its second tool, and one row's first request in flight; the
resume sends no logged call again and runs no logged tool result again (counted at the emulator
and by the tool), and its output rows are those of a run never interrupted. The kill points are
exact: requests are held at the emulator, the tool blocks on a FIFO; nothing waits on a clock."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from map_helpers import MODEL, user_text

import chainform as cf
from chainform.cli import cli
from chainform.store import Store
from chainform.testing.emulator import Emulator, RecordedRequest
from chainform.types import FunctionCallContent
from kill_helpers import killed_after, wait_readable

TOOLS = """
import os

def step(row: int, n: int) -> int:
    "Do step n of a row."
    with open({runs!r}, "a") as f:
        f.write(f"{{row}} {{n}}\\n")
    if (row, n) == (2, 2) and os.path.exists({block!r}):  # the killed run's row 2 stops in here
        with open({ready!r}, "w") as f:
            f.write("in the tool\\n")
        open({block!r}).read()  # no writer ever comes: blocks until killed
    return row * 100 + n
"""

Point = tuple[int, int]  # (row, step): the row a request is for, and how many tool results it carries


def point(request: RecordedRequest) -> Point:
    found = re.search(r"Row (\d+)", user_text(request))
    assert found, user_text(request)
    return int(found.group(1)), sum(1 for m in request.json["messages"] if m.get("role") == "tool")


def answer(request: RecordedRequest) -> Any:
    """Two tool calls, one a turn, then the sum of their results."""
    row, step = point(request)
    if step < 2:  # the call's id is the row's and step's: the same in every run, as its tokens
        arguments = {"row": row, "n": step + 1}
        return FunctionCallContent(f"call_{row}_{step + 1}", "step", arguments, json.dumps(arguments))
    results = [int(m["content"]) for m in request.json["messages"] if m.get("role") == "tool"]
    return json.dumps({"total": sum(results)})


class Holds:
    """Holds the requests at `points` until released; each point's event is set once it arrived."""

    def __init__(self, *points: Point) -> None:
        self.arrived = {p: threading.Event() for p in points}
        self.released = threading.Event()

    def __call__(self, request: RecordedRequest) -> Any:
        at = point(request)
        if at in self.arrived and not self.released.is_set():
            self.arrived[at].set()
            self.released.wait(120)
        return answer(request)


def sent(emulator: Emulator) -> list[Point]:
    return sorted(point(r) for r in emulator.requests if r.json.get("messages"))


def runs_of(path: Path) -> list[Point]:
    text = path.read_text() if path.exists() else ""
    return sorted((int(a), int(b)) for a, b in (line.split() for line in text.splitlines()))


def rows(path: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        meta = row.pop("_map")
        out[meta["key"]] = {**row, "tokens": meta["tokens"], "cost": meta["cost"]}
    return out


def test_kill_9_mid_rows_then_resume_repeats_nothing_logged(
    home: Path, tmp_path: Path, emulator: Emulator
) -> None:
    runs, ready, block = tmp_path / "runs", tmp_path / "ready", tmp_path / "block"
    tools = tmp_path / "tools.py"
    tools.write_text(TOOLS.format(runs=str(runs), ready=str(ready), block=str(block)))
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps({"row": n}) + "\n" for n in (1, 2, 3)))
    url = emulator.base_url + "/v1"

    def argv(out: Path, *extra: str) -> list[str]:
        return [
            "map", str(data), "--output", str(out), "-p", "Row {row}: do the steps", "--functions",
            str(tools), "--schema", "total int", "--strategy", "native", "-m", MODEL, "--base-url", url,
            "--key", "sk-test", "--transport-retries", "0", "--concurrency", "3", *extra,
        ]  # fmt: skip

    # the run never interrupted: its rows, its requests and its tools' runs
    emulator.default = answer
    whole = CliRunner().invoke(cli, argv(tmp_path / "whole.jsonl"))
    assert whole.exit_code == 0, whole.output
    assert sent(emulator) == [(r, s) for r in (1, 2, 3) for s in (0, 1, 2)]
    assert runs_of(runs) == [(r, n) for r in (1, 2, 3) for n in (1, 2)]
    emulator.requests.clear()
    runs.unlink()

    # killed with row 1's last request in flight, row 2 in its second tool, row 3's first request in flight
    os.mkfifo(ready)
    os.mkfifo(block)
    holds = Holds((1, 2), (3, 0))
    emulator.default = holds
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "chainform.cli", *argv(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    with killed_after(proc, holds.released):
        wait_readable(ready)
        for at, arrived in holds.arrived.items():
            assert arrived.wait(120), f"the request of {at} never arrived"
    assert sent(emulator) == [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (3, 0)]
    assert runs_of(runs) == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert not out.exists() or out.read_text() == ""  # no row had finished
    with Store() as store:
        killed = {c.id for c in store.unfinished_chains()}
    emulator.requests.clear()
    runs.unlink()
    block.unlink()

    emulator.default = answer
    resumed = CliRunner().invoke(cli, argv(out, "--resume"))
    assert resumed.exit_code == 0, resumed.output

    # only what the log did not hold: row 1's and row 3's requests in flight at the kill, row 2's
    # last request; row 2's second tool (killed while it ran) and row 3's tools
    assert sent(emulator) == [(1, 2), (2, 2), (3, 0), (3, 1), (3, 2)]
    assert runs_of(runs) == [(2, 2), (3, 1), (3, 2)]
    assert rows(out) == rows(tmp_path / "whole.jsonl")
    with Store() as store:  # each row went on with its killed chain: one logged call per step
        chains = store.named_chains(f"map {run_of(out)} ")
        assert {chain_id for chain_id, _ in chains.values()} == killed
        assert {status for _, status in chains.values()} == {"done"} and not store.unfinished_chains()
        for chain_id, _ in chains.values():
            calls = sorted(store.recent(None, chain_id=chain_id), key=lambda r: r.seq)
            assert [c.seq for c in calls] == [0, 1, 2]


def run_of(out: Path) -> str:
    return str(json.loads(out.read_text().splitlines()[0])["_map"]["run"])


def refund_answer(request: RecordedRequest) -> Any:
    """Call `refund` for the row's order; after its result, the JSON answer."""
    order = int(re.search(r"order (\d+)", user_text(request)).group(1))  # type: ignore[union-attr]
    if request.json["messages"][-1].get("role") == "tool":
        return json.dumps({"refunded": order})
    return FunctionCallContent(f"call_{order}", "refund", {"order": order}, json.dumps({"order": order}))


def test_a_waiting_row_stays_waiting_on_resume_until_its_chain_is_approved(
    home: Path, emulator: Emulator
) -> None:
    refunded: list[int] = []

    def refund(order: int) -> dict[str, int]:
        "Refund an order."
        refunded.append(order)
        return {"refunded": order}

    emulator.default = refund_answer
    model = cf.get_model(MODEL, base_url=emulator.base_url + "/v1", key="sk-test", max_retries=0)
    inputs = [{"n": 1}, {"n": 2}]
    asked = {"prompt": "Refund order {n}", "tools": [refund], "schema": "refunded int", "strategy": "native"}
    asked |= {"requires_approval": ["refund"], "run_id": "refunds", "ordered": True}
    first = list(model.map(inputs, **asked))
    assert [r.status for r in first] == ["waiting", "waiting"] and refunded == []
    assert len(emulator.requests) == 2

    again = list(model.map(inputs, resume=True, **asked))  # replayed from the log: nothing sent
    assert [r.status for r in again] == ["waiting", "waiting"] and refunded == []
    assert len(emulator.requests) == 2
    waiting = again[0].error.exception  # type: ignore[union-attr]
    assert isinstance(waiting, cf.ChainWaitingError) and waiting.chain_id == first[0].error.exception.chain_id  # type: ignore[union-attr]

    approved = cf.resume(
        waiting.chain_id, tools=[refund], approvals={waiting.pending[0].id: True}, model=model
    )
    assert approved.value == {"refunded": 1} and refunded == [1]
    assert len(emulator.requests) == 3

    last = list(model.map(inputs, resume=True, **asked))  # row 1's chain is done: its value, nothing sent
    assert last[0].value == {"refunded": 1} and last[1].status == "waiting"
    assert len(emulator.requests) == 3 and refunded == [1]


def test_resume_looks_again_at_waiting_rows_even_when_it_keeps_the_error_rows(tmp_path: Path) -> None:
    from chainform._map._jsonl import JsonlSink

    out = tmp_path / "out.jsonl"
    lines = [
        {"value": 1, "_map": {"run": "r", "key": "done"}},
        {"error": {"phase": "provider", "type": "ProviderError", "message": "down"}, "_map": {"run": "r", "key": "failed"}},
        {"error": {"phase": "waiting", "type": "ChainWaitingError", "message": "..."}, "_map": {"run": "r", "key": "waits"}},
    ]  # fmt: skip
    out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    sink = JsonlSink(out)
    sink.prepare(resume=True, retry_errors=False)  # --resume --keep-errors
    sink.close()
    assert sink.done == {"done", "failed"} and sink.failed_before == 1
    assert [json.loads(line)["_map"]["key"] for line in out.read_text().splitlines()] == ["done", "failed"]
