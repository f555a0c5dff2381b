"""A logged chain leaves no reference cycles behind: its objects are freed as soon as it is done,
not by the garbage collector (a cycle through the logger once kept every chain's calls, messages
and responses alive until a collection, which then cost about 2 % of a fast chain)."""

from __future__ import annotations

import gc

import pytest

import chainform as cf
from chainform.testing import ScriptedClient, tool_call

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def get_weather(city: str) -> str:
    "Weather for a city."
    return f"21.5 in {city}"


def _chains(model: cf.Model, log: bool, n: int) -> None:
    for _ in range(n):
        assert model.chain("Weather?", tools=[get_weather], log=log).text() == "sunny"


_MODELS_OWN = ("chainform.store._store",)


def _a_chains(module: str) -> bool:
    """A chain's object, not a log's (a model dropped by an earlier test may let go of its log while
    these chains run)."""
    return module.startswith("chainform") and not module.startswith(_MODELS_OWN)


def _garbage_after(log: bool) -> list[str]:
    """The chainform objects that only the garbage collector freed after five chains of one model
    (a model's own objects, its log among them, live as long as it does)."""
    model = cf.Model(ScriptedClient([tool_call("get_weather", city="Paris"), "sunny"] * 8))
    _chains(model, log, 3)  # warm: imports, caches, the log's first open
    gc.collect()
    gc.disable()
    try:
        gc.set_debug(gc.DEBUG_SAVEALL)
        _chains(model, log, 5)
        gc.collect()
        return sorted({type(o).__name__ for o in gc.garbage if _a_chains(type(o).__module__)})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def test_a_logged_chain_leaves_no_cycles(home: object) -> None:
    assert _garbage_after(log=True) == []


def test_an_unlogged_chain_leaves_no_cycles() -> None:
    assert _garbage_after(log=False) == []


def test_a_dropped_models_log_is_freed_at_once(home: object) -> None:
    """A model's log is in no reference cycle: dropping the model frees the log (and closes its
    connection) without the garbage collector. The worker thread that committed the last call may
    hold it a moment longer (until it lets go of its finished job): waited for, with the collector
    off, so only a cycle could keep it."""
    import time
    import weakref

    model = cf.Model(ScriptedClient([tool_call("get_weather", city="Paris"), "sunny"]))
    assert model.chain("Weather?", tools=[get_weather]).text() == "sunny"
    log = weakref.ref(model._open_store())
    gc.disable()
    try:
        del model
        deadline = time.monotonic() + 10
        while log() is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert log() is None
    finally:
        gc.enable()
