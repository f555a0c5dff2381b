"""`kill -9` of a 3-call tool chain at each point (a request in flight, a tool running), then
`cf.resume`: no logged call is sent again, no logged tool result is run again, and the value is
the uninterrupted run's. The kill points are exact: a request is held at the emulator, a tool
blocks on a FIFO; nothing waits on a clock."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import chainform as cf
from chainform.store import Store
from chainform.testing import tool_call
from chainform.testing.emulator import Emulator, Fault, RecordedRequest
from kill_helpers import killed_after, wait_readable

MODEL = "openai/gpt-4.1-mini"
FAILING, FALLBACK = "openai/gpt-4.1-nano", "openai/gpt-4.1-mini"

CHILD = """
import sys
import chainform as cf

runs, ready, block, block_at, url, name, fallback = sys.argv[1:8]

def step(n: int) -> int:
    "Do step n."
    with open(runs, "a") as f:
        f.write(f"{n}\\n")
    if n == int(block_at):
        with open(ready, "w") as f:
            f.write("in the tool\\n")
        open(block).read()  # no writer ever comes: blocks until killed
    return n * 10

then = [cf.get_model(fallback, base_url=url, key="sk-test", max_retries=0)] if fallback else None
model = cf.get_model(name, base_url=url, key="sk-test", max_retries=0, fallback=then)
chain = model.chain("Do the steps", tools=[step], schema="total int", strategy="native")
print(chain.chain_id, flush=True)
print(chain.value)
"""


def step_of(request: RecordedRequest) -> int:
    return sum(1 for m in request.json.get("messages", []) if m.get("role") == "tool")


def answer(request: RecordedRequest) -> Any:
    """Two tool calls, one a turn, then the sum of their results; the model FAILING fails (503)
    from the second step on, so a chain that has a fallback goes on on it."""
    step = step_of(request)
    if request.json.get("model") == FAILING.split("/")[1] and step >= 1:
        return Fault(503)
    if step < 2:
        return tool_call("step", n=step + 1)
    results = [int(m["content"]) for m in request.json["messages"] if m.get("role") == "tool"]
    return json.dumps({"total": sum(results)})


class Gate:
    """Holds the request of one step until released; `held` is set once it arrived."""

    def __init__(self, at: int | None) -> None:
        self.at, self.held, self.released = at, threading.Event(), threading.Event()

    def __call__(self, request: RecordedRequest) -> Any:
        if step_of(request) == self.at and not self.released.is_set():
            self.held.set()
            self.released.wait(120)
        return answer(request)


def steps(emulator: Emulator) -> list[int]:
    return sorted(step_of(r) for r in emulator.requests if r.json.get("messages"))


def model_of(url: str, fallback: bool) -> cf.Model:
    """MODEL; with `fallback`, FAILING falling back to FALLBACK (the chain's last two steps on it)."""
    if not fallback:
        return cf.get_model(MODEL, base_url=url, key="sk-test", max_retries=0)
    then = cf.get_model(FALLBACK, base_url=url, key="sk-test", max_retries=0)
    return cf.get_model(FAILING, base_url=url, key="sk-test", max_retries=0, fallback=[then])


@pytest.mark.parametrize(
    ("where", "at", "fallback"),
    [
        ("request", 0, False),
        ("tool", 1, False),
        ("request", 1, False),
        ("tool", 2, False),
        ("request", 2, False),
        ("tool", 2, True),  # on the fallback model, after the first failed
        ("request", 2, True),
    ],
)
def test_kill_9_then_resume_repeats_nothing_logged(
    home: Path, tmp_path: Path, emulator: Emulator, where: str, at: int, fallback: bool
) -> None:
    url = emulator.base_url + "/v1"
    # the uninterrupted run, for the value
    emulator.default = answer
    ran_whole: list[int] = []

    def step(n: int) -> int:
        "Do step n."
        ran_whole.append(n)
        return n * 10

    model = model_of(url, fallback)
    expected = model.chain("Do the steps", tools=[step], schema="total int", strategy="native").value
    assert expected == {"total": 30} and ran_whole == [1, 2]
    emulator.requests.clear()

    runs, ready, block = tmp_path / "runs", tmp_path / "ready", tmp_path / "block"
    os.mkfifo(ready)
    os.mkfifo(block)
    gate = Gate(at if where == "request" else None)
    emulator.default = gate
    block_at = str(at) if where == "tool" else "-1"
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(runs), str(ready), str(block), block_at, url]
        + ([FAILING, FALLBACK] if fallback else [MODEL, ""]),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    with killed_after(proc, gate.released):
        assert proc.stdout is not None
        chain_id = proc.stdout.readline().strip()
        if where == "request":
            assert gate.held.wait(120), "the request never arrived"
        else:
            wait_readable(ready)
    child_runs = [int(n) for n in runs.read_text().split()] if runs.exists() else []
    sent_before = steps(emulator)
    [row] = Store().chains(chain_id)
    assert row.status == "running"  # killed outright: nothing marked it
    listed = {c.id for c in Store().unfinished_chains()}
    assert chain_id in listed

    resumed_runs: list[int] = []

    def step_again(n: int) -> int:
        "Do step n."
        resumed_runs.append(n)
        return n * 10

    tool = cf.Tool.from_function(step_again, name="step")
    resumed = cf.resume(chain_id, tools=[tool], model=model_of(url, fallback))
    assert resumed.value == expected and resumed.status == "done"
    assert Store().chains(chain_id)[0].status == "done"

    # at the emulator: each step's request once, but the one held at the kill (in flight: sent again)
    sent = steps(emulator)
    repeated = [at] if where == "request" else []
    failed = [1] if fallback else []  # FAILING's 503 at step 1: sent once, replayed from the log
    assert sent == sorted([0, 1, 2, *failed, *repeated]), (sent_before, sent)
    # the tools: each ran once, but the one killed while it ran (its result was not logged)
    assert sorted(child_runs + resumed_runs) == sorted([1, 2, *([at] if where == "tool" else [])])
    assert not set(child_runs[: len(child_runs) - (where == "tool")]) & set(resumed_runs)
    calls = sorted(Store().recent(None, chain_id=chain_id), key=lambda r: r.seq)
    assert [c.seq for c in calls] == list(range(3 + len(failed)))  # one row per call: nothing logged twice
    if fallback:  # the resume went on on the fallback model: the failing one was not asked again
        assert [(c.model, c.failure is not None) for c in calls] == [
            (FAILING, False), (FAILING, True), (FALLBACK, False), (FALLBACK, False)
        ]  # fmt: skip
