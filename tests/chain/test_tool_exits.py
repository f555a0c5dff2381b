"""A tool that raises SystemExit or KeyboardInterrupt (issue 28 item 3). Raised as they are, both
escaped the task running the call and stopped the event loop under the chain: the caller waited
forever. SystemExit from a tool is a tool error the model reads; KeyboardInterrupt stops the chain
with a typed ChainInterruptedError, its calls logged, and the loop goes on serving other chains."""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable
from typing import Any

import pytest

import chainform as cf
from chainform.store import Store, new_id
from chainform.testing import ScriptedClient, tool_call

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)

WAIT_S = 20  # a hang is a failure, not a stuck test run


def exits(order: str) -> str:
    """Look an order up."""
    sys.exit(f"usage: lookup ORDER (got {order})")  # what argparse and click do on bad input


def interrupts(order: str) -> str:
    """Look an order up."""
    raise KeyboardInterrupt


async def exits_async(order: str) -> str:
    """Look an order up."""
    raise SystemExit(2)


async def interrupts_async(order: str) -> str:
    """Look an order up."""
    raise KeyboardInterrupt


def within(fn: Callable[[], Any]) -> Any:
    """fn() on a thread, failing the test if it does not return within WAIT_S (the old hang)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # handed to the test thread
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(WAIT_S)
    assert not thread.is_alive(), "the chain hung"
    if "error" in box:
        raise box["error"]
    return box["value"]


def script(tool: Callable[..., Any]) -> ScriptedClient:
    return ScriptedClient([tool_call(tool.__name__, order="A1"), "answered"])


@pytest.mark.parametrize("tool", [exits, exits_async], ids=["in-a-thread", "async"])
@pytest.mark.parametrize("api", ["sync", "async"])
def test_system_exit_from_a_tool_is_a_tool_error_the_model_reads(tool: Any, api: str) -> None:
    client = script(tool)
    if api == "sync":
        text = within(lambda: cf.Model(client).chain("x", tools=[tool], log=False).text())
    else:

        async def run() -> str:
            return await cf.AsyncModel(client).chain("x", tools=[tool], log=False).text()

        text = within(lambda: asyncio.run(run()))
    assert text == "answered"
    [result] = client.requests[1][0][-1].function_results
    assert "SystemExit" in result.error and "did not finish" in result.error


@pytest.mark.parametrize("tool", [interrupts, interrupts_async], ids=["in-a-thread", "async"])
@pytest.mark.parametrize("api", ["sync", "async"])
def test_keyboard_interrupt_from_a_tool_stops_the_chain_typed_and_logged(tool: Any, api: str) -> None:
    client, cid = script(tool), new_id()
    if api == "sync":
        chain = cf.Model(client).chain("x", tools=[tool], conversation_id=cid)
        with pytest.raises(cf.ChainInterruptedError, match=tool.__name__) as info:
            within(chain.text)
    else:

        async def run() -> str:
            return await cf.AsyncModel(client).chain("x", tools=[tool], conversation_id=cid).text()

        with pytest.raises(cf.ChainInterruptedError) as info:
            within(lambda: asyncio.run(run()))
    assert len(info.value.responses) == 1 and len(client.requests) == 1  # no call after the interrupt
    with Store() as store:
        assert len(store.recent(n=None, conversation_id=cid)) == 1  # the call made is logged
    # the background loop survived: the next chain runs
    assert (
        within(lambda: cf.Model(ScriptedClient(["still here"])).prompt("x", log=False).text()) == "still here"
    )


def test_keyboard_interrupt_in_a_subagent_stops_the_parent_chain() -> None:
    inner = cf.Model(script(interrupts))
    agent = cf.Agent(inner, name="clerk", description="Looks orders up.", tools=[interrupts])
    outer = ScriptedClient([tool_call("clerk", task="A1"), "never reached"])
    chain = cf.Model(outer).chain("x", tools=[agent], log=False)
    with pytest.raises(cf.ChainInterruptedError):
        within(chain.text)
    assert len(outer.requests) == 1
