"""kill -9 at random points of 4-call chains: every call that finished is in the log, which stays intact.

One helper interpreter imports chainform once and forks a child per run (cheap to start); the child
runs a sync chain of four calls on a ScriptedClient and writes `asked N` when call N is
sent (calls 0..N-1 finished: they are committed before the next is sent) and `returned` once the
chain returned. The helper kills the child with SIGKILL after a random delay
(up to a bit more than a whole chain takes, as a first run measured). The assertion reads
only those lines and the log, never the clock: wherever the kill landed, what was reported as
finished must be in `responses`, and `PRAGMA integrity_check` must say ok.
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

RUNS = 50
CALLS = 4

FORKER = r"""
import asyncio, os, random, signal, sys, time
import chainform as cf
from chainform.testing import ScriptedClient, tool_call

log = sys.argv[1]

def lookup(city: str) -> str:
    "Look a city up."
    time.sleep(random.uniform(0, 0.004))
    return city.upper()

def asked(n, reply):
    def answer(messages, options):
        os.write(1, f"asked {n}\n".encode())  # one write: a kill cannot cut the line
        time.sleep(random.uniform(0, 0.004))  # the server thinks
        return reply
    return answer

def script(say=lambda n, reply: reply):
    return [say(n, tool_call("lookup", city=f"city {n}")) for n in range(3)] + [say(3, "done")]

def child(run):
    random.seed(run)
    model = cf.Model(ScriptedClient(script(asked)), log_path=log)
    model.chain("Go", tools=[lookup], conversation_id=f"run {run}").text()
    os.write(1, b"returned\n")
    os._exit(0)

async def warm_up():
    # one chain on a loop of its own, closed after: what a chain loads is loaded once, here, and
    # no thread of it is left to fork (each child starts the sync API's loop afresh)
    model = cf.AsyncModel(ScriptedClient(script()), log_path=log + ".warm")
    await model.chain("Go", tools=[lookup]).text()
    await model.aclose()

asyncio.run(warm_up())

for line in sys.stdin:
    run, delay = line.split()
    pid = os.fork()
    if pid == 0:
        child(int(run))
    deadline = time.monotonic() + float(delay)
    while os.waitpid(pid, os.WNOHANG) == (0, 0):  # still running
        if time.monotonic() >= deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            break
        time.sleep(0.0005)
    print("reaped", flush=True)
"""


def test_kill_9_keeps_every_finished_call_and_an_intact_log(tmp_path: Path) -> None:
    log = tmp_path / "logs.db"
    rng = random.Random(36)
    env = {**os.environ, "CHAINFORM_HOME": str(tmp_path / "home")}
    helper = subprocess.Popen(
        [sys.executable, "-c", FORKER, str(log)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert helper.stdin is not None and helper.stdout is not None
    finished: dict[int, int] = {}  # run -> how many of its calls were reported finished

    def run_killed_after(run: int, delay: float) -> None:
        assert helper.stdin is not None and helper.stdout is not None
        helper.stdin.write(f"{run} {delay:.4f}\n")
        helper.stdin.flush()
        done = 0
        while (line := helper.stdout.readline().strip()) != "reaped":
            assert line, "the helper ended early"
            done = CALLS if line == "returned" else max(done, int(line.split()[1]))
        finished[run] = done

    try:
        run_killed_after(RUNS, 60)  # not killed: the log is made, then how long a whole chain takes here
        started = time.monotonic()
        run_killed_after(RUNS + 1, 60)
        whole = time.monotonic() - started
        assert finished[RUNS] == finished[RUNS + 1] == CALLS
        for run in range(RUNS):
            run_killed_after(run, rng.uniform(0, whole * 1.2))
    finally:
        helper.stdin.close()
        helper.wait(30)
    with contextlib.closing(sqlite3.connect(log)) as db:  # no chainform code reads it
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        logged: dict[int, set[int]] = {}
        for conversation, seq in db.execute("SELECT conversation_id, seq FROM responses"):
            logged.setdefault(int(conversation.split()[1]), set()).add(seq)
    for run, done in finished.items():
        assert set(range(done)) <= logged.get(run, set()), (run, done, logged.get(run))
    # the kills landed at different points (not asserted on: where depends on the machine's speed)
    print({n: sum(1 for d in finished.values() if d == n) for n in range(CALLS + 1)})
