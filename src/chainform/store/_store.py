"""The SQLite log: every model call of every chain, its tool calls/results, schemas, format contexts.

Writes go through one writer thread per log (store/_writer.py), so the event loop never waits on
SQLite; reads run on the caller's thread.

Several processes may log at once (a shell loop of `chainform` calls, parallel scripts): the
database runs in WAL mode, every write is one `BEGIN IMMEDIATE` transaction (so writers queue on
the lock instead of failing when a read transaction tries to upgrade), SQLite's busy timeout
waits for the lock and a bounded retry with jittered backoff covers what the timeout cannot.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from pydantic_core import to_json

from chainform.store._attachments import ORPHAN_FILES
from chainform.store._damage import as_store_error, check_intact
from chainform.store._fts import catch_up, ensure_fts, has_fts, search_clause
from chainform.store._home import create_private, default_path
from chainform.store._journal import FORMAT, pending, spread, stage
from chainform.store._migrations import MIGRATIONS, migrate, user_version
from chainform.store._records import CallRecord, SchemaInfo, StoreError
from chainform.store._rows import (
    SELECT,
    Rows,
    filters,
    insert_call,
    insert_calls,
    insert_schema,
    read_call,
    rows_of,
    upsert_conversation,
)
from chainform.store._spool import AVAILABLE as SPOOLING
from chainform.store._spool import Spool
from chainform.store._writer import AUTOCHECKPOINT_PAGES, Checkpointer, Writer, weakly

T = TypeVar("T")

BUSY_TIMEOUT_MS = 30_000
_RETRIES = 12


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class Store:
    """The call log. Cheap to create; the connection opens (and migrates) on first use."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()
        self._db: sqlite3.Connection | None = None
        self._pid = 0
        self._lock = threading.RLock()
        self._fts = False
        self._writer = Writer(weakly(self._write), name=f"chainform-log-writer {self.path.name}")
        self._checkpointer = Checkpointer(self.path, BUSY_TIMEOUT_MS / 1000)
        self._spool = Spool(self.path)

    # -- connection -------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        # A connection must not cross fork(): a child process opens its own.
        if self._db is not None and self._pid == os.getpid():
            return self._db
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            create_private(self.path)
            db = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open the log at {self.path}: {exc}") from exc
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._db, self._pid = db, os.getpid()
        try:
            self._retry(lambda: db.execute("PRAGMA journal_mode = WAL").fetchone())
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute(f"PRAGMA wal_autocheckpoint = {AUTOCHECKPOINT_PAGES}")  # see store/_writer.py
            db.execute("PRAGMA foreign_keys = ON")
            check_intact(db, self.path)
            if user_version(db) < len(MIGRATIONS):
                self._write(migrate)
            elif user_version(db) > len(MIGRATIONS):
                raise StoreError(
                    f"the log at {self.path} was written by a newer chainform "
                    f"(schema version {user_version(db)} > {len(MIGRATIONS)}); upgrade chainform"
                )
            self._fts = has_fts(db) or self._write(ensure_fts)
        except sqlite3.DatabaseError as exc:  # not a database, unreadable, a directory in its place
            self._db = None
            db.close()
            raise StoreError(f"cannot use the log at {self.path}: {exc}") from exc
        except BaseException:
            self._db = None
            db.close()
            raise
        return db

    def check(self) -> None:
        """Open (and migrate) the log now, so an unusable file is reported before any model call."""
        with self._lock:
            self._connect()

    def close(self) -> None:
        """Commit what the writer holds, then close the connection (the store reopens on use)."""
        self.flush()
        self._checkpointer.close()
        self._spool.close()
        with self._lock:
            if self._db is not None and self._pid == os.getpid():
                self._db.close()
            self._db = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _retry(self, fn: Callable[[], T]) -> T:
        delay = 0.01
        for attempt in range(_RETRIES):
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or attempt == _RETRIES - 1:
                    raise StoreError(f"log database error ({self.path}): {exc}") from exc
                time.sleep(delay * (1 + random.random()))
                delay = min(delay * 2, 1.0)
        raise AssertionError("unreachable")

    def _write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn` in one immediate write transaction, retried as a whole when the lock is busy."""
        with self._lock:
            db = self._db if self._db is not None and self._pid == os.getpid() else self._connect()

            def attempt() -> T:
                db.execute("BEGIN IMMEDIATE")
                try:
                    result = fn(db)
                    db.execute("COMMIT")
                except BaseException:
                    if db.in_transaction:
                        db.execute("ROLLBACK")
                    raise
                return result

            try:
                result = self._retry(attempt)
            except sqlite3.Error as exc:  # a constraint, a value SQLite cannot store, ...
                raise as_store_error(exc, self.path, "cannot write to the log") from exc
        self._checkpointer.committed()
        return result

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        self._spread()
        with self._lock:
            db = self._connect()
            try:
                yield db
            except sqlite3.DatabaseError as exc:  # locked, malformed, ...
                raise as_store_error(exc, self.path, "log database error") from exc

    # -- writing ----------------------------------------------------------------------------

    def ensure_conversation(self, conversation_id: str, model: str, name: str | None = None) -> None:
        """Record a conversation (idempotent); a later name fills in a missing one."""
        self._write(lambda db: upsert_conversation(db, conversation_id, model, name))

    def save_schema(self, schema: dict[str, Any]) -> str:
        """Store a schema under the sha256 of its canonical JSON and return that id."""
        return self._write(lambda db: insert_schema(db, schema))

    def submit(self, record: CallRecord) -> Future[str]:
        """Queue one model call for the writer thread; the future resolves once it is committed."""
        return self._writer.submit(lambda db: insert_call(db, record))

    def submit_all(self, records: list[CallRecord]) -> Future[None]:
        """Queue model calls to be written in ONE transaction; the future resolves once committed."""
        return self.submit_rows(rows_of(records))

    def submit_rows(self, rows: Rows) -> Future[None]:
        """Queue the rows of model calls (a chain's, `rows_of`) to be written in ONE transaction;
        the future resolves once it is committed."""
        return self._writer.submit(lambda db: insert_calls(db, rows))

    def write_now(self, records: list[CallRecord]) -> None:
        """Keep calls on this thread, through `stage_now` (the spool, or one journal row)."""
        if records:
            self.stage_now(rows_of(records))

    def stage_now(self, rows: Rows) -> None:
        """Keep the rows of calls (`rows_of`) on this thread, as one record of the spool
        (store/_spool.py; as a journal row where it cannot be used or files are attached): a sync
        chain that runs alone, and the exit hook (no new thread then)."""
        if SPOOLING and "attachments" not in rows:
            self.stage_record(FORMAT, to_json(rows))
        else:  # no spool: the rows are encoded once, by the journal
            self._write(lambda db: stage(db, rows))

    def stage_record(self, fmt: int, data: bytes) -> bool:
        """Append a chain's record in spool format `fmt` (store/_compact.py) on this thread, as
        `stage_now` does its rows; False where there is no spool (the caller writes rows)."""
        if not SPOOLING:
            return False
        if self._db is None or self._pid != os.getpid():
            self.check()  # the log exists, migrated, before its spool
        self._spool.append(fmt, data)
        return True

    def _spread(self) -> None:
        """Bring the tables up to date with the journal before a read (a write transaction, only
        when there is something to spread). A log this process cannot write is read as it is."""
        with self._lock:
            try:
                has_pending = pending(self._connect())
            except sqlite3.DatabaseError as exc:
                raise as_store_error(exc, self.path, "log database error") from exc
        if SPOOLING and self._spool.pending():
            try:
                self._spool.drain(self._write)
            except (StoreError, OSError) as exc:
                warnings.warn(f"chainform: the log shows no chain still in its spool: {exc}", stacklevel=3)
        if has_pending:
            try:
                self._write(spread)
            except StoreError as exc:
                warnings.warn(f"chainform: the log shows no chain still in its journal: {exc}", stacklevel=3)

    def log_call(self, record: CallRecord) -> str:
        """Write one model call and wait for its commit (what `submit` does, synchronously)."""
        return self.submit(record).result()

    # -- maintenance ------------------------------------------------------------------------

    def backup(self, target: Path | str) -> Path:
        """Copy the log to `target` with SQLite's online backup (safe while others write)."""
        target = Path(target)
        if target.exists():
            raise StoreError(f"{target} exists; give a new file name")
        self.flush()
        with contextlib.suppress(StoreError):  # a damaged log is copied as it is: the way to keep it
            self._spread()
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            source = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000)
            with contextlib.closing(source), contextlib.closing(sqlite3.connect(target)) as out:
                source.backup(out)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot back up the log to {target}: {exc}") from exc
        return target

    def remove(
        self,
        ids: list[str] | None = None,
        *,
        conversation_id: str | None = None,
        before: float | None = None,
    ) -> int:
        """Delete calls by id, by conversation, or logged before a time (all given must hold); the count.

        Conversations and schemas nothing refers to any more go too.
        """
        clauses, args = filters(ids=ids, conversation_id=conversation_id, before=before)
        if not clauses:
            raise StoreError("say which calls to remove: ids, a conversation or a date")
        selected = "SELECT r.id FROM responses r WHERE " + " AND ".join(clauses)

        def delete(db: sqlite3.Connection) -> int:
            spread(db)
            for table in ("tool_calls", "tool_results", "format_contexts", "response_attachments"):
                db.execute(f"DELETE FROM {table} WHERE response_id IN ({selected})", args)
            count = db.execute(f"DELETE FROM responses WHERE id IN ({selected})", args).rowcount
            db.execute("DELETE FROM conversations WHERE id NOT IN (SELECT conversation_id FROM responses)")
            db.execute(
                "DELETE FROM schemas WHERE id NOT IN (SELECT schema_id FROM responses WHERE schema_id IS NOT NULL)"
            )
            db.execute(ORPHAN_FILES)
            return int(count)

        self.flush()
        self._spread()  # the spool's chains too, before they are chosen
        return self._write(delete)

    def counts(self) -> dict[str, int]:
        """How many calls, conversations and schemas the log holds."""
        with self._read() as db:
            return {
                table: int(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
                for table in ("responses", "conversations", "schemas")
            }

    def flush(self) -> None:
        """Wait until everything queued for the writer is committed."""
        self._writer.flush()

    # -- reading ----------------------------------------------------------------------------

    def get_schema(self, id_or_prefix: str) -> dict[str, Any] | None:
        """A saved schema by full id or unique prefix (at least 4 characters)."""
        key = id_or_prefix.strip().lower()
        if len(key) < 4 or any(c not in "0123456789abcdef" for c in key):
            return None
        with self._read() as db:
            rows = db.execute(
                "SELECT id, content FROM schemas WHERE id >= ? AND id < ? LIMIT 2", (key, key + "g")
            ).fetchall()
        if len(rows) > 1:
            raise StoreError(f"schema id prefix {id_or_prefix!r} is ambiguous; give more characters")
        return json.loads(rows[0][1]) if rows else None

    def list_schemas(self) -> list[SchemaInfo]:
        """Saved schemas, most recently used first."""
        with self._read() as db:
            rows = db.execute(
                """SELECT s.id, s.content, s.created_at, COUNT(r.id), MAX(r.created_at)
                   FROM schemas s LEFT JOIN responses r ON r.schema_id = s.id
                   GROUP BY s.id ORDER BY COALESCE(MAX(r.created_at), s.created_at) DESC"""
            ).fetchall()
        return [SchemaInfo(r[0], json.loads(r[1]), r[2], r[3], r[4]) for r in rows]

    def last_conversation_id(self) -> str | None:
        """The conversation of the most recent logged call (what `-c/--continue` resumes)."""
        with self._read() as db:
            row = db.execute("SELECT conversation_id FROM responses ORDER BY rowid DESC LIMIT 1").fetchone()
        return str(row[0]) if row else None

    def recent(
        self,
        n: int | None = 3,
        *,
        conversation_id: str | None = None,
        query: str | None = None,
        schema_id: str | None = None,
        chain_id: str | None = None,
    ) -> list[CallRecord]:
        """The `n` most recently logged calls (newest first) matching every filter; n=None: all.

        `query` is full-text search over prompts and response texts (all words must occur);
        `schema_id` may be a unique prefix.
        """
        where, args = filters(conversation_id=conversation_id, chain_id=chain_id, schema_id=schema_id)
        if query is not None and query.strip():
            clause, extra = search_clause(query, self._searchable())
            where.append(clause)
            args += extra
        with self._read() as db:
            sql = f"""SELECT {SELECT} FROM responses r
                     LEFT JOIN conversations c ON c.id = r.conversation_id
                     LEFT JOIN schemas s ON s.id = r.schema_id
                     LEFT JOIN format_contexts f ON f.response_id = r.id"""
            if where:
                sql += " WHERE " + " AND ".join(where)
            sql += " ORDER BY r.rowid DESC"
            if n is not None:
                sql += " LIMIT ?"
                args.append(n)
            rows = db.execute(sql, args).fetchall()
            return [read_call(db, row) for row in rows]

    def _searchable(self) -> bool:
        """Index what was logged since the last search (store/_fts.py); False: search with LIKE."""
        self.check()
        if not self._fts:
            return False
        self.flush()
        self._spread()  # the spool's chains too
        try:
            self._write(lambda db: (spread(db), catch_up(db)))
        except StoreError:  # a log we may read but not write (a read-only copy): LIKE sees every row
            return False
        return True
