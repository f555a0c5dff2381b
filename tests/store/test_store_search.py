"""Full-text search indexed at search time (store/_fts.py): nothing indexed on commit, nothing lost."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from store_helpers import make_record

from chainform.store import Store
from chainform.store._migrations import migrate


def _indexed(store: Store) -> int:
    with store._read() as db:
        return int(db.execute("SELECT COUNT(*) FROM responses_fts_docsize").fetchone()[0])


def _upto(store: Store) -> int:
    with store._read() as db:
        return int(db.execute("SELECT upto FROM fts_progress").fetchone()[0])


def test_commit_indexes_nothing_search_indexes_once(store: Store) -> None:
    for seq, word in enumerate(["pelicans", "herons", "pelicans and herons"]):
        store.write_calls([make_record(prompt=f"about {word}", text=word, seq=seq)])
    assert _indexed(store) == 0  # the chains paid nothing for search
    assert [r.seq for r in store.recent(None, query="pelicans")] == [2, 0]
    assert _indexed(store) == 3
    store.write_calls([make_record(prompt="egrets", text="white", seq=3)])
    assert [r.seq for r in store.recent(None, query="herons")] == [2, 1]
    assert [r.seq for r in store.recent(None, query="egrets")] == [3]
    assert _indexed(store) == 4  # each row indexed once


def test_removed_rows_leave_the_index_and_new_rows_reusing_rowids_are_found(store: Store) -> None:
    a = make_record(prompt="alpha", text="first", seq=0)
    b = make_record(prompt="bravo", text="second", seq=1)
    store.write_calls([a])
    store.write_calls([b])
    assert [r.seq for r in store.recent(None, query="bravo")] == [1]
    assert store.remove([b.id]) == 1  # the largest rowid: SQLite hands it out again
    assert store.recent(None, query="bravo") == []
    store.write_calls([make_record(prompt="charlie", text="third", seq=2)])
    assert [r.seq for r in store.recent(None, query="charlie")] == [2]
    assert [r.seq for r in store.recent(None, query="alpha")] == [0]
    with store._read() as db:  # FTS5's own consistency check of an external-content index
        db.execute("INSERT INTO responses_fts(responses_fts, rank) VALUES ('integrity-check', 1)")


def test_removing_rows_never_searched_keeps_the_index_consistent(store: Store) -> None:
    store.write_calls([make_record(prompt="indexed row", seq=0)])
    assert len(store.recent(None, query="indexed")) == 1
    late = [make_record(prompt=f"late row {i}", seq=i + 1) for i in range(3)]
    for record in late:
        store.write_calls([record])
    assert store.remove([r.id for r in late]) == 3  # never indexed: nothing to take out
    store.write_calls([make_record(prompt="late again", seq=9)])
    assert [r.seq for r in store.recent(None, query="late")] == [9]
    assert _upto(store) >= 1
    with store._read() as db:
        db.execute("INSERT INTO responses_fts(responses_fts, rank) VALUES ('integrity-check', 1)")


def test_log_indexed_by_the_old_trigger_moves_to_search_time(tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN")
    migrate(db, upto=4)  # a log written before migration 5: an insert trigger indexed every row
    db.execute("INSERT INTO conversations VALUES ('c1', 'm', NULL, ?)", (time.time(),))
    db.execute(
        """INSERT INTO responses (id, conversation_id, chain_id, seq, purpose, model, prompt, text,
           created_at) VALUES ('r1', 'c1', 'k1', 0, 'chain', 'm', 'old pelicans', 'yes', ?)""",
        (time.time(),),
    )
    db.execute("COMMIT")
    db.close()
    with Store(path) as store:
        store.write_calls([make_record(prompt="new pelicans", seq=1)])
        assert [r.prompt for r in store.recent(None, query="pelicans")] == ["new pelicans", "old pelicans"]
        assert _indexed(store) == 2  # the old row was not indexed twice
        with store._read() as db:
            triggers = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")}
            indexes = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert triggers == {"responses_fts_delete"}
        assert not indexes & {"responses_created", "responses_parent", "responses_chain", "responses_schema"}
        assert "responses_conversation" in indexes


def test_log_that_cannot_be_written_searches_with_like(store: Store, monkeypatch) -> None:
    store.write_calls([make_record(prompt="kestrels hover", seq=0)])

    def read_only(db: sqlite3.Connection) -> int:
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr("chainform.store._store.catch_up", read_only)
    assert [r.prompt for r in store.recent(None, query="kestrels")] == ["kestrels hover"]
    assert _indexed(store) == 0
