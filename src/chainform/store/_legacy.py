"""LEGACY READING ONLY: what chainform 0.x before the plain log left beside its tables, drained once.

That version kept a sync chain's calls out of the tables until a reader of its own moved them in:
as records appended to a `<log>-spool` file (one per line: `FORMAT JSON`, a newline before and
after), or as rows of the `journal` table (`format`, `rows`). Nothing writes either any more. When
a log is opened, every whole record of both is written to the tables in ONE transaction, then the
journal is emptied (in it) and the spool deleted (once it committed). A record cut short when its
process died (the end of the spool) is dropped with a warning that says so; a record whose first
call is in the tables already (a drain killed before it deleted the spool) is skipped.

Record formats: 1 and 2 are the rows of `_rows.STATEMENTS` as JSON (format 1 without the cost
column of `responses`); 3 is a chain's compact record:
    [first call id, written at, prompt, system, schema id, schema text, policy, calls, messages]
    a call: [id, conversation id, conversation name, chain id, seq, purpose, strategy, model,
      message indexes, options, text, parsed, usage, duration ms, created at, error,
      tool calls, tool results, format context, lineage link or null]
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import warnings
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

from chainform.store._rows import (
    STATEMENTS,
    CallRecord,
    Rows,
    ToolCallRecord,
    ToolResultRecord,
    rows_of,
    write_rows,
)
from chainform.types import UsageDetails

Write = Callable[[Callable[[sqlite3.Connection], None]], None]

SPOOL = "-spool"
"""The spool's name: the log's with this added."""


def drain_legacy(db: sqlite3.Connection, spool: Path, write: Write) -> None:
    """Move an old spool's and journal's records into the tables (`write`: one write transaction).
    `Store` calls it only when it finds the spool or journal rows: a log opened since has neither."""

    def drain(db: sqlite3.Connection) -> None:
        for jid, fmt, text in db.execute("SELECT id, format, rows FROM journal ORDER BY id").fetchall():
            _put(db, str(fmt), text, f"journal row {jid}")
        db.execute("DELETE FROM journal")
        with contextlib.suppress(FileNotFoundError), spool.open("rb") as lines:  # one record a line
            for number, line in enumerate(lines, 1):
                record = line.rstrip(b"\n")
                fmt, _, text = record.partition(b" ")
                if record.strip():
                    where = f"line {number} of {spool} ({len(record)} bytes)"
                    _put(db, fmt.decode("ascii", "replace"), text, where)

    write(drain)
    spool.unlink(missing_ok=True)


def _put(db: sqlite3.Connection, fmt: str, text: str | bytes, where: str) -> None:
    """Write one record's rows in a savepoint: a record that cannot be read or written is dropped
    with a warning saying which it was."""
    db.execute("SAVEPOINT legacy")
    try:
        rows = _decode(fmt, text)
        first = rows.get("responses", [()])[0]
        if not first or db.execute("SELECT 1 FROM responses WHERE id = ?", (first[0],)).fetchone() is None:
            write_rows(db, rows)
    except (ValueError, TypeError, IndexError, KeyError, sqlite3.Error) as exc:
        db.execute("ROLLBACK TO legacy")
        warnings.warn(
            f"chainform: dropped {where}, written by an older chainform: cut short when its process "
            f"was killed, or unreadable ({type(exc).__name__}: {str(exc)[:200]})",
            stacklevel=5,
        )
    db.execute("RELEASE legacy")


def _decode(fmt: str, text: str | bytes) -> Rows:
    data = json.loads(text)
    if fmt == "3":
        return rows_of(_compact_records(data))
    if fmt not in ("1", "2") or not isinstance(data, dict) or not set(data) <= set(STATEMENTS):
        raise ValueError(f"not a record of format 1, 2 or 3 (format {fmt[:10]!r})")
    rows = {name: [tuple(params) for params in data[name]] for name in data}
    if fmt == "1" and "responses" in rows:  # the cost column came with format 2
        rows["responses"] = [(*params, None) for params in rows["responses"]]
    return rows


_CALL = (
    "id", "conversation_id", "conversation_name", "chain_id", "seq", "purpose", "strategy", "model",
    "messages", "options", "text", "parsed", "usage", "duration_ms", "created_at", "error",
    "tool_calls", "tool_results", "format_context", "link",
)  # fmt: skip
_LINK = ("parent_conversation_id", "parent_chain_id", "parent_tool_call_id", "agent_name")


def _compact_records(data: list[Any]) -> list[CallRecord]:
    _, _, prompt, system, sid, schema_text, policy, calls, messages = data
    schema = json.loads(schema_text) if sid is not None and schema_text is not None else None
    records = []
    for call in calls:
        fields = dict(zip(_CALL, call, strict=True))
        tokens_in, tokens_out, total, counts, cost = fields["usage"]
        fields |= dict(zip(_LINK, fields.pop("link") or (None,) * 4, strict=True))
        fields |= {
            "prompt": prompt,
            "system": system,
            "schema": schema,
            "schema_id": sid,
            "messages": [messages[i] for i in fields["messages"]],
            "usage": UsageDetails(
                tokens_in, tokens_out, total, counts or {}, None if cost is None else Decimal(cost)
            ),
            "tool_calls": [ToolCallRecord(*t) for t in fields["tool_calls"]],
            "tool_results": [ToolResultRecord(*t) for t in fields["tool_results"]],
            "format_context_policy": policy if fields["format_context"] else None,
        }
        records.append(CallRecord(**fields))
    return records
