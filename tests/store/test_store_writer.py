"""The log's writer thread, the one record shape, and the maintenance commands of the store."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
import time
from pathlib import Path

import pytest
from pydantic import BaseModel
from store_helpers import make_record

import chainform as cf
from chainform.store import CallRecord, Store, StoreError, logging_enabled, set_logging
from chainform.store import _journal as journal
from chainform.store import _rows as rows
from chainform.store._chainlog import options_summary
from chainform.store._spool import Spool
from chainform.testing import ScriptedClient, tool_call
from chainform.types import DataContent, Message, TextContent


def get_weather(city: str) -> dict:
    "Weather for a city."
    return {"city": city, "temp_c": 21.5}


@pytest.fixture
def write_threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The name of the thread each chain write runs on, in order: `insert_calls` (the writer
    thread's) or `stage` / `Spool.append` (a journal row or spool record, written in place)."""
    threads: list[str] = []
    original, original_stage, original_append = rows.insert_calls, journal.stage, Spool.append

    def append_spy(spool: Spool, fmt: int, record: bytes) -> None:
        threads.append(threading.current_thread().name)
        original_append(spool, fmt, record)

    def spy(db: sqlite3.Connection, records: list[CallRecord]) -> list[str]:
        threads.append(threading.current_thread().name)
        return original(db, records)

    def stage_spy(db: sqlite3.Connection, staged: rows.Rows) -> None:
        threads.append(threading.current_thread().name)
        original_stage(db, staged)

    monkeypatch.setattr("chainform.store._store.insert_calls", spy)
    monkeypatch.setattr("chainform.store._store.stage", stage_spy)
    monkeypatch.setattr(Spool, "append", append_spy)
    return threads


def test_writes_run_on_the_writer_thread_not_the_event_loop(write_threads: list[str]) -> None:
    threads = write_threads

    async def main() -> tuple[str, list[int]]:
        model = cf.AsyncModel(ScriptedClient([tool_call("get_weather", city="Paris"), "21.5 in Paris"]))
        chain = model.chain("Weather?", tools=[get_weather])
        text = await chain.text()
        # the chain returned: its rows are committed and readable at once
        return text, [r.seq for r in Store().recent(10)]

    text, seqs = asyncio.run(main())
    assert text == "21.5 in Paris" and sorted(seqs) == [0, 1]
    # the chain's two calls are one write (one transaction), on the writer thread
    assert len(threads) == 1 and threads[0].startswith("chainform-log-writer")
    assert threading.current_thread().name not in threads


def test_a_sync_chain_alone_commits_in_place_and_concurrent_ones_use_the_writer(
    write_threads: list[str],
) -> None:
    threads = write_threads
    model = cf.Model(ScriptedClient(["one"]))
    assert model.chain("q").text() == "one"  # alone on the background loop: no thread switch
    assert threads == ["chainform-loop"]
    threads.clear()
    started = threading.Barrier(4)

    def slow_tool() -> str:
        "Returns once all four chains are running."
        started.wait(10)
        return "ok"

    slow = cf.Model(ScriptedClient([tool_call("slow_tool")] * 4 + ["done"] * 4))
    chains = [slow.chain("q", tools=[slow_tool]) for _ in range(4)]
    assert [c.text() for c in chains] == ["done"] * 4
    # every chain that committed while another ran went through the writer; only the last was alone
    assert len(threads) == 4
    assert all(name.startswith("chainform-log-writer") for name in threads[:-1])
    assert len(Store().recent(None)) == 1 + 8


def test_many_concurrent_chains_lose_nothing() -> None:
    async def main() -> list[str]:
        model = cf.AsyncModel(ScriptedClient([f"answer {i}" for i in range(40)]))
        chains = [model.chain(f"q{i}") for i in range(40)]
        return list(await asyncio.gather(*(c.text() for c in chains)))

    answers = asyncio.run(main())
    logged = Store().recent(None)
    assert len(logged) == 40
    assert sorted(r.text for r in logged) == sorted(answers)
    assert len({r.conversation_id for r in logged}) == 40


def test_a_bad_record_in_a_batch_does_not_take_the_others(store: Store) -> None:
    good = [make_record(seq=i) for i in range(5)]
    bad = make_record(seq=99)
    bad.id = good[0].id  # duplicate primary key: fails on its own
    store.flush()
    futures = [store.submit(r) for r in [*good, bad]]
    results = []
    for future in futures:
        try:
            results.append(future.result())
        except StoreError:
            results.append("failed")
    assert results == [r.id for r in good] + ["failed"]
    assert sorted(r.seq for r in store.recent(None)) == [0, 1, 2, 3, 4]


def test_written_read_and_printed_record_is_one_shape(store: Store) -> None:
    record = make_record(
        messages=[Message.user([TextContent("look"), DataContent(b"\x00\xff", "image/png")])],
        schema={"type": "object"},
        parsed={"a": 1},
    )
    store.log_call(record)
    [got] = store.recent(1)
    printed = got.to_dict()
    assert set(printed) == set(record.to_dict())
    assert CallRecord.model_validate(json.loads(json.dumps(printed))).to_dict() == printed
    image = got.messages[0].contents[1]
    assert isinstance(image, DataContent) and image.data == b"\x00\xff"
    assert printed["messages"][0]["contents"][1]["data"] == "AP8="
    assert printed["schema"] == {"type": "object"} and printed["schema_id"] == got.schema_id


def test_a_chains_rows_name_its_schema_once_by_content_address() -> None:
    """The response format of each call names the chain's schema by its id (stored once in
    `schemas`), not a copy of it per row; a format with another schema keeps that schema inline."""

    class Answer(BaseModel):
        city: str

    profile = cf.ModelProfile(name="both", supports_json_schema=True, supports_tools_with_schema=True)
    model = cf.Model(ScriptedClient([tool_call("get_weather", city="Rome"), '{"city": "Rome"}'], profile))
    chain = model.chain("Weather?", tools=[get_weather], schema=Answer)
    assert chain.value == Answer(city="Rome")
    rows_ = Store().recent(None, conversation_id=chain.conversation_id)
    assert len(rows_) == 2
    for row in rows_:
        fmt = row.options["response_format"]
        assert fmt["kind"] == "json_schema" and "schema" not in fmt
        assert fmt["schema_id"] == row.schema_id == rows.schema_id(Answer.model_json_schema())
        assert row.schema == Answer.model_json_schema()
    other = {"type": "object", "properties": {"x": {"type": "integer"}}}
    summary = options_summary(
        cf.ChatOptions(response_format=cf.ResponseFormat.json_schema(other)),
        schema={"type": "object"},
        sid="s",
    )
    assert summary["response_format"]["schema"] == other and "schema_id" not in summary["response_format"]


def test_backup_copies_every_row(store: Store, tmp_path: Path) -> None:
    for i in range(3):
        store.log_call(make_record(seq=i))
    target = store.backup(tmp_path / "copy" / "backup.db")
    copy = Store(target)
    assert [r.id for r in copy.recent(None)] == [r.id for r in store.recent(None)]
    copy.close()
    with pytest.raises(StoreError, match="exists"):
        store.backup(target)


def test_remove_by_id_conversation_and_date(store: Store) -> None:
    now = time.time()
    a = make_record(conversation_id="a", created_at=now - 100, schema={"type": "string"})
    b = make_record(conversation_id="b", created_at=now)
    c = make_record(conversation_id="b", created_at=now + 1)
    for record in (a, b, c):
        store.log_call(record)
    assert store.remove(before=now - 50) == 1
    assert store.list_schemas() == []  # its schema had no other use
    assert store.remove([c.id[:20]]) == 0  # ids are exact: a prefix never deletes
    assert store.remove([c.id.upper()]) == 1
    assert [r.id for r in store.recent(None)] == [b.id]
    assert store.remove(conversation_id="b") == 1
    assert store.counts() == {"responses": 0, "conversations": 0, "schemas": 0}
    with pytest.raises(StoreError, match="say which"):
        store.remove()


def test_logs_off_stops_chains_logging() -> None:
    set_logging(False)
    assert not logging_enabled()
    cf.Model(ScriptedClient(["hi"])).chain("x").text()
    assert Store().recent(5) == []
    set_logging(True)
    cf.Model(ScriptedClient(["hi"])).chain("x").text()
    assert len(Store().recent(5)) == 1


_INTERRUPTED_CHAIN = """
import asyncio, sys
import chainform as cf
from chainform.testing import ScriptedClient, tool_call

def lookup(city: str) -> str:
    "Look a city up."
    return city

async def wait_forever(city: str) -> str:
    "Never returns (the user presses Ctrl-C meanwhile)."
    print("READY", flush=True)
    await asyncio.sleep(600)
    return city

script = [tool_call("lookup", city="Paris"), tool_call("wait_forever", city="Rome"), "done"]
cf.Model(ScriptedClient(script)).chain("Go", tools=[lookup, wait_forever]).text()
"""


def test_ctrl_c_during_a_chain_keeps_the_calls_that_finished(home: Path) -> None:
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-c", _INTERRUPTED_CHAIN], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "READY"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "KeyboardInterrupt" in err
    # the first call (its tool ran) finished before Ctrl-C: the exit hook committed it
    [row] = Store().recent(None)
    assert row.seq == 0 and [c.name for c in row.tool_calls] == ["lookup"]
    assert [r.output for r in row.tool_results] == ["Paris"]
