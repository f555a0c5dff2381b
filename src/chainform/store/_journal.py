"""The log's journal: a chain that writes in place commits one row; reads spread it into the tables.

A sync chain running alone commits its calls before it returns, on its own thread (store/_chainlog.py),
so that commit is part of every such chain's time. Written as they are read, a chain's calls are
some ten statements over six tables and a dozen pages (0.16 ms here, most of what logging costs a
2-call chain on a fast server). Written as ONE row holding the same rows as JSON, they are one
statement and a page or two (0.06 ms), and the chain returns once that row is committed: nothing is
lost that the direct write would keep. The tables catch up before anything reads them: `Store`
spreads the journal at the start of every read, `logs rm` and backup, in one write transaction,
each journal row in its own savepoint (a row that cannot be spread is reported and dropped, what a
failed direct write would have done). Chains that go through the writer thread (async chains,
model.map) are written directly: their commits are shared and off the event loop already.

A journal row holds `_rows.Rows` (statement name -> parameter tuples); `format` 2 added the cost
column of `responses` (a format-1 row, journaled before, is read with no cost). Format 3 is a
sync chain's compact record in the spool (store/_compact.py), turned into rows when it is spread.
"""

from __future__ import annotations

import sqlite3
import warnings
from typing import Any

from pydantic_core import from_json, to_json

from chainform.store import _compact
from chainform.store._rows import STATEMENTS, Rows, write_rows

FORMAT = 2
_COST_ADDED = 2  # the format whose responses rows end with their cost


def stage(db: sqlite3.Connection, rows: Rows) -> None:
    """Journal `rows` (inside the caller's transaction). Attached files are written at once (their
    bytes do not travel as JSON, and nothing they reference waits in the journal)."""
    files = rows.get("attachments")
    if files:
        write_rows(db, {"attachments": files})
        rows = {name: params for name, params in rows.items() if name != "attachments"}
    db.execute("INSERT INTO journal (format, rows) VALUES (?, ?)", (FORMAT, to_json(rows).decode()))


def pending(db: sqlite3.Connection) -> bool:
    return db.execute("SELECT 1 FROM journal LIMIT 1").fetchone() is not None


def spread(db: sqlite3.Connection) -> int:
    """Write the journal's rows into the tables and empty it (inside the caller's write
    transaction); how many journal rows were spread."""
    done = 0
    for jid, fmt, text in db.execute("SELECT id, format, rows FROM journal ORDER BY id").fetchall():
        done += put(db, fmt, text)
        db.execute("DELETE FROM journal WHERE id = ?", (jid,))
    return done


def put(db: sqlite3.Connection, fmt: int, text: str | bytes) -> bool:
    """Write one journaled chain's rows (inside the caller's transaction, in a savepoint: a chain
    the log cannot take is reported and dropped, what a failed direct write would have done)."""
    db.execute("SAVEPOINT spread")
    try:
        write_rows(db, _decode(fmt, text))
    except (sqlite3.Error, ValueError) as exc:
        db.execute("ROLLBACK TO spread")
        warnings.warn(f"chainform: dropped a journaled chain the log could not take: {exc}", stacklevel=3)
        ok = False
    else:
        ok = True
    db.execute("RELEASE spread")
    return ok


def _decode(fmt: int, text: str | bytes) -> Rows:
    if fmt == _compact.FORMAT:  # a sync chain's record in the spool
        return _compact.decode(text)
    if fmt not in (1, FORMAT):
        raise ValueError(f"journal format {fmt} is not one this chainform reads")
    data: Any = from_json(text)
    if not isinstance(data, dict) or not set(data) <= set(STATEMENTS):
        raise ValueError("a journal row that is not a chain's rows")
    rows = {name: [tuple(params) for params in data[name]] for name in data}
    if fmt < _COST_ADDED and "responses" in rows:
        rows["responses"] = [(*params, None) for params in rows["responses"]]
    return rows
