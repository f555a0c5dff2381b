"""A sync chain's rows go to the log's spool (one append) and reach the tables at the next read,
also after the process is killed; a record cut short or already written is not written twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import chainform as cf
from chainform.store import Store
from chainform.store import _spool as spool
from chainform.testing import ScriptedClient, tool_call

pytestmark = pytest.mark.skipif(not spool.AVAILABLE, reason="no fcntl: chains use the journal")


def get_weather(city: str) -> str:
    "Weather for a city."
    return f"21.5 in {city}"


def _chain(text: str) -> None:
    model = cf.Model(ScriptedClient([tool_call("get_weather", city="Paris"), text]))
    assert model.chain("Weather?", tools=[get_weather]).text() == text


def _spool_file(home: Path) -> Path:
    return home / "logs.db-spool"


def test_a_sync_chain_is_one_spool_record_read_back_whole(home: Path) -> None:
    _chain("sunny")
    data = _spool_file(home).read_bytes()
    assert data.count(b"\n3 [") == 1 and data.endswith(b"]\n")  # one compact record (store/_compact.py)
    records = Store().recent(None)
    assert [r.seq for r in records] == [1, 0] and records[0].text == "sunny"
    assert _spool_file(home).stat().st_size == 0  # emptied once its rows were committed
    assert oct(_spool_file(home).stat().st_mode & 0o777) == "0o600"


def test_a_record_cut_short_is_dropped_and_the_others_kept(home: Path) -> None:
    _chain("first")
    path = _spool_file(home)
    whole = path.read_bytes()
    with open(path, "ab") as out:
        out.write(whole[: len(whole) // 2])  # a process killed in the middle of its write
    _chain("after")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        texts = [r.text for r in Store().recent(None)]
    assert texts.count("first") == 1 and texts.count("after") == 1 and len(texts) == 4
    assert any("cut short" in str(w.message) for w in caught)


def test_a_record_already_in_the_log_is_not_written_twice(home: Path) -> None:
    _chain("once")
    kept = _spool_file(home).read_bytes()
    assert len(Store().recent(None)) == 2
    with open(_spool_file(home), "ab") as out:  # a reader died after its commit, before emptying
        out.write(kept)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(Store().recent(None)) == 2


def test_logs_rm_removes_what_only_the_spool_held(home: Path) -> None:
    _chain("gone")
    store = Store()
    cid = _conversation(store)
    assert store.remove(conversation_id=cid) == 2
    assert store.recent(None) == [] and _spool_file(home).stat().st_size == 0


def _conversation(store: Store) -> str:
    conversation = store.last_conversation_id()
    assert conversation is not None
    return conversation


def test_a_chain_that_returned_is_in_the_log_after_kill_9(home: Path) -> None:
    script = textwrap.dedent(
        """
        import sys, time
        import chainform as cf
        from chainform.testing import ScriptedClient, tool_call

        def get_weather(city: str) -> str:
            "Weather for a city."
            return "21.5"

        model = cf.Model(ScriptedClient([tool_call("get_weather", city="Paris"), "kept"] * 3))
        for _ in range(3):
            model.chain("Weather?", tools=[get_weather]).text()
        print("returned", flush=True)
        time.sleep(60)
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=dict(os.environ)
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "returned"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.kill()
        child.wait(10)
    records = Store().recent(None)
    assert len(records) == 6 and [r.text for r in records].count("kept") == 3


def test_chains_of_several_processes_while_another_reads_are_each_written_once(home: Path) -> None:
    script = textwrap.dedent(
        """
        import chainform as cf
        from chainform.testing import ScriptedClient

        model = cf.Model(ScriptedClient(["ok"] * 30))
        for _ in range(30):
            model.chain("hi").text()
        """
    )
    writers = [subprocess.Popen([sys.executable, "-c", script], env=dict(os.environ)) for _ in range(3)]
    store = Store()
    try:
        while any(w.poll() is None for w in writers):
            store.counts()  # each read drains the spool while the others append
    finally:
        for w in writers:
            w.wait(60)
    assert [w.returncode for w in writers] == [0, 0, 0]
    records = store.recent(None)
    assert len(records) == 90 and len({r.id for r in records}) == 90
