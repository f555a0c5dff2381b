"""The SQLite log: every model call of every chain, its tool calls/results, schemas, format contexts.

A plain SQLite database: what a chain logged is in its tables once the call is committed, for
sqlite3, sqlite-utils or Datasette to read. Writes run on the caller's thread, one transaction
each (a chain's logger tries `write_calls(wait=False)` on its event loop's thread and, when the
log is busy, writes on a worker thread, chain/_calls.py); reads too.

Several processes may log at once (a shell loop of `chainform` calls, parallel scripts): the
database runs in WAL mode, every write is one `BEGIN IMMEDIATE` transaction (so writers queue on
the lock instead of failing when a read transaction tries to upgrade), and SQLite's busy timeout
waits for the lock: `CHAINFORM_LOG_TIMEOUT` seconds (30 unless set), after which the log reports
it is locked. A page that went bad (a disk fault, a copy taken mid-write) is not noticed by SQLite
until a statement reads it: `PRAGMA quick_check` on open finds it first (LogDamagedError).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from chainform._paths import create_private, default_path
from chainform.errors import StoreError
from chainform.store import _chains
from chainform.store._advice import (
    LogLockedError,
    LogSettingError,
    Unlogged,
    as_store_error,
    check_intact,
    holders,
)
from chainform.store._attachments import ORPHAN_FILES, Attached, Blobs, content_of, of_chain
from chainform.store._chains import ChainRow, ChainStatus
from chainform.store._fragments import ORPHAN_FRAGMENTS, Fragment
from chainform.store._fragments import find as find_fragments
from chainform.store._fragments import listing as fragment_listing
from chainform.store._legacy import SPOOL, drain_legacy
from chainform.store._migrations import MIGRATIONS, migrate, user_version
from chainform.store._rows import SELECT, CallRecord, filters, insert_schema, read_call, rows_of, write_rows
from chainform.store._serialize import storable_row

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 30.0


def lock_timeout() -> float:
    """How long a write waits for another process's lock: `CHAINFORM_LOG_TIMEOUT` seconds, else 30."""
    text = os.environ.get("CHAINFORM_LOG_TIMEOUT", "").strip()
    if not text:
        return DEFAULT_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        raise LogSettingError(f"CHAINFORM_LOG_TIMEOUT is {text!r}, not a number of seconds") from None
    if not 0 <= value <= 3600:
        raise LogSettingError(f"CHAINFORM_LOG_TIMEOUT is {text}; give 0 to 3600 seconds")
    return value


@dataclass
class SchemaInfo:
    """A saved schema and how often the log used it."""

    id: str
    content: dict[str, Any]
    created_at: float
    uses: int
    last_used: float | None


class LogBusy(StoreError):
    """A write asked not to wait (`wait=False`) found the log in use: another writer (a thread or a
    process) holds it, or it is not open yet (opening may migrate it)."""


class _Undo(Exception):
    """Raised inside a write transaction to roll it back (`Store.check`)."""


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class Store:
    """The call log. Cheap to create; the connection opens (and migrates) on first use."""

    def __init__(self, path: Path | str | None = None) -> None:
        self.path = Path(path) if path is not None else default_path()
        self._db: sqlite3.Connection | None = None
        self._pid = 0
        self._lock = threading.RLock()  # one connection, used by the caller's and worker threads
        self._fts: str | None = None  # the full-text index: "trigram", "words" (older SQLite) or none
        self._timeout_s = DEFAULT_TIMEOUT_S
        self.unlogged = Unlogged()  # calls that could not be written: one warning on close or at exit
        weakref.finalize(self, self.unlogged.report)

    # -- connection -------------------------------------------------------------------------

    def _open_here(self) -> sqlite3.Connection | None:
        """This process's connection to the log, if it is open (a connection must not cross
        fork(): a child process opens its own)."""
        return self._db if self._pid == os.getpid() else None

    def _connect(self) -> sqlite3.Connection:
        if (open_db := self._open_here()) is not None:
            return open_db
        self._timeout_s = lock_timeout()
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            create_private(self.path)
            db = sqlite3.connect(
                self.path, timeout=self._timeout_s, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(
                f"cannot open the log at {self.path}: {exc}; it must be a file this user can read and "
                "write: move what is there aside, with its -wal and -shm files if any (a new log is created)"
            ) from exc
        self._db, self._pid = db, os.getpid()
        try:
            self._retry(lambda: db.execute("PRAGMA journal_mode = WAL").fetchone())
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute("PRAGMA foreign_keys = ON")
            check_intact(db, self.path)
            if user_version(db) > len(MIGRATIONS):
                raise StoreError(
                    f"the log at {self.path} was written by a newer chainform "
                    f"(schema version {user_version(db)} > {len(MIGRATIONS)}); upgrade chainform"
                )
            if user_version(db) < len(MIGRATIONS):
                self.write(migrate)
            fts = db.execute("SELECT sql FROM sqlite_master WHERE name = 'responses_fts'").fetchone()
            self._fts = None if fts is None else "trigram" if "trigram" in fts[0] else "words"  # None: LIKE
            spool = Path(f"{self.path}{SPOOL}")  # what chainform 0.x left beside the tables, if anything
            if spool.exists() or db.execute("SELECT 1 FROM journal LIMIT 1").fetchone() is not None:
                drain_legacy(db, spool, self.write)
        except BaseException as exc:
            self._db = None
            db.close()
            if isinstance(exc, sqlite3.DatabaseError):  # not a database, unreadable, a directory in its place
                raise as_store_error(exc, self.path, "cannot use the log") from exc
            raise
        return db

    def check(self) -> None:
        """Open (and migrate) the log now and try a write (never committed), so a file that cannot
        be used (not SQLite, read-only, locked past the timeout) is reported before any model call."""

        def write_and_undo(db: sqlite3.Connection) -> None:
            db.execute(f"PRAGMA user_version = {user_version(db)}")
            raise _Undo

        with contextlib.suppress(_Undo):
            self.write(write_and_undo)

    def close(self) -> None:
        """Close the connection (the store reopens on use); the calls that could not be logged
        since the last close are told in one warning."""
        self.unlogged.report()
        with self._lock:
            if (open_db := self._open_here()) is not None:
                open_db.close()
            self._db = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _retry(self, fn: Callable[[], T]) -> T:
        """`fn`, tried again while the log is busy (SQLite's busy timeout does not cover every
        case, e.g. a WAL being recovered) until the lock timeout has passed since the first try."""
        deadline = time.monotonic() + self._timeout_s
        delay = 0.01
        while True:
            try:
                return fn()
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc):
                    raise as_store_error(exc, self.path, "log database error") from exc
                if time.monotonic() >= deadline:
                    raise LogLockedError(self.path, self._timeout_s, holders(self.path)) from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.5)

    def write(self, fn: Callable[[sqlite3.Connection], T], *, wait: bool = True) -> T:
        """Run `fn` in one immediate write transaction, retried as a whole when the lock is busy
        (up to the lock timeout). `wait=False` makes one try that waits for nothing: LogBusy when
        the log is not open yet or another writer holds it (the chain's logger then writes on a
        worker thread, chain/_calls.py).

        `read` and `write` are also how a module runs the queries only it needs, beside its code:
        map's batch records (_map/_batch_log.py), an eval's call summaries (evals/_summaries.py),
        `logs cost` (cli/_money.py)."""
        if not self._lock.acquire(blocking=wait):
            raise LogBusy(f"the log at {self.path} is in use by another thread")
        try:
            if not wait and self._open_here() is None:
                raise LogBusy(f"the log at {self.path} is not open yet")
            db = self._connect()

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
                return self._retry(attempt) if wait else self._at_once(db, attempt)
            except sqlite3.Error as exc:  # a constraint, a value SQLite cannot store, read-only...
                raise as_store_error(exc, self.path, "cannot write to the log") from exc
        finally:
            self._lock.release()

    def _at_once(self, db: sqlite3.Connection, attempt: Callable[[], T]) -> T:
        """`attempt` with SQLite's busy timeout at 0 (another process's lock: LogBusy at once)."""
        db.execute("PRAGMA busy_timeout = 0")
        try:
            return attempt()
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                raise LogBusy(f"the log at {self.path} is locked by another process") from exc
            raise
        finally:
            db.execute(f"PRAGMA busy_timeout = {int(self._timeout_s * 1000)}")  # as connect() set it

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """The log's connection, held for a read (an SQLite error becomes a StoreError)."""
        with self._lock:
            db = self._connect()
            try:
                yield db
            except sqlite3.DatabaseError as exc:  # locked, malformed, ...
                raise as_store_error(exc, self.path, "log database error") from exc

    # -- writing ----------------------------------------------------------------------------

    def save_schema(self, schema: dict[str, Any]) -> str:
        """Store a schema under the sha256 of its canonical JSON and return that id."""
        return self.write(lambda db: insert_schema(db, schema))

    def write_calls(
        self, records: Sequence[CallRecord], attached: Sequence[Attached] = (), *, wait: bool = True
    ) -> None:
        """Commit model calls in one transaction on this thread (`rows_of`: their conversations,
        schemas, tool calls and results; `attached`: the files they sent); `wait` as in `write`."""
        rows = rows_of(records, attached)
        self.write(lambda db: write_rows(db, rows), wait=wait)

    def write_tool_results(
        self, response_id: str, results: Sequence[tuple[str, str, str, str | None]], *, wait: bool = True
    ) -> None:
        """Add tool results (call_id, name, output, error) to a committed call, as they return."""
        self.write(lambda db: _chains.add_tool_results(db, response_id, list(results)), wait=wait)

    def mark_ended(self, response_id: str, tool: str, parsed: Any, *, wait: bool = True) -> None:
        """Record on a committed call that its tool's result ended the chain (`ended_by`) and the
        value it gave (`parsed`): the call was committed before its tools ran."""
        self.write(lambda db: _chains.mark_ended(db, response_id, tool, parsed), wait=wait)

    # -- chains (store/_chains.py) ----------------------------------------------------------

    def begin_chain(
        self,
        row: ChainRow,
        attached: Sequence[Attached] = (),
        blobs: Blobs | None = None,
        *,
        name: str | None = None,
        wait: bool = True,
    ) -> None:
        """Record a chain that starts (status "running"; a resumed chain keeps its row), and the
        files its spec holds by sha256 (`blobs`, kept as the chain's `attached` says) once each;
        `name`: its conversation's, written with it (a map row's, so a resume finds the row's chain)."""
        files = of_chain(row.id, list(attached), blobs or {})
        rows = {key: [storable_row(r) for r in params] for key, params in files.items()}

        def begin(db: sqlite3.Connection) -> None:
            _chains.begin(db, row, name)
            write_rows(db, rows)

        self.write(begin, wait=wait)

    def attachment(self, sha256: str) -> bytes | None:
        """The bytes of the file logged under `sha256` (a file logged as a reference is read again
        when it is unchanged); None when the log holds no such file or the referenced file changed."""
        with self.read() as db:
            return content_of(db, sha256, read_refs=True)

    def set_chain_status(
        self,
        chain_id: str,
        status: ChainStatus,
        *,
        error: str | None = None,
        pending: list[dict[str, Any]] | None = None,
        wait: bool = True,
    ) -> None:
        self.write(
            lambda db: _chains.set_status(db, chain_id, status, error=error, pending=pending), wait=wait
        )

    def chains(self, id_or_prefix: str) -> list[ChainRow]:
        """The logged chains whose id is `id_or_prefix` or starts with it."""
        with self.read() as db:
            return _chains.read(db, id_or_prefix)

    def named_chains(self, prefix: str) -> dict[str, tuple[str, ChainStatus]]:
        """The newest chain of each conversation whose name starts with `prefix` (a map run's rows:
        `map <run id> `), by the rest of the name: (chain id, status)."""
        with self.read() as db:
            return _chains.named(db, prefix)

    def unfinished_chains(self, limit: int | None = None) -> list[ChainRow]:
        """Chains that did not end (running, interrupted, waiting), newest first."""
        with self.read() as db:
            return _chains.unfinished(db, limit)

    # -- maintenance ------------------------------------------------------------------------

    def backup(self, target: Path | str) -> Path:
        """Copy the log to `target` with SQLite's online backup (safe while others write)."""
        target = Path(target)
        if target.exists():
            raise StoreError(f"{target} exists; give a new file name")
        timeout = lock_timeout()
        with contextlib.suppress(StoreError), self._lock:  # an old spool drained first (store/_legacy.py),
            self._connect()  # unless the log is damaged: it is copied as it is, the way to keep it
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            mode = self.path.stat().st_mode & 0o777  # the copy is as private as the log
            fd = os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode)
        except OSError as exc:
            raise StoreError(f"cannot back up the log to {target}: {exc}") from exc
        try:
            os.fchmod(fd, mode)  # whatever the umask
            os.close(fd)
            source = sqlite3.connect(self.path, timeout=timeout)
            with contextlib.closing(source), contextlib.closing(sqlite3.connect(target)) as out:
                source.backup(out)
        except (OSError, sqlite3.Error) as exc:
            target.unlink(missing_ok=True)  # no half copy left to be taken for a backup
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
            for table in (
                "tool_calls",
                "tool_results",
                "format_contexts",
                "response_attachments",
                "response_fragments",
            ):
                db.execute(f"DELETE FROM {table} WHERE response_id IN ({selected})", args)
            count = db.execute(f"DELETE FROM responses WHERE id IN ({selected})", args).rowcount
            db.execute("DELETE FROM conversations WHERE id NOT IN (SELECT conversation_id FROM responses)")
            gone = "SELECT id FROM chains WHERE status IN ('done', 'failed') AND id NOT IN (SELECT chain_id FROM responses)"
            db.execute(f"DELETE FROM chain_attachments WHERE chain_id IN ({gone})")  # an ended chain none
            db.execute(f"DELETE FROM chains WHERE id IN ({gone})")  # of whose calls is left
            db.execute(
                "DELETE FROM schemas WHERE id NOT IN (SELECT schema_id FROM responses WHERE schema_id IS NOT NULL)"
            )
            db.execute(ORPHAN_FILES)
            db.execute(ORPHAN_FRAGMENTS)
            return int(count)

        return self.write(delete)

    def counts(self) -> dict[str, int]:
        """How many calls, conversations and schemas the log holds."""
        with self.read() as db:
            return {
                table: int(db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
                for table in ("responses", "conversations", "schemas")
            }

    # -- reading ----------------------------------------------------------------------------

    def get_fragment(self, id_or_prefix: str) -> Fragment | None:
        """The fragment whose id (sha256 of its text) is or starts with `id_or_prefix`; None when
        none does; StoreError when the prefix fits several."""
        key = id_or_prefix.strip().lower()
        with self.read() as db:
            found = find_fragments(db, key)
        if len(found) > 1:
            raise StoreError(f"fragment id prefix {id_or_prefix!r} fits several fragments; give more of it")
        return found[0] if found else None

    def list_fragments(self) -> list[tuple[Fragment, int]]:
        """Every logged fragment with how many calls sent it, newest first."""
        with self.read() as db:
            return fragment_listing(db)

    def get_schema(self, id_or_prefix: str) -> dict[str, Any] | None:
        """A saved schema by full id or unique prefix (at least 4 characters)."""
        key = id_or_prefix.strip().lower()
        if len(key) < 4 or any(c not in "0123456789abcdef" for c in key):
            return None
        with self.read() as db:
            rows = db.execute(
                "SELECT id, content FROM schemas WHERE id >= ? AND id < ? LIMIT 2", (key, key + "g")
            ).fetchall()
        if len(rows) > 1:
            raise StoreError(f"schema id prefix {id_or_prefix!r} is ambiguous; give more characters")
        return json.loads(rows[0][1]) if rows else None

    def list_schemas(self) -> list[SchemaInfo]:
        """Saved schemas, most recently used first."""
        with self.read() as db:
            rows = db.execute(
                """SELECT s.id, s.content, s.created_at, COUNT(r.id), MAX(r.created_at)
                   FROM schemas s LEFT JOIN responses r ON r.schema_id = s.id
                   GROUP BY s.id ORDER BY COALESCE(MAX(r.created_at), s.created_at) DESC"""
            ).fetchall()
        return [SchemaInfo(r[0], json.loads(r[1]), r[2], r[3], r[4]) for r in rows]

    def last_conversation_id(self) -> str | None:
        """The conversation of the most recent logged call (what `-c/--continue` resumes)."""
        with self.read() as db:
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
        read_refs: bool = False,
        models: Sequence[str] = (),
        since: float | None = None,
        with_tools: bool = False,
        runs: Sequence[str] = (),
    ) -> list[CallRecord]:
        """The `n` most recently logged calls (newest first) matching every filter; n=None: all.

        `models`: calls of any of these models; `since`: logged at or after this Unix time; `with_tools`: the
        calls of chains that called a tool; `runs`: the calls of these map runs (by run id).

        `query` searches prompts and response texts: every term must occur, a `-term` must not
        (store/_rows.py `search`; an empty query raises StoreError);
        `schema_id` may be a unique prefix. A file logged as a reference (`attachments_store="ref"`)
        is never opened unless `read_refs` (a replay that sends it again): its message part is left
        empty and the call's `attachments` carry its sha256, type, size and path.
        """
        with self.read() as db:
            where, args = filters(
                conversation_id=conversation_id,
                chain_id=chain_id,
                schema_id=schema_id,
                query=query,
                index=self._fts,
                models=models,
                since=since,
                with_tools=with_tools,
                runs=runs,
            )
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
            return [read_call(db, row, read_refs=read_refs) for row in rows]
