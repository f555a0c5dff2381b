"""ChainResponse.cancel(): a chain stopped mid-run (what Ctrl-C does to a turn of `chainform chat`)
ends with ChainInterruptedError, and every call it finished is in the log when cancel returns."""

from __future__ import annotations

import threading

import pytest

from chainform.errors import ChainInterruptedError
from chainform.models import Model
from chainform.store import Store
from chainform.testing import ScriptedClient, tool_call

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def test_cancel_stops_a_chain_in_its_tool_and_keeps_what_it_finished(tmp_path) -> None:
    started, release = threading.Event(), threading.Event()

    def slow(city: str) -> str:
        """Weather, slowly."""
        started.set()
        release.wait(60)
        return "sunny"

    store = Store(tmp_path / "log.db")
    model = Model(ScriptedClient([tool_call("slow", city="Paris"), "never sent"]), name="scripted")
    model.log_to(store)
    try:
        response = model.chain("Weather?", tools=[slow])
        assert started.wait(60), "the tool never started"
        response.cancel()  # returns once the chain has stopped and logged
        calls = store.recent(None)
        assert [c.tool_calls[0].name for c in calls] == ["slow"]  # the finished call, logged
        with pytest.raises(ChainInterruptedError, match="cancelled"):
            response.text()
        response.cancel()  # a chain that has ended: nothing to do
    finally:
        release.set()
    assert model.client.remaining == 1  # type: ignore[attr-defined]  # the answer was never asked for


def test_cancel_after_the_end_changes_nothing() -> None:
    model = Model(ScriptedClient(["Done."]), name="scripted")
    response = model.chain("Hi", log=False)
    assert response.text() == "Done."
    response.cancel()
    assert response.text() == "Done."
