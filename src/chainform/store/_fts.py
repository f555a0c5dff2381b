"""Full-text search over logged prompts and answers (SQLite FTS5), indexed off the commit path.

A chain's commit used to index its rows through an insert trigger: about a quarter of what a
chain's write costs, paid by every chain for a search few of them will see. Now rows are indexed
when somebody searches: `catch_up` adds every row above `fts_progress.upto` in one statement, in
the searching process's write transaction, so each row is indexed once and the chains pay nothing.
Deletes keep the index exact: a row that was indexed is removed from it by a trigger, and `upto`
never stays above the largest remaining rowid (SQLite gives a new row max(rowid) + 1, which must
land above `upto` to be indexed later). Builds of SQLite without FTS5 search with LIKE.
"""

from __future__ import annotations

import sqlite3
from typing import Any


def _run(db: sqlite3.Connection, *statements: str) -> None:
    for statement in statements:
        db.execute(statement)


def fts5_available(db: sqlite3.Connection) -> bool:
    """Some SQLite builds lack FTS5; search then falls back to LIKE."""
    try:
        db.execute("CREATE VIRTUAL TABLE temp._cf_fts_probe USING fts5(x)")
        db.execute("DROP TABLE temp._cf_fts_probe")
    except sqlite3.OperationalError:
        return False
    return True


def has_fts(db: sqlite3.Connection) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE name = 'responses_fts'").fetchone() is not None


def ensure_fts(db: sqlite3.Connection) -> bool:
    """Create the index when FTS5 exists (rows are indexed by the next search); whether search can use it."""
    if not has_fts(db):
        if not fts5_available(db):
            return False
        db.execute(
            "CREATE VIRTUAL TABLE responses_fts USING fts5(prompt, text, content='responses', content_rowid='rowid')"
        )
    index_lazily(db)
    return True


def index_lazily(db: sqlite3.Connection) -> None:
    """Move an index kept by an insert trigger (logs before migration 5) to indexing at search time.

    Idempotent: whatever the trigger indexed stays indexed (`upto` starts at the largest rowid the
    old trigger covered, 0 for a new index)."""
    had_trigger = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = 'responses_fts_insert'"
    ).fetchone()
    _run(
        db,
        "DROP TRIGGER IF EXISTS responses_fts_insert",
        "DROP TRIGGER IF EXISTS responses_fts_delete",
        "CREATE TABLE IF NOT EXISTS fts_progress (upto INTEGER NOT NULL)",
    )
    if db.execute("SELECT 1 FROM fts_progress").fetchone() is None:
        start = "(SELECT COALESCE(MAX(rowid), 0) FROM responses)" if had_trigger else "0"
        db.execute(f"INSERT INTO fts_progress (upto) SELECT {start}")
    db.execute(
        """CREATE TRIGGER responses_fts_delete AFTER DELETE ON responses
           WHEN old.rowid <= (SELECT upto FROM fts_progress)
           BEGIN
               INSERT INTO responses_fts(responses_fts, rowid, prompt, text)
               VALUES ('delete', old.rowid, old.prompt, old.text);
               UPDATE fts_progress SET upto = MIN(upto, (SELECT COALESCE(MAX(rowid), 0) FROM responses));
           END"""
    )


def catch_up(db: sqlite3.Connection) -> int:
    """Index the rows written since the last search (inside the caller's write transaction); how many."""
    (upto,) = db.execute("SELECT upto FROM fts_progress").fetchone()
    added = db.execute(
        "INSERT INTO responses_fts(rowid, prompt, text) SELECT rowid, prompt, text FROM responses WHERE rowid > ?",
        (upto,),
    ).rowcount
    if added:
        db.execute("UPDATE fts_progress SET upto = (SELECT MAX(rowid) FROM responses)")
    return int(added)


def search_clause(query: str, fts: bool) -> tuple[str, list[Any]]:
    """A WHERE clause over `responses r` matching every word of `query` (FTS5, else LIKE)."""
    words = query.split()
    if fts:
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
