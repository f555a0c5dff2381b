"""The `chains` table: each logged chain's spec (JSON), its status and the tool calls it waits on.

A chain's row is written when it starts (status "running"), before its first call, and its status
changes as it ends: "done", "failed", "interrupted" (Ctrl-C, a cancelled task) or "waiting" (tool
calls wait for a person's approval; `pending` lists them). A chain killed outright (kill -9, a
power cut) stays "running": `chainform logs --unfinished` lists it, and whether a process still
runs it is told by the chain's lock (chain/_lock.py), not by this table. Its calls are in
`responses` (by `chain_id`, in `seq` order) and its tool results in `tool_results`.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from chainform.errors import StoreError
from chainform.store._rows import STATEMENTS
from chainform.store._serialize import dumps, storable_row

ChainStatus = Literal["running", "done", "failed", "interrupted", "waiting"]
STATUSES: tuple[ChainStatus, ...] = ("running", "done", "failed", "interrupted", "waiting")
ENDED: tuple[ChainStatus, ...] = ("done", "failed")


@dataclass
class ChainRow:
    """One logged chain: what it was asked (`spec`, JSON text) and where it stands."""

    id: str
    conversation_id: str
    model: str
    spec: str
    status: ChainStatus = "running"
    pending: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-able view `chainform logs --unfinished --json` prints (the spec parsed when it parses)."""
        try:
            spec: Any = json.loads(self.spec)
        except ValueError:
            spec = self.spec
        return {
            "id": self.id,
            "conversation_id": self.conversation_id,
            "model": self.model,
            "status": self.status,
            "pending": self.pending,
            "error": self.error,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "spec": spec,
        }


_COLUMNS = "id, conversation_id, model, spec, status, pending, error, created_at, updated_at"


def begin(db: sqlite3.Connection, row: ChainRow, name: str | None = None) -> None:
    """Record a chain that starts (a resumed one keeps its spec and creation time); with `name`,
    its conversation too, so named (a map row's chain is found by it before its first call)."""
    if name is not None:
        db.execute(
            STATEMENTS["conversations"], storable_row((row.conversation_id, row.model, name, row.created_at))
        )
        db.execute(STATEMENTS["conversation_names"], storable_row((name, row.conversation_id)))
    db.execute(
        f"INSERT INTO chains ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT(id) DO UPDATE SET status = excluded.status, pending = NULL, error = NULL, "
        "updated_at = excluded.updated_at",
        storable_row(
            (
                row.id,
                row.conversation_id,
                row.model,
                row.spec,
                row.status,
                None,
                None,
                row.created_at,
                row.updated_at,
            )
        ),
    )


def set_status(
    db: sqlite3.Connection,
    chain_id: str,
    status: ChainStatus,
    *,
    error: str | None = None,
    pending: list[dict[str, Any]] | None = None,
) -> None:
    db.execute(
        "UPDATE chains SET status = ?, error = ?, pending = ?, updated_at = ? WHERE id = ?",
        storable_row((status, error, dumps(pending) if pending else None, time.time(), chain_id)),
    )


def _row(values: tuple[Any, ...]) -> ChainRow:
    pending = _pending(values[0], values[5])
    return ChainRow(
        values[0], values[1], values[2], values[3], values[4], pending, values[6], values[7], values[8]
    )


def _pending(chain_id: str, text: str | None) -> list[dict[str, Any]]:
    """The pending calls of a row as `set_status` wrote them (a list of {id, tool, arguments});
    StoreError when the column was edited into something else."""
    try:
        pending = json.loads(text) if text else []
    except ValueError:
        pending = None
    if not isinstance(pending, list) or not all(
        isinstance(p, dict) and isinstance(p.get("id"), str) and isinstance(p.get("tool"), str)
        for p in pending
    ):
        raise StoreError(
            f"chain {chain_id}: its pending calls (chains.pending) are not the list of calls chainform "
            "wrote (edited by hand?)"
        )
    return pending


def read(db: sqlite3.Connection, id_or_prefix: str) -> list[ChainRow]:
    """The chains whose id is `id_or_prefix` or starts with it (more than one: ambiguous)."""
    key = id_or_prefix.strip().lower()
    exact = db.execute(f"SELECT {_COLUMNS} FROM chains WHERE id = ?", (key,)).fetchone()
    if exact is not None:
        return [_row(exact)]
    if len(key) < 4:
        return []
    rows = db.execute(
        f"SELECT {_COLUMNS} FROM chains WHERE id >= ? AND id < ? LIMIT 2", (key, key + "\uffff")
    ).fetchall()
    return [_row(r) for r in rows]


def unfinished(db: sqlite3.Connection, limit: int | None = None) -> list[ChainRow]:
    """Chains that did not end (running, interrupted, waiting), newest first."""
    sql = f"SELECT {_COLUMNS} FROM chains WHERE status NOT IN ('done', 'failed') ORDER BY created_at DESC"
    args: list[Any] = []
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    return [_row(r) for r in db.execute(sql, args).fetchall()]


def named(db: sqlite3.Connection, prefix: str) -> dict[str, tuple[str, ChainStatus]]:
    """The newest chain of each conversation whose name starts with `prefix`, by the rest of the
    name: (chain id, status)."""
    rows = db.execute(
        "SELECT substr(c.name, ?), ch.id, ch.status FROM chains ch "
        "JOIN conversations c ON c.id = ch.conversation_id "
        "WHERE substr(c.name, 1, ?) = ? ORDER BY ch.created_at, ch.rowid",
        (len(prefix) + 1, len(prefix), prefix),
    )
    return {name: (chain_id, status) for name, chain_id, status in rows}


def add_tool_results(
    db: sqlite3.Connection, response_id: str, results: list[tuple[str, str, str, str | None]]
) -> None:
    """Tool results of a logged call, as they return: (call_id, name, output, error)."""
    db.executemany(
        "INSERT INTO tool_results (response_id, call_id, name, output, error) VALUES (?, ?, ?, ?, ?)",
        [storable_row((response_id, *r)) for r in results],
    )


def mark_ended(db: sqlite3.Connection, response_id: str, tool: str, parsed: Any) -> None:
    """A committed call whose tool ended its chain: the tool's name and the value (the full-text
    index reads only the prompt and the text, which do not change)."""
    db.execute(
        "UPDATE responses SET ended_by = ?, parsed = ? WHERE id = ?",
        storable_row((tool, dumps(parsed) if parsed is not None else None, response_id)),
    )
