"""Faults mid-run against the loopback emulator: retried successes or recorded errors, never a lost row."""

from __future__ import annotations

from map_helpers import MODEL, answer_with_tool, order_number

from chainform.models import get_async_model
from chainform.testing.emulator import DropConnection, Emulator, Fault, Stall
from chainform.testing.emulator._server import RecordedRequest

SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "total": {"type": "number"}},
    "required": ["id", "total"],
}


def lookup(order: int) -> dict:
    "Look an order up by its number."
    return {"order": order, "total": order / 2}


def emulated(emu: Emulator):
    # SDK retries off: the map's own retries and pool pause are what is under test
    return get_async_model(
        MODEL, key="sk-test", base_url=emu.base_url + "/v1", max_retries=0, profile="openai"
    )


async def run(emu: Emulator, count: int, **kwargs):
    rows = [{"text": f"order {n}"} for n in range(count)]
    model = emulated(emu)
    return [
        r
        async for r in model.amap(
            rows, prompt="Extract: {text}", schema=SCHEMA, tools=[lookup], log=False, **kwargs
        )
    ]


async def test_429_500_and_dropped_connections_end_as_retried_successes(emulator: Emulator):
    emulator.add(
        Fault(429, retry_after=0.2),
        Fault(500),
        DropConnection(after_events=2),
        Fault(503),
        Fault(429, retry_after=0.1),
    )
    emulator.default = answer_with_tool
    results = await run(emulator, 40, concurrency=8, transport_retries=3)
    assert emulator.remaining == 0
    assert sorted(r.index for r in results) == list(range(40))
    for r in results:
        assert r.ok, r.error
        assert r.value == {"id": r.index, "total": r.index / 2}


async def test_a_row_that_keeps_failing_is_recorded_with_its_phase_and_others_finish(emulator: Emulator):
    def answer(request: RecordedRequest):
        if order_number(request) == 7:
            return Fault(500, message="always broken")
        return answer_with_tool(request)

    emulator.default = answer
    results = await run(emulator, 20, concurrency=4, transport_retries=1)
    broken = [r for r in emulator.requests if "order 7" in r.raw_body.decode()]
    by_index = {r.index: r for r in results}
    assert sorted(by_index) == list(range(20))
    failed = by_index[7]
    assert failed.error.phase == "provider" and failed.error.to_dict()["status"] == 500
    assert "always broken" in failed.error.message
    assert len(broken) == 2  # the first try and one retry
    assert all(r.ok for i, r in by_index.items() if i != 7)


async def test_a_stalled_call_times_out_and_the_row_is_retried(emulator: Emulator):
    """A server that goes silent (before answering, or mid-stream) costs the row one retry of the
    map's, after chainform's read timeout, never the SDK's 600 s (issue 28 item 2)."""
    emulator.add(Stall(30, after_events=0), Stall(30, after_events=3))
    emulator.default = answer_with_tool
    rows = [{"text": f"order {n}"} for n in range(6)]
    model = get_async_model(
        MODEL, key="sk-test", base_url=emulator.base_url + "/v1", max_retries=0, timeout=0.5, profile="openai"
    )
    results = [
        r
        async for r in model.amap(
            rows,
            prompt="Extract: {text}",
            schema=SCHEMA,
            tools=[lookup],
            log=False,
            concurrency=2,
            transport_retries=2,
        )
    ]
    assert emulator.remaining == 0
    assert sorted(r.index for r in results) == list(range(6))
    assert all(r.ok and r.value == {"id": r.index, "total": r.index / 2} for r in results)
