"""A tool's result is untrusted data (a web API's JSON, a document's tree): one nested deeper than
the model's JSON may be goes back to the model as the tool's error, never a RecursionError that
ends the chain; a `cf.Final` of such a value does not end it either."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

import chainform as cf
from chainform._json import MAX_DEPTH, too_deep
from chainform.testing import ScriptedClient, tool_call

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


class Out(BaseModel):
    name: str


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"a": [value]}
    return value


@pytest.mark.parametrize("final", [False, True], ids=["plain", "final"])
def test_a_deeply_nested_tool_result_is_the_tool_s_error(final: bool) -> None:
    def look() -> Any:
        """Look it up."""
        value = _nested(2_000)  # was: RecursionError in the key scrubber, the chain ended
        return cf.Final(value) if final else value

    client = ScriptedClient([tool_call("look"), '{"name": "n"}'])
    result = cf.Model(client, name="scripted").chain("go", tools=[look], schema=Out)
    assert result.value == Out(name="n") and len(client.requests) == 2
    sent = client.requests[-1][0][-1].contents[0]
    assert sent.result is None and f"nested more than {MAX_DEPTH} levels deep" in sent.error


def test_too_deep_measures_without_recursion_and_ends_on_a_cycle() -> None:
    assert not too_deep(_nested(MAX_DEPTH // 2 - 1)) and too_deep(_nested(MAX_DEPTH // 2 + 1))
    assert too_deep(_nested(100_000))
    cycle: list[Any] = []
    cycle.append(cycle)
    assert too_deep(cycle) and not too_deep("text") and not too_deep((1, (2, 3)))
