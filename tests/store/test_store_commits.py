"""When a chain's calls are committed, the one record shape, and the maintenance commands of the store."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from store_helpers import make_record

import chainform as cf
from chainform.chain._calls import ChainLogger
from chainform.store import CallRecord, LogBusy, Store, StoreError, logging_enabled, set_logging
from chainform.store import _rows as rows
from chainform.testing import ScriptedClient, tool_call
from chainform.types import DataContent, Message, TextContent


def get_weather(city: str) -> dict:
    "Weather for a city."
    return {"city": city, "temp_c": 21.5}


def _committed(path: Path) -> int:
    """How many calls the log's table holds, read by a fresh sqlite3 connection (no chainform code)."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        return int(db.execute("SELECT count(*) FROM responses").fetchone()[0])


def test_each_call_is_committed_before_the_next_is_sent(home: Path) -> None:
    seen: list[int] = []

    def count_then(reply: Any) -> Any:
        def answer(messages: list[Message], options: cf.ChatOptions) -> Any:
            seen.append(_committed(home / "logs.db") if (home / "logs.db").exists() else 0)
            return reply

        return answer

    script = [count_then(tool_call("get_weather", city=c)) for c in ("Paris", "Rome", "Oslo")]
    model = cf.Model(ScriptedClient([*script, count_then("all sunny")]))
    assert model.chain("Weather?", tools=[get_weather]).text() == "all sunny"
    assert seen == [0, 1, 2, 3]  # each call, with its tool results, was in the table before the next
    assert _committed(home / "logs.db") == 4  # and the last one before the chain returned
    rows_ = Store().recent(None)
    assert [r.tool_results[0].output for r in rows_[1:]] == [
        json.dumps(get_weather(c)) for c in ("Oslo", "Rome", "Paris")
    ]


def test_an_async_chain_never_holds_its_event_loop_while_another_process_holds_the_log(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHAINFORM_LOG_TIMEOUT", "60")
    path = home / "logs.db"
    Store(path).check()  # the log exists; another process then takes its write lock

    async def main() -> tuple[str, bool, int]:
        model = cf.AsyncModel(ScriptedClient([tool_call("get_weather", city="Paris"), "21.5 in Paris"]))
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as holder:
            holder.execute("BEGIN IMMEDIATE")
            chain = asyncio.ensure_future(model.chain("Weather?", tools=[get_weather]).text())
            ticks = 0
            while ticks < 20:  # the loop goes on while the chain's first call waits to be committed
                await asyncio.sleep(0.01)
                ticks += 1
            waiting = not chain.done()  # its second call is not sent before the first is logged
            holder.execute("COMMIT")
        return await chain, waiting, ticks

    assert asyncio.run(main()) == ("21.5 in Paris", True, 20)
    assert _committed(path) == 2


def test_a_write_that_must_not_wait_says_the_log_is_busy_instead(store: Store) -> None:
    with pytest.raises(LogBusy, match="not open yet"):  # opening may migrate: never done without waiting
        store.write_calls([make_record()], wait=False)
    store.check()
    with contextlib.closing(sqlite3.connect(store.path, isolation_level=None)) as holder:
        holder.execute("BEGIN IMMEDIATE")  # another process writing
        with pytest.raises(LogBusy, match="another process"):
            store.write_calls([make_record()], wait=False)
        holder.execute("COMMIT")
    with store.read() as db:  # the busy timeout is back for the writes that wait
        assert db.execute("PRAGMA busy_timeout").fetchone()[0] == 30_000

    inside, release = threading.Event(), threading.Event()

    def slow_write(db: sqlite3.Connection) -> None:
        inside.set()
        release.wait()

    writer = threading.Thread(target=store.write, args=(slow_write,))
    writer.start()
    inside.wait()
    with pytest.raises(LogBusy, match="another thread"):  # this Store's own connection is in use
        store.write_calls([make_record()], wait=False)
    release.set()
    writer.join()
    store.write_calls([make_record()], wait=False)  # free: committed at once
    assert _committed(store.path) == 1


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


def test_written_read_and_printed_record_is_one_shape(store: Store) -> None:
    record = make_record(
        messages=[Message.user([TextContent("look"), DataContent(b"\x00\xff", "image/png")])],
        schema={"type": "object"},
        parsed={"a": 1},
    )
    store.write_calls([record])
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
    logger = ChainLogger(
        Store(), conversation_id="c", chain_id="k", model="m", prompt=None, system=None,
        schema={"type": "object"}, format_context_policy=None,
    )  # fmt: skip
    summary = logger.options(cf.ChatOptions(response_format=cf.ResponseFormat.json_schema(other)))
    assert summary["response_format"]["schema"] == other and "schema_id" not in summary["response_format"]


def test_backup_copies_every_row(store: Store, tmp_path: Path) -> None:
    for i in range(3):
        store.write_calls([make_record(seq=i)])
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
        store.write_calls([record])
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
    # both calls were committed as they arrived, before their tools ran; the first tool's result
    # when it returned; the second tool never returned
    second, first = Store().recent(None)
    assert first.seq == 0 and [c.name for c in first.tool_calls] == ["lookup"]
    assert [r.output for r in first.tool_results] == ["Paris"]
    assert second.seq == 1 and [c.name for c in second.tool_calls] == ["wait_forever"]
    assert second.tool_results == []
