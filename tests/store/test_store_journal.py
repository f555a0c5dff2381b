"""A sync chain alone commits one journal row where the spool cannot be used (no fcntl; files
attached); every read spreads the journal into the tables first."""

from __future__ import annotations

import sqlite3
import warnings

import pytest
from store_helpers import make_record

import chainform as cf
from chainform.store import Store
from chainform.testing import ScriptedClient, tool_call


def get_weather(city: str) -> dict:
    "Weather for a city."
    return {"city": city, "temp_c": 21.5}


@pytest.fixture(autouse=True)
def no_spool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("chainform.store._store.SPOOLING", False)


def _count(store: Store, table: str) -> int:
    with sqlite3.connect(store.path) as db:  # a plain reader: sees what is committed, spreads nothing
        return int(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])


def test_a_sync_chain_commits_one_journal_row_that_the_next_read_spreads() -> None:
    model = cf.Model(ScriptedClient([tool_call("get_weather", city="Rome"), "21.5 in Rome"]))
    chain = model.chain("Weather?", tools=[get_weather])
    assert chain.text() == "21.5 in Rome"
    store = Store()
    assert (_count(store, "journal"), _count(store, "responses")) == (1, 0)  # committed, not spread
    rows = store.recent(None)
    assert sorted(r.seq for r in rows) == [0, 1]
    assert {r.conversation_id for r in rows} == {chain.conversation_id}
    first = next(r for r in rows if r.seq == 0)
    assert first.tool_calls[0].arguments == {"city": "Rome"} and "21.5" in first.tool_results[0].output
    assert (_count(store, "journal"), _count(store, "responses"), _count(store, "tool_results")) == (0, 2, 1)
    store.close()


def test_a_journal_row_the_log_cannot_take_is_dropped_with_a_warning_and_others_spread(store: Store) -> None:
    good, dup = make_record(seq=1), make_record(seq=2)
    store.log_call(good)  # through the writer: in the tables at once
    dup.id = good.id  # the same primary key: this chain's rows cannot go in
    store.write_now([dup])
    store.write_now([make_record(seq=3)])
    with sqlite3.connect(store.path) as db:
        db.execute("INSERT INTO journal (format, rows) VALUES (1, 'not json')")
        db.execute("INSERT INTO journal (format, rows) VALUES (99, '{}')")
    with pytest.warns(UserWarning, match="journaled chain") as caught:
        assert sorted(r.seq for r in store.recent(None)) == [1, 3]
    assert len(caught) == 3
    assert _count(store, "journal") == 0


def test_remove_and_counts_see_journaled_chains(store: Store) -> None:
    store.write_now([make_record(conversation_id="a", seq=0), make_record(conversation_id="a", seq=1)])
    store.write_now([make_record(conversation_id="b", seq=0)])
    assert store.counts()["responses"] == 3
    store.write_now([make_record(conversation_id="a", seq=2)])
    assert store.remove(conversation_id="a") == 3  # the journal is spread in the same transaction
    assert [r.conversation_id for r in store.recent(None)] == ["b"]


def test_a_log_that_cannot_be_written_is_read_as_it_is(store: Store, monkeypatch) -> None:
    store.log_call(make_record(seq=0))
    store.write_now([make_record(seq=1)])

    def read_only(db: sqlite3.Connection) -> int:
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr("chainform.store._store.spread", read_only)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert [r.seq for r in store.recent(None)] == [0]
    assert any("journal" in str(w.message) for w in caught)
