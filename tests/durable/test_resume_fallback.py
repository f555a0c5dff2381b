"""A chain that fell back to a second model, stopped mid-tool, resumes on that model: the first
model's failure replays from the log (the route goes the same way), nothing logged is sent again."""

from __future__ import annotations

from pathlib import Path

import chainform as cf
from chainform.chain._fallback import FallbackPlan
from chainform.errors import ProviderError
from chainform.store import Store
from chainform.testing import ScriptedClient, tool_call


def test_resume_goes_on_on_the_model_that_answered(home: Path) -> None:
    ran: list[int] = []
    stop_at = [2]

    def step(n: int) -> int:
        "Do step n."
        ran.append(n)
        if n in stop_at:
            raise KeyboardInterrupt  # the process stops here: the chain is marked interrupted
        return n * 10

    def model(first: list[object], second: list[object]) -> tuple[cf.Model, ScriptedClient, ScriptedClient]:
        a, b = ScriptedClient(first), ScriptedClient(second)
        plan = FallbackPlan.build("first", [cf.Model(b, name="second")], None, None)
        return cf.Model(a, name="first", fallback=plan), a, b

    down = ProviderError("overloaded", status=503, kind="server")
    killed, _, _ = model([tool_call("step", n=1), down], [tool_call("step", n=2)])
    chain = killed.chain("Do the steps", tools=[step], schema="total int")
    assert chain.status == "interrupted" and ran == [1, 2]
    [row] = Store().chains(chain.chain_id)
    assert row.status == "interrupted"
    calls = sorted(Store().recent(None, chain_id=chain.chain_id), key=lambda r: r.seq)
    assert [(c.model, c.failure is not None) for c in calls] == [
        ("first", False),
        ("first", True),
        ("second", False),
    ]

    stop_at.clear()
    again, a2, b2 = model([], ['{"total": 30}'])
    resumed = cf.resume(chain.chain_id, tools=[step], model=again)
    assert resumed.value == {"total": 30}
    assert a2.requests == [] and len(b2.requests) == 1  # the first model is not asked again
    assert ran == [1, 2, 2]  # step 1's result was logged; step 2 was running at the stop
    assert [c.model for c in resumed.responses] == ["first", "first", "second", "second"]
    assert Store().chains(chain.chain_id)[0].status == "done"
