"""The SQLite log: every model call of every chain, its tool calls/results, schemas, format contexts.

Several processes may log at once (a shell loop of `chainform` calls, parallel scripts): the
database runs in WAL mode, every write is one `BEGIN IMMEDIATE` transaction (so writers queue on
the lock instead of failing when a read transaction tries to upgrade), SQLite's busy timeout
waits for the lock and a bounded retry with jittered backoff covers what the timeout cannot.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from hashlib import sha256
from pathlib import Path
from typing import Any, TypeVar

from chainform.keys import scrub
from chainform.store._migrations import MIGRATIONS, ensure_fts, migrate, user_version
from chainform.store._records import (
    CallRecord,
    LoggedResponse,
    SchemaInfo,
    StoreError,
    ToolCallRecord,
    ToolResultRecord,
)
from chainform.store._serialize import (
    canonical_json,
    dumps,
    messages_from_json,
    messages_to_json,
    redact,
    storable_row,
)
from chainform.types import Message, UsageDetails

T = TypeVar("T")

BUSY_TIMEOUT_MS = 30_000
_RETRIES = 12


def default_path() -> Path:
    """`<chainform home>/logs.db`; `CHAINFORM_HOME` moves it."""
    from chainform._paths import home

    return home() / "logs.db"


def schema_id(schema: dict[str, Any]) -> str:
    """The content address of a schema: sha256 of its canonical JSON (key order does not matter)."""
    return sha256(canonical_json(schema).encode()).hexdigest()


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

    # -- connection -------------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        # A connection must not cross fork(): a child process opens its own.
        if self._db is not None and self._pid == os.getpid():
            return self._db
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
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
            db.execute("PRAGMA foreign_keys = ON")
            if user_version(db) < len(MIGRATIONS):
                self._write(migrate)
            elif user_version(db) > len(MIGRATIONS):
                raise StoreError(
                    f"the log at {self.path} was written by a newer chainform "
                    f"(schema version {user_version(db)} > {len(MIGRATIONS)}); upgrade chainform"
                )
            has_fts = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'responses_fts'").fetchone()
            self._fts = bool(has_fts) or self._write(ensure_fts)
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

            return self._retry(attempt)

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            db = self._connect()
            try:
                yield db
            except sqlite3.OperationalError as exc:
                raise StoreError(f"log database error ({self.path}): {exc}") from exc

    # -- writing ----------------------------------------------------------------------------

    def ensure_conversation(self, conversation_id: str, model: str, name: str | None = None) -> None:
        """Record a conversation (idempotent); a later name fills in a missing one."""
        self._write(lambda db: self._upsert_conversation(db, conversation_id, model, name))

    @staticmethod
    def _upsert_conversation(db: sqlite3.Connection, cid: str, model: str, name: str | None) -> None:
        db.execute(
            "INSERT OR IGNORE INTO conversations (id, model, name, created_at) VALUES (?, ?, ?, ?)",
            storable_row((cid, model, name, time.time())),
        )
        if name is not None:
            db.execute("UPDATE conversations SET name = ? WHERE id = ? AND name IS NULL", storable_row((name, cid)))

    def save_schema(self, schema: dict[str, Any]) -> str:
        """Store a schema under the sha256 of its canonical JSON and return that id."""
        return self._write(lambda db: self._insert_schema(db, schema))

    @staticmethod
    def _insert_schema(db: sqlite3.Connection, schema: dict[str, Any]) -> str:
        text, sid = canonical_json(schema), schema_id(schema)
        db.execute(
            "INSERT OR IGNORE INTO schemas (id, content, created_at) VALUES (?, ?, ?)",
            (sid, text, time.time()),
        )
        return sid

    def log_call(self, record: CallRecord) -> str:
        """Write one model call with its tool calls/results and format context in one transaction.
        Every loaded key value is masked in what is written (`chainform.keys.scrub`)."""

        def write(db: sqlite3.Connection) -> str:
            self._upsert_conversation(db, record.conversation_id, record.model, None)
            sid = self._insert_schema(db, record.schema) if record.schema is not None else None
            usage = record.usage
            db.execute(
                """INSERT INTO responses (id, conversation_id, chain_id, seq, purpose, strategy, model,
                   prompt, system, messages, options, schema_id, text, parsed, input_tokens,
                   output_tokens, total_tokens, additional_counts, duration_ms, created_at, error)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                storable_row(scrub((
                    record.response_id,
                    record.conversation_id,
                    record.chain_id,
                    record.seq,
                    record.purpose,
                    record.strategy,
                    record.model,
                    record.prompt,
                    record.system,
                    messages_to_json(record.messages),
                    dumps(redact(record.options)),
                    sid,
                    record.text or "",
                    dumps(record.parsed) if record.parsed is not None else None,
                    usage.input_tokens if usage else None,
                    usage.output_tokens if usage else None,
                    usage.total_tokens if usage else None,
                    dumps(usage.additional_counts) if usage and usage.additional_counts else None,
                    record.duration_ms,
                    record.created_at,
                    record.error,
                ))),
            )
            db.executemany(
                "INSERT INTO tool_calls (response_id, call_id, name, arguments) VALUES (?, ?, ?, ?)",
                [storable_row(scrub((record.response_id, c.call_id, c.name, dumps(c.arguments)))) for c in record.tool_calls],
            )
            db.executemany(
                "INSERT INTO tool_results (response_id, call_id, name, output, error) VALUES (?, ?, ?, ?, ?)",
                [storable_row(scrub((record.response_id, r.call_id, r.name, r.output, r.error))) for r in record.tool_results],
            )
            if record.format_context is not None:
                db.execute(
                    "INSERT INTO format_contexts (response_id, policy, context) VALUES (?, ?, ?)",
                    storable_row(scrub((record.response_id, record.format_context_policy, record.format_context))),
                )
            return record.response_id

        return self._write(write)

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
    ) -> list[LoggedResponse]:
        """The `n` most recently logged calls (newest first) matching every filter; n=None: all.

        `query` is full-text search over prompts and response texts (all words must occur);
        `schema_id` may be a unique prefix.
        """
        where: list[str] = []
        args: list[Any] = []
        if conversation_id is not None:
            where.append("r.conversation_id = ?")
            args.append(conversation_id)
        if chain_id is not None:
            where.append("r.chain_id = ?")
            args.append(chain_id)
        if schema_id is not None:
            where.append("r.schema_id >= ? AND r.schema_id < ?")
            args += [schema_id.lower(), schema_id.lower() + "g"]
        with self._read() as db:
            if query is not None and query.strip():
                clause, extra = self._search_clause(query)
                where.append(clause)
                args += extra
            sql = """SELECT r.id, r.conversation_id, c.name, r.chain_id, r.seq, r.purpose, r.strategy,
                     r.model, r.prompt, r.system, r.messages, r.options, r.schema_id, s.content, r.text,
                     r.parsed, r.input_tokens, r.output_tokens, r.total_tokens, r.additional_counts,
                     r.duration_ms, r.created_at, r.error, f.policy, f.context
                     FROM responses r
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
            return [self._logged(db, row) for row in rows]

    def _search_clause(self, query: str) -> tuple[str, list[Any]]:
        words = query.split()
        if self._fts:
            # Each word quoted: user text is never parsed as FTS syntax (AND/OR/NEAR, stray quotes).
            match = " ".join('"' + w.replace('"', '""') + '"' for w in words)
            return "r.rowid IN (SELECT rowid FROM responses_fts WHERE responses_fts MATCH ?)", [match]
        clauses: list[str] = []
        args: list[Any] = []
        for word in words:
            pattern = "%" + word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            clauses.append("(r.prompt LIKE ? ESCAPE '\\' OR r.text LIKE ? ESCAPE '\\')")
            args += [pattern, pattern]
        return "(" + " AND ".join(clauses) + ")", args

    @staticmethod
    def _logged(db: sqlite3.Connection, row: tuple[Any, ...]) -> LoggedResponse:
        rid = row[0]
        calls = db.execute(
            "SELECT call_id, name, arguments FROM tool_calls WHERE response_id = ? ORDER BY id", (rid,)
        ).fetchall()
        results = db.execute(
            "SELECT call_id, name, output, error FROM tool_results WHERE response_id = ? ORDER BY id",
            (rid,),
        ).fetchall()
        usage = None
        if any(v is not None for v in row[16:20]):
            usage = UsageDetails(row[16], row[17], row[18], json.loads(row[19]) if row[19] else {})
        return LoggedResponse(
            id=rid,
            conversation_id=row[1],
            conversation_name=row[2],
            chain_id=row[3],
            seq=row[4],
            purpose=row[5],
            strategy=row[6],
            model=row[7],
            prompt=row[8],
            system=row[9],
            messages=messages_from_json(row[10]),
            options=json.loads(row[11]) if row[11] else {},
            schema_id=row[12],
            schema=json.loads(row[13]) if row[13] else None,
            text=row[14],
            parsed=json.loads(row[15]) if row[15] is not None else None,
            usage=usage,
            duration_ms=row[20],
            created_at=row[21],
            error=row[22],
            tool_calls=[ToolCallRecord(c[0], c[1], json.loads(c[2]) if c[2] else None) for c in calls],
            tool_results=[ToolResultRecord(r[0], r[1] or "", r[2] or "", r[3]) for r in results],
            format_context_policy=row[23],
            format_context=row[24],
        )

    def conversation_messages(self, conversation_id: str) -> list[Message]:
        """The history of a conversation rebuilt from the log, for `-c/--continue` and `--cid`.

        The same history a live `Conversation` keeps (chain/_history.py): prompts, tool calls with
        their results, answers; system prompts are the caller's to give again.
        """
        from chainform.chain._history import history, of_log

        return history(of_log(self.recent(None, conversation_id=conversation_id)))
