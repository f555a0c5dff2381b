"""Full-text search (migration 9): the index is kept by triggers, so a call is found once committed;
older forms of the index (caught up at search time, or kept by the first triggers) move to it."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from store_helpers import make_record, old_log

from chainform.store import Store, StoreError
from chainform.store._migrations import migrate

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def _indexed(store: Store) -> int:
    with store.read() as db:
        return int(db.execute("SELECT COUNT(*) FROM responses_fts_docsize").fetchone()[0])


def _check_index(store: Store) -> None:
    with store.read() as db:  # FTS5's own consistency check of an external-content index
        db.execute("INSERT INTO responses_fts(responses_fts, rank) VALUES ('integrity-check', 1)")


def test_a_committed_call_is_indexed_and_found(store: Store) -> None:
    for seq, word in enumerate(["pelicans", "herons", "pelicans and herons"]):
        store.write_calls([make_record(prompt=f"about {word}", text=word, seq=seq)])
        assert _indexed(store) == seq + 1  # by its commit, once
    assert [r.seq for r in store.recent(None, query="pelicans")] == [2, 0]
    assert [r.seq for r in store.recent(None, query="herons pelicans")] == [2]
    _check_index(store)


def test_a_search_never_writes(store: Store, monkeypatch) -> None:
    store.write_calls([make_record(prompt="kestrels hover", seq=0)])

    def read_only(*args: object) -> None:
        raise StoreError("attempt to write a readonly database")

    monkeypatch.setattr(store, "write", read_only)
    assert [r.prompt for r in store.recent(None, query="kestrels")] == ["kestrels hover"]


def test_removed_rows_leave_the_index_and_new_rows_reusing_rowids_are_found(store: Store) -> None:
    a = make_record(prompt="alpha", text="first", seq=0)
    b = make_record(prompt="bravo", text="second", seq=1)
    store.write_calls([a])
    store.write_calls([b])
    assert store.remove([b.id]) == 1  # the largest rowid: SQLite hands it out again
    assert store.recent(None, query="bravo") == []
    store.write_calls([make_record(prompt="charlie", text="third", seq=2)])
    assert [r.seq for r in store.recent(None, query="charlie")] == [2]
    assert [r.seq for r in store.recent(None, query="alpha")] == [0]
    _check_index(store)


def _old_log(path: Path, version: int, index: str) -> sqlite3.Connection:
    """A log at `version` holding two calls ('old pelicans', 'older pelicans'), the first indexed."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("BEGIN")
    migrate(db, upto=version)
    db.execute(
        "CREATE VIRTUAL TABLE responses_fts "
        "USING fts5(prompt, text, content='responses', content_rowid='rowid')"
    )
    db.execute(index)
    db.execute("INSERT INTO conversations VALUES ('c1', 'm', NULL, ?)", (time.time(),))
    for rid, prompt in (("r1", "old pelicans"), ("r2", "older pelicans")):
        db.execute(
            """INSERT INTO responses (id, conversation_id, chain_id, seq, purpose, model, prompt, text,
               created_at) VALUES (?, 'c1', 'k1', 0, 'chain', 'm', ?, 'yes', ?)""",
            (rid, prompt, time.time()),
        )
    return db


@pytest.mark.parametrize("version", [4, 8])
def test_an_older_index_moves_to_the_triggers_and_finds_every_row(tmp_path: Path, version: int) -> None:
    path = tmp_path / f"v{version}.db"
    if version == 4:  # the first form: an insert trigger indexed every row
        db = _old_log(
            path,
            4,
            """CREATE TRIGGER responses_fts_insert AFTER INSERT ON responses BEGIN
               INSERT INTO responses_fts(rowid, prompt, text)
               VALUES (new.rowid, new.prompt, new.text); END""",
        )
    else:  # migration 5's form: rows above fts_progress.upto waited for a search (here the second)
        db = _old_log(path, 8, "CREATE TABLE fts_progress (upto INTEGER NOT NULL)")
        db.execute(
            "INSERT INTO responses_fts(rowid, prompt, text) SELECT rowid, prompt, text FROM responses LIMIT 1"
        )
        db.execute("INSERT INTO fts_progress VALUES (1)")
    db.execute("COMMIT")
    db.close()
    with Store(path) as store:
        store.write_calls([make_record(prompt="new pelicans", seq=1)])
        found = [r.prompt for r in store.recent(None, query="pelicans")]
        assert found == ["new pelicans", "older pelicans", "old pelicans"]
        assert _indexed(store) == 3  # each row once
        _check_index(store)
        with store.read() as db:
            names = {
                r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type IN ('trigger', 'table')")
            }
        assert {"responses_fts_insert", "responses_fts_delete"} <= names and "fts_progress" not in names


TEXTS = [
    "a * star",
    "a - dash",
    "100% sure",
    "snake_case",
    "it's",
    "back\\slash",
    "x^2",
    "party 🎉 time",
    "東京都に行く",
    "plain foo here",
    "foobar only",
    "nothing special",
]


@pytest.fixture
def searched(store: Store) -> Store:
    for seq, text in enumerate(TEXTS):
        store.write_calls([make_record(prompt="q", text=text, seq=seq, chain_id=f"k{seq}")])
    return store


def _found(store: Store, query: str) -> list[str]:
    return sorted(r.text for r in store.recent(None, query=query))


@pytest.mark.parametrize(
    ("query", "texts"),
    [
        ("*", ["a * star"]),
        ("-", ["a - dash"]),  # a lone '-' is a term, not a NOT
        ("%", ["100% sure"]),
        ("_", ["snake_case"]),
        ("'", ["it's"]),
        ("\\", ["back\\slash"]),
        ("^", ["x^2"]),
        ("🎉", ["party 🎉 time"]),
        ("東京", ["東京都に行く"]),  # 2 characters: scanned
        ("東京都", ["東京都に行く"]),  # 3 or more: the trigram index
        ("に行く", ["東京都に行く"]),
        ("foo", ["foobar only", "plain foo here"]),  # a substring, as grep finds it
        ("foo -bar", ["plain foo here"]),  # -bar: not containing bar
        ("-foo", [t for t in sorted(TEXTS) if "foo" not in t]),
        ("100%", ["100% sure"]),
        ('"quoted', []),  # FTS syntax is never parsed
    ],
)
def test_each_kind_of_query_finds_what_is_there(searched: Store, query: str, texts: list[str]) -> None:
    assert _found(searched, query) == sorted(texts)


def test_an_empty_query_is_refused(searched: Store) -> None:
    for query in ("", "   "):
        with pytest.raises(StoreError, match="search is empty"):
            searched.recent(None, query=query)


def test_the_index_is_of_trigrams_and_declared_for_datasette(store: Store) -> None:
    store.check()
    with store.read() as db:
        [sql] = db.execute("SELECT sql FROM sqlite_master WHERE name = 'responses_fts'").fetchone()
    assert "tokenize='trigram'" in sql and 'content="responses"' in sql  # this SQLite has trigram
    assert store._fts == "trigram"


def test_a_log_of_version_9_moves_to_the_trigram_index(tmp_path: Path) -> None:
    path = tmp_path / "v9.db"
    db = old_log(path, 9)
    db.execute(
        """INSERT INTO responses (id, conversation_id, chain_id, seq, purpose, model, prompt, text,
           created_at) VALUES ('r1', 'c1', 'k1', 0, 'chain', 'm', 'q', '東京都に行く', ?)""",
        (time.time(),),
    )
    db.execute("COMMIT")
    db.close()
    with Store(path) as store:
        assert [r.id for r in store.recent(None, query="東京都")] == ["r1"]
        _check_index(store)
        assert _indexed(store) == 1
