"""Where a sync tool runs (tools/_pace.py): a worker thread first; inline on chainform's loop once
it has shown itself fast, and only while its chain runs there alone; back to threads for good
after a slow run or a call of the sync API, which inline gets a clear error instead of a hang."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from typing import Any

import pytest

import chainform as cf
from chainform.testing import ScriptedClient, tool_call
from chainform.tools import _pace

LOOP = "chainform-loop"
where: list[str] = []
marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="unset")


def _run(tool: Any, times: int, **arguments: Any) -> list[str]:
    """Run `tool` in `times` sync chains; the thread names it ran on, and its results."""
    where.clear()
    results = []
    for _ in range(times):
        model = cf.Model(ScriptedClient([tool_call(tool.__name__, **arguments), "done"]))
        chain = model.chain("go", tools=[tool], log=False)
        assert chain.text() == "done"
        results.append(chain.responses[0].tool_results[0])
    return results


def quick(n: int) -> int:
    "Fast."
    where.append(threading.current_thread().name)
    marker.set("set by the tool")
    return n + 1


def runs_its_own_loop(n: int) -> int:
    "A sync wrapper around async code."
    where.append(threading.current_thread().name)

    async def double() -> int:
        await asyncio.sleep(0)
        return 2 * n

    return asyncio.run(double())


def test_a_tool_inline_can_run_its_own_event_loop() -> None:
    results = _run(runs_its_own_loop, 3, n=4)
    assert [r.result for r in results] == [8, 8, 8] and where[1:] == [LOOP, LOOP]


def slow(n: int) -> int:
    "Slow."
    where.append(threading.current_thread().name)
    time.sleep(2 * _pace.INLINE_LIMIT)
    return n


def test_a_fast_tool_runs_in_a_thread_once_then_inline() -> None:
    results = _run(quick, 3, n=1)
    assert [r.result for r in results] == [2, 2, 2]
    assert where[0] != LOOP and where[1:] == [LOOP, LOOP]
    assert marker.get() == "unset"  # the tool ran in a copy of the chain's context


def test_a_slow_tool_stays_in_worker_threads() -> None:
    _run(slow, 3, n=1)
    assert LOOP not in where


def nests(n: int) -> str:
    "Asks another model."
    where.append(threading.current_thread().name)
    return cf.Model(ScriptedClient([f"inner {n}"])).chain("inner?", log=False).text()


def test_a_tool_that_calls_the_sync_api_stays_in_worker_threads() -> None:
    results = _run(nests, 3, n=7)
    assert [r.result for r in results] == ["inner 7"] * 3
    assert LOOP not in where


calls = {"n": 0}


def sometimes_nests(n: int) -> str:
    "Fast until its third run, which asks another model."
    calls["n"] += 1
    where.append(threading.current_thread().name)
    if calls["n"] < 3:
        return "quick"
    return cf.Model(ScriptedClient(["inner"])).chain("inner?", log=False).text()


def test_the_sync_api_called_inline_is_an_error_not_a_hang_and_the_tool_moves_to_threads() -> None:
    calls["n"] = 0
    results = _run(sometimes_nests, 4, n=1)
    assert where == [where[0], LOOP, LOOP, where[3]] and where[0] != LOOP != where[3]
    assert [r.result for r in results[:2]] == ["quick", "quick"] and results[3].result == "inner"
    assert "chainform's own event loop" in (results[2].error or "")


async def test_a_users_loop_always_runs_sync_tools_in_threads() -> None:
    model = cf.AsyncModel(ScriptedClient([tool_call("quick", n=1), "done"] * 3))
    where.clear()
    for _ in range(3):
        assert await model.chain("go", tools=[quick], log=False).text() == "done"
    assert LOOP not in where and threading.current_thread().name not in where


holding, release = threading.Event(), threading.Event()


async def hold() -> str:
    "Holds its chain open until released."
    holding.set()
    while not release.is_set():
        await asyncio.sleep(0.005)
    return "held"


def test_while_another_sync_chain_runs_a_fast_tool_runs_in_a_thread() -> None:
    _run(quick, 2, n=1)  # known fast: its next run alone would be inline
    holding.clear(), release.clear()
    other = cf.Model(ScriptedClient([tool_call("hold"), "released"])).chain("hold", tools=[hold], log=False)
    assert holding.wait(timeout=10)
    try:
        _run(quick, 1, n=1)
    finally:
        release.set()
    assert other.text() == "released"
    assert where != [LOOP] and len(where) == 1


@pytest.fixture(autouse=True)
def _fresh_pace() -> None:
    """Each test's tools start unmeasured (chainform caches a function's Tool)."""
    from chainform.chain._tools import _tool_for

    _tool_for.cache_clear()
