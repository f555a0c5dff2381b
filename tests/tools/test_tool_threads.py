"""Where a sync tool runs: always in a worker thread (`asyncio.to_thread`, in a copy of the chain's
context), so the calls of one turn run side by side, and a tool may run its own event loop or call
chainform's sync API. Proved by what the tools see, never by timing."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any

import pytest

import chainform as cf
from chainform.errors import ChainformError
from chainform.testing import ScriptedClient, tool_call

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

LOOP = "chainform-loop"
marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="unset")
meeting = threading.Barrier(2)
where: list[str] = []


def _results(script: list[Any], tools: list[Any]) -> list[Any]:
    """Run a sync chain on `script`; the tool results of its first response."""
    chain = cf.Model(ScriptedClient(script)).chain("go", tools=tools, log=False)
    assert chain.text() == "done"
    return list(chain.responses[0].tool_results)


def meet(block: bool) -> str:
    "Waits, when asked, until the other call of its turn is running too."
    where.append(threading.current_thread().name)
    marker.set("set by the tool")
    if block:
        meeting.wait(timeout=10)  # both calls must be inside at once, or this breaks
    return threading.current_thread().name


def test_two_blocking_sync_tools_of_one_turn_run_at_the_same_time() -> None:
    # A turn of quick runs first: a tool that was fast before still gets a thread when it blocks.
    quick = [tool_call("meet", block=False), tool_call("meet", block=False)]
    assert [r.error for r in _results([quick, "done"], [meet])] == [None, None]
    meeting.reset()
    where.clear()
    both = [tool_call("meet", block=True), tool_call("meet", block=True)]
    results = _results([both, "done"], [meet])
    assert [r.error for r in results] == [None, None]
    assert len(set(where)) == 2 and LOOP not in where and threading.current_thread().name not in where
    assert marker.get() == "unset"  # each ran in a copy of the chain's context


def runs_its_own_loop(n: int) -> int:
    "A sync wrapper around async code."

    async def double() -> int:
        await asyncio.sleep(0)
        return 2 * n

    return asyncio.run(double())


def test_a_sync_tool_can_run_its_own_event_loop() -> None:
    script: list[Any] = [tool_call("runs_its_own_loop", n=4), "done"]
    for _ in range(3):  # and again once it has shown itself fast
        assert [r.result for r in _results(list(script), [runs_its_own_loop])] == [8]


def nests(n: int) -> str:
    "Asks another model through chainform's sync API."
    return cf.Model(ScriptedClient([f"inner {n}"])).chain("inner?", log=False).text()


def test_a_sync_tool_can_call_chainforms_sync_api() -> None:
    for _ in range(3):
        results = _results([tool_call("nests", n=7), "done"], [nests])
        assert [(r.result, r.error) for r in results] == [("inner 7", None)]


async def nests_async(n: int) -> str:
    "An async tool runs on chainform's loop: the sync API there would wait for itself."
    return cf.Model(ScriptedClient([f"inner {n}"])).chain("inner?", log=False).text()


def test_the_sync_api_from_chainforms_own_loop_is_an_error_not_a_hang() -> None:
    results = _results([tool_call("nests_async", n=1), "done"], [nests_async])
    assert results[0].result is None and "chainform's own event loop" in (results[0].error or "")


def test_the_sync_api_on_chainforms_loop_raises_a_typed_error() -> None:
    from chainform import _sync

    async def inner() -> None:
        _sync.run(asyncio.sleep(0))

    with pytest.raises(ChainformError, match="own event loop"):
        _sync.run(inner())


async def test_a_users_loop_runs_sync_tools_in_threads() -> None:
    model = cf.AsyncModel(ScriptedClient([tool_call("meet", block=False), "done"]))
    where.clear()
    assert await model.chain("go", tools=[meet], log=False).text() == "done"
    assert len(where) == 1 and where[0] != threading.current_thread().name
