"""Schema migrations of the log, ordered; `PRAGMA user_version` records how many were applied.

A database written by an older chainform is upgraded in place when opened; each migration runs in
the same write transaction as the version bump, so a crash never leaves a half-migrated log.
Never edit a released migration: append a new one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

Migration = str | Callable[[sqlite3.Connection], None]
"""SQL statements run in the migrating transaction, or a function where a step depends on the
SQLite build. The SQL is kept as released, to the whitespace: sqlite_master holds each CREATE's
text, and a fresh log must read as an upgraded one does."""


def _script(db: sqlite3.Connection, script: str) -> None:
    """Run several statements inside the current transaction (`executescript` would COMMIT it)."""
    statement = ""
    for piece in script.split(";"):
        statement += piece + ";"
        if sqlite3.complete_statement(statement):
            if statement.strip(" \n;"):
                db.execute(statement)
            statement = ""


def _search_index_kept_by_triggers(db: sqlite3.Connection) -> None:
    """Full-text search (FTS5 over each call's prompt and text; `responses` holds the text, the
    index only its tokens) kept by triggers: a call is searchable once committed and a search never
    writes. An older form of the index (caught up at search time, `fts_progress`) is replaced, and
    the index is rebuilt from every row. A call's row is never updated, so there is no update
    trigger. A SQLite build without FTS5 gets no index (search uses LIKE)."""
    _script(
        db,
        """
        DROP TRIGGER IF EXISTS responses_fts_insert;
        DROP TRIGGER IF EXISTS responses_fts_delete;
        DROP TABLE IF EXISTS fts_progress;
        """,
    )
    try:
        db.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS responses_fts "
            "USING fts5(prompt, text, content='responses', content_rowid='rowid')"
        )
    except sqlite3.OperationalError:  # no such module: fts5
        return
    _index_rows_and_keep_by_triggers(db)


def _index_rows_and_keep_by_triggers(db: sqlite3.Connection) -> None:
    _script(
        db,
        """
        INSERT INTO responses_fts(responses_fts) VALUES ('rebuild');
        CREATE TRIGGER responses_fts_insert AFTER INSERT ON responses BEGIN
            INSERT INTO responses_fts(rowid, prompt, text) VALUES (new.rowid, new.prompt, new.text);
        END;
        CREATE TRIGGER responses_fts_delete AFTER DELETE ON responses BEGIN
            INSERT INTO responses_fts(responses_fts, rowid, prompt, text)
            VALUES ('delete', old.rowid, old.prompt, old.text);
        END;
        """,
    )


def _search_index_of_trigrams(db: sqlite3.Connection) -> None:
    """The full-text index made again: of trigrams (any script, CJK too, and punctuation are found
    as substrings; a SQLite before 3.34 lacks the tokenizer and keeps a word index), and declared
    with `content="responses"` in double quotes, the form Datasette looks for to offer `_search=`
    on `responses` (migration 9's single quotes hid it). Kept by the same triggers."""
    db.execute("DROP TRIGGER IF EXISTS responses_fts_insert")
    db.execute("DROP TRIGGER IF EXISTS responses_fts_delete")
    db.execute("DROP TABLE IF EXISTS responses_fts")
    for tokenize in (", tokenize='trigram'", ""):
        try:
            db.execute(
                "CREATE VIRTUAL TABLE responses_fts "
                f'USING fts5(prompt, text, content="responses", content_rowid="rowid"{tokenize})'
            )
        except sqlite3.OperationalError:  # no such tokenizer: trigram; no such module: fts5
            continue
        _index_rows_and_keep_by_triggers(db)
        return


MIGRATIONS: list[Migration] = [
    # 1: conversations, the calls of their chains, and each call's tool calls and results.
    """
        CREATE TABLE conversations (
            id TEXT PRIMARY KEY,
            model TEXT,
            name TEXT,
            created_at REAL NOT NULL
        );
        CREATE TABLE responses (
            id TEXT PRIMARY KEY,
            conversation_id TEXT NOT NULL REFERENCES conversations(id),
            chain_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            purpose TEXT NOT NULL,
            strategy TEXT,
            model TEXT NOT NULL,
            prompt TEXT,
            system TEXT,
            messages TEXT,
            options TEXT,
            text TEXT NOT NULL DEFAULT '',
            parsed TEXT,
            input_tokens INTEGER,
            output_tokens INTEGER,
            total_tokens INTEGER,
            additional_counts TEXT,
            duration_ms REAL,
            created_at REAL NOT NULL,
            error TEXT
        );
        CREATE INDEX responses_conversation ON responses(conversation_id, created_at);
        CREATE INDEX responses_chain ON responses(chain_id, seq);
        CREATE INDEX responses_created ON responses(created_at, id);
        CREATE TABLE tool_calls (
            id INTEGER PRIMARY KEY,
            response_id TEXT NOT NULL REFERENCES responses(id),
            call_id TEXT,
            name TEXT NOT NULL,
            arguments TEXT
        );
        CREATE INDEX tool_calls_response ON tool_calls(response_id);
        CREATE TABLE tool_results (
            id INTEGER PRIMARY KEY,
            response_id TEXT NOT NULL REFERENCES responses(id),
            call_id TEXT,
            name TEXT,
            output TEXT,
            error TEXT
        );
        CREATE INDEX tool_results_response ON tool_results(response_id);
        """,
    # 2: schemas, stored once by content address, and the context a formatting call was given.
    """
        CREATE TABLE schemas (
            id TEXT PRIMARY KEY,
            content TEXT NOT NULL,
            created_at REAL NOT NULL
        );
        ALTER TABLE responses ADD COLUMN schema_id TEXT REFERENCES schemas(id);
        CREATE INDEX responses_schema ON responses(schema_id);
        CREATE TABLE format_contexts (
            response_id TEXT PRIMARY KEY REFERENCES responses(id),
            policy TEXT,
            context TEXT NOT NULL
        );
        """,
    # 3: full-text search. Its index is made by migration 9, which also replaces the older forms
    # this step and migration 5 used to make (kept by triggers; caught up at search time), so
    # whatever version a log comes from it ends with the same index; nothing is left to do here.
    "",
    # 4: rows of a subagent's chain name the chain and tool call that started it (NULL otherwise).
    """
        ALTER TABLE responses ADD COLUMN parent_conversation_id TEXT;
        ALTER TABLE responses ADD COLUMN parent_chain_id TEXT;
        ALTER TABLE responses ADD COLUMN parent_tool_call_id TEXT;
        ALTER TABLE responses ADD COLUMN agent_name TEXT;
        CREATE INDEX responses_parent ON responses(parent_conversation_id);
        """,
    # 5: lighter commits: the indexes kept only for rare filters are gone (this step also moved the
    # full-text index to indexing at search time; migration 9 replaced that). Rows are read newest
    # first by rowid, so `logs --chain`/`--schema` find recent matches at once and scan for old
    # ones; only `logs rm --before` filters on created_at; nothing on the parent. The conversation
    # index stays: `-c` reads a conversation's history at every turn. The `journal` table held a
    # sync chain's calls until a read spread them (store/_legacy.py drains what an old version left).
    """
        DROP INDEX IF EXISTS responses_created;
        DROP INDEX IF EXISTS responses_parent;
        DROP INDEX IF EXISTS responses_chain;
        DROP INDEX IF EXISTS responses_schema;
        CREATE TABLE journal (id INTEGER PRIMARY KEY, format INTEGER NOT NULL, rows TEXT NOT NULL)
    """,
    # 6: attached files, each once by the sha256 of its bytes (store/_attachments.py), and which
    # calls sent them; a call's messages name a file by that key instead of holding its bytes.
    # Calls logged before keep their inline bytes and read as they did.
    """
        CREATE TABLE attachments (
            sha256 TEXT PRIMARY KEY,
            media_type TEXT NOT NULL,
            size INTEGER,
            content BLOB,
            ref TEXT,
            created_at REAL NOT NULL
        );
        CREATE TABLE response_attachments (
            response_id TEXT NOT NULL REFERENCES responses(id),
            position INTEGER NOT NULL,
            sha256 TEXT NOT NULL REFERENCES attachments(sha256),
            name TEXT,
            method TEXT,
            detail TEXT,
            PRIMARY KEY (response_id, position)
        );
        CREATE INDEX response_attachments_file ON response_attachments(sha256);
        """,
    # 7: what each call cost in USD (exact decimal text; NULL when its price was unknown).
    "ALTER TABLE responses ADD COLUMN cost TEXT",
    # 8: the provider batches of `map --batch` runs: the intent (its rows' custom_ids) is written
    # before the batch is submitted, the provider's batch id right after (_map/_batch_log.py); and
    # the run id of each output file, which a resume needs before the file holds any row.
    """
        CREATE TABLE map_batches (
            id TEXT PRIMARY KEY,
            run_id TEXT NOT NULL,
            provider TEXT NOT NULL,
            round INTEGER NOT NULL,
            custom_ids TEXT NOT NULL,
            batch_id TEXT,
            status TEXT NOT NULL DEFAULT 'intent',
            created_at REAL NOT NULL
        );
        CREATE INDEX map_batches_run ON map_batches(run_id);
        CREATE TABLE map_runs (
            output TEXT PRIMARY KEY,
            run_id TEXT NOT NULL,
            created_at REAL NOT NULL
        );
        """,
    # 9: the full-text index kept by triggers (a function: the SQLite build may lack FTS5).
    _search_index_kept_by_triggers,
    # 10: why each call stopped (its finish reason: stop, length, tool_calls, ...), and on the call
    # whose tool ended the chain (`stop_at_tools`, `cf.Final`), that tool's name.
    """
        ALTER TABLE responses ADD COLUMN finish_reason TEXT;
        ALTER TABLE responses ADD COLUMN ended_by TEXT;
        """,
    # 11: fragments (`-f`, `--sf`): each text once by the sha256 of its text (store/_fragments.py),
    # and which calls sent it; a call's messages keep a fragment's part empty, marked with its id.
    """
        CREATE TABLE fragments (
            sha256 TEXT PRIMARY KEY,
            content TEXT NOT NULL,
            source TEXT,
            created_at REAL NOT NULL
        );
        CREATE TABLE response_fragments (
            response_id TEXT NOT NULL REFERENCES responses(id),
            sha256 TEXT NOT NULL REFERENCES fragments(sha256),
            PRIMARY KEY (response_id, sha256)
        );
        CREATE INDEX response_fragments_fragment ON response_fragments(sha256);
        """,
    # 12: the full-text index of trigrams, declared so that Datasette finds it.
    _search_index_of_trigrams,
    # 13: chains as data (store/_chains.py): each chain's spec (chain/_spec.py, JSON), its status
    # (running, done, failed, interrupted, waiting) and the tool calls it waits on; and, for a call
    # that raised, what it raised (a resume replays it: chain/_journal.py).
    """
        CREATE TABLE chains (
            id TEXT PRIMARY KEY,
            conversation_id TEXT NOT NULL,
            model TEXT NOT NULL,
            spec TEXT NOT NULL,
            status TEXT NOT NULL,
            pending TEXT,
            error TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        );
        CREATE INDEX chains_status ON chains(status);
        ALTER TABLE responses ADD COLUMN failure TEXT;
        """,
    # 14: the files a chain's spec holds (its prompt's and history's inline bytes, stored once by
    # sha256 in `attachments` as the calls' are), linked to the chain: kept while the chain is.
    """
        CREATE TABLE chain_attachments (
            chain_id TEXT NOT NULL REFERENCES chains(id),
            sha256 TEXT NOT NULL REFERENCES attachments(sha256),
            PRIMARY KEY (chain_id, sha256)
        );
        CREATE INDEX chain_attachments_file ON chain_attachments(sha256);
        """,
]


def user_version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def migrate(db: sqlite3.Connection, upto: int | None = None) -> int:
    """Apply the pending migrations (up to `upto`, for tests) inside the caller's write transaction."""
    target = len(MIGRATIONS) if upto is None else upto
    current = user_version(db)
    for number in range(current, target):
        step = MIGRATIONS[number]
        if isinstance(step, str):
            _script(db, step)
        else:
            step(db)
        db.execute(f"PRAGMA user_version = {number + 1}")
    return max(current, target)
