"""Opening a log written by an older (or newer) chainform."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest
from store_helpers import old_log

from chainform.store import Store, StoreError
from chainform.store._migrations import MIGRATIONS, migrate, user_version

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def _old_database(path: Path, version: int) -> None:
    db = old_log(path, version)
    db.execute(
        """INSERT INTO responses (id, conversation_id, chain_id, seq, purpose, model, prompt, messages,
           options, text, created_at) VALUES ('r1', 'c1', 'k1', 0, 'chain', 'old-model',
           'pelican facts', ?, '{}', 'Pelicans have pouches', ?)""",
        (
            json.dumps([{"role": "user", "contents": [{"type": "text", "text": "pelican facts"}]}]),
            time.time(),
        ),
    )
    db.execute("COMMIT")
    db.close()


@pytest.mark.parametrize("version", [1, 2, 3])
def test_store_migrates_older_schema(tmp_path: Path, version: int) -> None:
    path = tmp_path / "old.db"
    _old_database(path, version)
    with Store(path) as store:
        [old] = store.recent()
        assert (old.id, old.text, old.schema_id, old.format_context) == (
            "r1",
            "Pelicans have pouches",
            None,
            None,
        )
        assert old.messages[0].text == "pelican facts"
        # rows written before subagent links have none
        assert (old.parent_conversation_id, old.parent_tool_call_id, old.agent_name) == (None, None, None)
        # the full-text index added by a later migration covers rows written before it
        assert [r.id for r in store.recent(None, query="pouches")] == ["r1"]
        store.save_schema({"type": "object"})
    db = sqlite3.connect(path)
    assert user_version(db) == len(MIGRATIONS)
    assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()


def test_a_log_from_before_attachments_keeps_its_inline_bytes_and_takes_new_files(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = old_log(path, 5)
    inline = [{"role": "user", "contents": [{"type": "data", "data": "aGk=", "media_type": "text/plain"}]}]
    db.execute(
        """INSERT INTO responses (id, conversation_id, chain_id, seq, purpose, model, messages, options,
           text, created_at) VALUES ('r1', 'c1', 'k1', 0, 'chain', 'old-model', ?, '{}', 'ok', ?)""",
        (json.dumps(inline), time.time()),
    )
    db.execute("COMMIT")
    db.close()
    with Store(path) as store:
        [old] = store.recent()
        assert old.messages[0].contents[0].data == b"hi" and old.attachments == []  # type: ignore[union-attr]
    db = sqlite3.connect(path)
    assert user_version(db) == len(MIGRATIONS)
    assert db.execute("SELECT COUNT(*) FROM attachments").fetchone() == (0,)
    db.close()


def test_store_refuses_newer_schema(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    db.close()
    with pytest.raises(StoreError, match="newer chainform"):
        Store(path).recent()


def test_store_migration_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    for _ in range(3):
        with Store(path) as store:
            assert store.recent() == []


SCHEMAS = Path(__file__).parent / "data" / "log_schemas.json"
"""The log's schema at each released version (sqlite_master's type, name, table and SQL, in the
order made), recorded from the migrations as released: what an old log holds, independent of how
store/_migrations.py now expresses them."""


def _schema(db: sqlite3.Connection) -> list[list[str]]:
    rows = db.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name"
    )
    return [list(row) for row in rows]


@pytest.mark.parametrize("version", range(len(MIGRATIONS) + 1))
def test_a_log_of_every_older_version_upgrades_to_the_same_schema(tmp_path: Path, version: int) -> None:
    released = json.loads(SCHEMAS.read_text())
    path = tmp_path / f"v{version}.db"
    db = sqlite3.connect(path, isolation_level=None)
    for kind, name, _, sql in released.get(str(version), []):
        if not (kind == "table" and name.startswith("responses_fts_")):  # made by the fts5 table
            db.execute(sql)
    db.execute(f"PRAGMA user_version = {version}")
    db.close()
    Store(path).check()
    db = sqlite3.connect(path)
    assert user_version(db) == len(MIGRATIONS)
    latest = sorted(released[str(len(MIGRATIONS))], key=lambda row: row[1])
    assert _schema(db) == latest
    db.close()


def test_each_version_the_migrations_make_is_the_released_one() -> None:
    released = json.loads(SCHEMAS.read_text())
    db = sqlite3.connect(":memory:", isolation_level=None)
    for version in range(1, len(MIGRATIONS) + 1):
        db.execute("BEGIN")
        migrate(db, upto=version)
        db.execute("COMMIT")
        assert _schema(db) == sorted(released[str(version)], key=lambda row: row[1]), version
