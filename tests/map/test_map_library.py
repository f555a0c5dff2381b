"""model.map / amap on a ScriptedClient: order, keys, typed errors, laziness, retries, rate gate."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3

import pytest

from chainform._map._gate import RateGate
from chainform.errors import ProviderError, StructuredOutputError
from chainform.models import AsyncModel, Model
from chainform.store import Store
from chainform.testing import ScriptedClient
from virtual_time import VirtualTime

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def echo(messages, options):
    return "echo " + messages[-1].text


def number(messages) -> int:
    first_user = next(m for m in messages if m.role == "user")
    return int(re.search(r"(\d+)", first_user.text).group(1))


async def _all(rows):
    return [r async for r in rows]


def model(script, cls=Model):
    return cls(ScriptedClient(script), name="scripted")


def test_map_yields_every_row_once_with_index_key_and_text():
    results = list(model([echo] * 30).map([f"row {i}" for i in range(30)], concurrency=4, log=False))
    assert sorted(r.index for r in results) == list(range(30))
    for r in results:
        assert r.ok and r.key == str(r.index) and r.text == f"echo row {r.index}"
        assert r.usage.total_tokens


def test_ordered_yields_in_input_order_even_when_later_rows_finish_first():
    def reply(messages, options):
        return f"n{number(messages)}"

    results = list(
        model([reply] * 20).map([f"q {i}" for i in range(20)], concurrency=5, ordered=True, log=False)
    )
    assert [r.index for r in results] == list(range(20))
    assert [r.text for r in results] == [f"n{i}" for i in range(20)]


def test_template_fills_from_dict_rows_and_bad_rows_are_input_errors():
    rows = [{"id": "a", "text": "order 1"}, {"id": "b"}, {"text": "order 3"}, 42]
    results = {
        r.index: r for r in model([echo] * 4).map(rows, prompt="Extract: {text}", id_field="id", log=False)
    }
    assert results[0].ok and results[0].key == "a" and results[0].text == "echo Extract: order 1"
    assert results[1].error.phase == "input" and "text" in results[1].error.message
    assert results[2].error.phase == "input" and "'id'" in results[2].error.message
    assert results[3].error.phase == "input" and results[3].error.type == "MapInputError"


def test_a_rows_bad_attachment_is_an_input_error_not_internal(tmp_path):
    """A missing, empty, over-size or unreadable file is the row's input, not a chainform bug."""
    from chainform.types import MediaSupport, ModelProfile

    (tmp_path / "ok.txt").write_text("fine\n")
    (tmp_path / "empty.txt").write_bytes(b"")
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)))
    (tmp_path / "big.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(2_000))
    profile = ModelProfile(
        name="scripted", provider="testing", media=MediaSupport(frozenset({"image/png"}), max_bytes=1_000)
    )
    names = ["ok.txt", "missing.txt", "empty.txt", "blob.bin", "big.png"]
    rows = [{"q": "read", "file": name} for name in names]
    mapped = Model(ScriptedClient([echo] * 5, profile), name="scripted").map(
        rows, prompt="{q}", attach="file", attach_base=tmp_path, ordered=True, log=False
    )
    results = {names[r.index]: r for r in mapped}
    assert results["ok.txt"].ok
    for name in names[1:]:
        error = results[name].error
        assert (error.phase, error.type) == ("input", "AttachmentError"), error
        assert name in error.message
    assert "over the limit" in results["big.png"].error.message


def test_schema_values_and_output_errors_are_recorded_per_row():
    def reply(messages, options):
        n = number(messages)
        return json.dumps({"n": n}) if n % 2 == 0 else "not json"

    rows = [f"give {i}" for i in range(6)]
    results = {r.index: r for r in model([reply] * 20).map(rows, schema="n int", log=False)}
    for i, r in results.items():
        if i % 2 == 0:
            assert r.ok and r.value == {"n": i} and r.data == {"n": i}
        else:
            assert r.error.phase == "output" and r.error.type == "StructuredOutputError"
            assert isinstance(r.error.exception, StructuredOutputError)
            assert r.error.to_dict()["phase"] == "output"


def test_on_error_raise_stops_with_the_typed_error():
    script = [echo, ProviderError("bad request", status=400)] + [echo] * 10
    with pytest.raises(ProviderError):
        list(model(script).map([f"r {i}" for i in range(10)], concurrency=1, on_error="raise", log=False))


def test_transient_faults_are_retried_and_exhausted_ones_recorded(virtual: VirtualTime):
    """On virtual time (tests/virtual_time.py): the back-offs between retries take no real second."""
    script = [ProviderError("boom", status=500), echo, ProviderError("down", status=503)] + [
        ProviderError("down", status=503)
    ] * 2
    client = ScriptedClient(script)
    rows = AsyncModel(client, name="s").amap(
        ["a", "b"], concurrency=1, transport_retries=2, ordered=True, log=False
    )
    results = virtual.run(_all(rows))
    assert results[0].ok and results[0].text == "echo a"
    assert results[1].error.phase == "provider" and results[1].error.to_dict()["status"] == 503
    assert len(client.requests) == 5  # 1 retry for row a, 1 + 2 retries for row b


def test_inputs_are_read_lazily_and_an_early_break_stops_the_pool():
    pulled = 0

    def inputs():
        nonlocal pulled
        for i in range(10_000):
            pulled += 1
            yield f"row {i}"

    client = ScriptedClient([echo] * 10_000)
    results = Model(client, name="s").map(inputs(), concurrency=3, log=False)
    first = [next(results) for _ in range(5)]
    results.close()
    assert len(first) == 5
    # the reader stays within the window (2 x concurrency) plus the queue, never the whole input
    assert pulled < 30
    assert len(client.requests) < 30


async def test_amap_takes_async_inputs_and_names_logged_rows(monkeypatch):
    async def inputs():
        for i in range(4):
            yield {"text": f"order {i}"}

    m = model([echo] * 4, cls=AsyncModel)
    results = []
    async for r in m.amap(inputs(), prompt="Q: {text}", run_id="RUN1", ordered=True):
        # committed (calls and name) by the time the row is handed over: a resume may rely on it
        with sqlite3.connect(Store().path) as db:
            found = db.execute(
                "SELECT c.name, count(r.id) FROM conversations c JOIN responses r"
                " ON r.conversation_id = c.id WHERE c.id = ? GROUP BY c.id",
                (r.conversation_id,),
            ).fetchall()
        assert found == [(f"map RUN1 {r.key}", 1)]
        results.append(r)
    assert [r.text for r in results] == [f"echo Q: order {i}" for i in range(4)]
    names = {row[0] for row in Store()._connect().execute("SELECT name FROM conversations")}
    assert names == {f"map RUN1 {i}" for i in range(4)}


def test_a_429_pauses_every_worker_until_retry_after(monkeypatch, virtual: VirtualTime):
    """On virtual time: the pause is Retry-After's 0.3 s of the loop's clock, waited by nobody."""
    loop = virtual
    starts: list[float] = []
    pauses: list[tuple[float, float]] = []
    real_pause = RateGate.pause

    def spy(self, seconds):
        pauses.append((loop.time(), loop.time() + seconds))
        real_pause(self, seconds)

    monkeypatch.setattr(RateGate, "pause", spy)

    def reply(messages, options):
        starts.append(loop.time())
        return "ok"

    def limited(messages, options):
        starts.append(loop.time())
        return ProviderError("slow down", status=429, retry_after=0.3)

    script = [reply, reply, limited] + [reply] * 30
    m = model(script, cls=AsyncModel)
    results = virtual.run(_all(m.amap([f"r {i}" for i in range(30)], concurrency=6, log=False)))
    assert len(results) == 30 and all(r.ok for r in results)
    assert len(pauses) == 1
    began, ends = pauses[0]
    assert not [t for t in starts if began < t < ends]  # nobody called the provider during the pause
    assert any(t >= ends for t in starts)


def test_rate_gate_budgets_block_when_spent(virtual: VirtualTime):
    """On virtual time: a budget spent for the minute holds the next turn past a 0.05 s wait."""
    virtual.run(_budgets_block_when_spent())


async def _budgets_block_when_spent() -> None:
    gate = RateGate(requests_per_minute=2, tokens_per_minute=100)
    await gate.turn(10)
    await gate.turn(10)
    with pytest.raises(asyncio.TimeoutError):  # a third request this minute must wait
        await asyncio.wait_for(gate.turn(10), 0.05)
    tokens = RateGate(requests_per_minute=None, tokens_per_minute=100)
    await tokens.turn(10)
    await tokens.spent(10, 90)  # the call used 90 tokens: the budget is now empty
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(tokens.turn(20), 0.05)
    assert tokens.stats.tokens == 90
