"""A CallRecord to and from the log's rows (responses, tool_calls, tool_results, format_contexts).

The one place that knows the column layout written by store/_migrations.py.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from decimal import Decimal
from itertools import chain
from typing import Any, Protocol

from chainform._json import content_id
from chainform.keys import mentions_secret
from chainform.store._attachments import Attached, Blobs, of_call, restore
from chainform.store._attachments import rows as attachment_rows
from chainform.store._records import CallRecord, StoreError, ToolCallRecord, ToolResultRecord
from chainform.store._serialize import (
    Encoded,
    canonical_json,
    dumps,
    messages_from_json,
    messages_to_json,
    redact,
    storable_row,
)
from chainform.types import Message, UsageDetails

RESPONSE_COLUMNS = (
    "id", "conversation_id", "chain_id", "seq", "purpose", "strategy", "model", "prompt", "system",
    "messages", "options", "schema_id", "text", "parsed", "input_tokens", "output_tokens",
    "total_tokens", "additional_counts", "duration_ms", "created_at", "error",
    "parent_conversation_id", "parent_chain_id", "parent_tool_call_id", "agent_name", "cost",
)  # fmt: skip

_INSERT_RESPONSE = (
    f"INSERT INTO responses ({', '.join(RESPONSE_COLUMNS)}) VALUES ({', '.join('?' * len(RESPONSE_COLUMNS))})"
)

SELECTED = {
    "id": "r.id", "conversation_id": "r.conversation_id", "conversation_name": "c.name",
    "chain_id": "r.chain_id", "seq": "r.seq", "purpose": "r.purpose", "strategy": "r.strategy",
    "model": "r.model", "prompt": "r.prompt", "system": "r.system", "messages": "r.messages",
    "options": "r.options", "schema_id": "r.schema_id", "schema": "s.content", "text": "r.text",
    "parsed": "r.parsed", "input_tokens": "r.input_tokens", "output_tokens": "r.output_tokens",
    "total_tokens": "r.total_tokens", "additional_counts": "r.additional_counts",
    "duration_ms": "r.duration_ms", "created_at": "r.created_at", "error": "r.error",
    "format_context_policy": "f.policy", "format_context": "f.context",
    "parent_conversation_id": "r.parent_conversation_id", "parent_chain_id": "r.parent_chain_id",
    "parent_tool_call_id": "r.parent_tool_call_id", "agent_name": "r.agent_name", "cost": "r.cost",
}  # fmt: skip
SELECT_NAMES = tuple(SELECTED)
SELECT = ", ".join(SELECTED.values())


_TEXTS: dict[str, str] = {}  # schema id -> its canonical JSON, as just hashed (content-addressed:
# right for any log); a chain's logger hashes its schema once, and its rows reuse the text


def schema_id(schema: dict[str, Any]) -> str:
    """The content address of a schema: sha256 of its canonical JSON (key order does not matter)."""
    text = canonical_json(schema)
    return known_schema(text, content_id(text))


def known_schema(text: str, sid: str) -> str:
    """Keep `text` (a schema's canonical JSON, whose id is `sid`) for the rows that name it; `sid`."""
    if len(_TEXTS) >= 256:
        _TEXTS.clear()
    _TEXTS[sid] = text
    return sid


def known_schema_text(sid: str, schema: dict[str, Any]) -> str:
    """The canonical JSON of `schema`, whose id is `sid` (as just hashed, when it was)."""
    return _TEXTS.get(sid) or canonical_json(schema)


Rows = dict[str, list[tuple[Any, ...]]]
"""What a write puts in the log: for each statement of `STATEMENTS`, its parameter tuples."""

STATEMENTS = {  # in foreign-key order: a conversation and a schema before the calls that use them
    "conversations": "INSERT OR IGNORE INTO conversations (id, model, name, created_at) VALUES (?, ?, ?, ?)",
    "conversation_names": "UPDATE conversations SET name = ? WHERE id = ? AND name IS NULL",
    "schemas": "INSERT OR IGNORE INTO schemas (id, content, created_at) VALUES (?, ?, ?)",
    "attachments": "INSERT OR IGNORE INTO attachments (sha256, media_type, size, content, ref, created_at) "
    "VALUES (?, ?, ?, ?, ?, ?)",
    "responses": _INSERT_RESPONSE,
    "response_attachments": "INSERT OR IGNORE INTO response_attachments "
    "(response_id, position, sha256, name, method, detail) VALUES (?, ?, ?, ?, ?, ?)",
    "tool_calls": "INSERT INTO tool_calls (response_id, call_id, name, arguments) VALUES (?, ?, ?, ?)",
    "tool_results": "INSERT INTO tool_results (response_id, call_id, name, output, error) VALUES (?, ?, ?, ?, ?)",
    "format_contexts": "INSERT INTO format_contexts (response_id, policy, context) VALUES (?, ?, ?)",
}


def write_rows(db: sqlite3.Connection, rows: Rows) -> None:
    """Run the statements of `rows` in order (inside the caller's transaction)."""
    for name, statement in STATEMENTS.items():
        params = rows.get(name)
        if params:
            db.executemany(statement, params)


def upsert_conversation(db: sqlite3.Connection, cid: str, model: str, name: str | None) -> None:
    write_rows(db, storable_rows(_conversation_rows({}, cid, model, name, time.time())))


def insert_schema(db: sqlite3.Connection, schema: dict[str, Any]) -> str:
    """Store `schema` under its content address; that id."""
    text = canonical_json(schema)
    sid = known_schema(text, content_id(text))
    write_rows(db, {"schemas": [(sid, text, time.time())]})
    return sid


def insert_call(db: sqlite3.Connection, record: CallRecord) -> str:
    """Write one model call with its tool calls/results and format context."""
    write_rows(db, rows_of([record]))
    return record.id


def insert_calls(db: sqlite3.Connection, rows: Rows) -> None:
    """Write the rows of calls (a chain's, from `rows_of`) in the caller's transaction."""
    write_rows(db, rows)


class LoggedCall(Protocol):
    """What the rows of one call are made of: a CallRecord's fields. The engine's logger reads
    them straight off its ModelCall (store/_chainlog.py) rather than building a record first."""

    id: str
    conversation_id: str
    conversation_name: str | None
    chain_id: str
    seq: int
    purpose: str
    strategy: str | None
    model: str
    prompt: str | None
    system: str | None
    messages: list[Message]
    options: dict[str, Any]
    schema_id: str | None
    text: str
    parsed: Any
    usage: UsageDetails | None
    duration_ms: float | None
    created_at: float
    error: str | None
    tool_calls: list[ToolCallRecord]
    tool_results: list[ToolResultRecord]
    format_context_policy: str | None
    format_context: str | None
    parent_conversation_id: str | None
    parent_chain_id: str | None
    parent_tool_call_id: str | None
    agent_name: str | None

    @property
    def schema(self) -> dict[str, Any] | None: ...

    @property
    def options_json(self) -> str | None: ...  # the options' JSON, redacted, when made already


def rows_of(records: Sequence[LoggedCall], attached: Sequence[Attached] = (), at: float | None = None) -> Rows:
    """The rows of calls (a chain's): each conversation and schema once, each message encoded
    once, each attachment (`attached`, and any inline bytes of the messages) once, linked to every
    call. Every loaded key value is masked in them (`storable_rows`). `at`: when they were
    written (a conversation's and a schema's creation time), if not now."""
    at = time.time() if at is None else at
    rows: Rows = {}
    conversations: set[tuple[str, str, str | None]] = set()
    schemas: set[str] = set()  # a chain's calls share one schema (the logger gave its id)
    encoded: Encoded = {}
    blobs: Blobs = {}
    for record in records:
        conversation = (record.conversation_id, record.model, record.conversation_name)
        if conversation not in conversations:
            conversations.add(conversation)
            _conversation_rows(rows, *conversation, at)
        sid = None
        if record.schema is not None:
            sid = record.schema_id or schema_id(record.schema)
            if sid not in schemas:
                schemas.add(sid)
                rows.setdefault("schemas", []).append((sid, known_schema_text(sid, record.schema), at))
        _response_rows(rows, record, sid, encoded, blobs)
    if attached or blobs:
        rows.update(attachment_rows(list(attached), blobs, [r.id for r in records]))
    return storable_rows(rows)


def storable_rows(rows: Rows) -> Rows:
    """`rows` as the log writes them (`storable_row`: loaded keys masked, text SQLite can encode),
    but for a schema's (stored as hashed). All their text is looked at once first: a chain's rows
    rarely need either."""
    tables = (params for name, params in rows.items() if name != "schemas")
    texts = "\x00".join(filter(_is_text, chain.from_iterable(chain.from_iterable(tables))))
    if texts.isascii() and not mentions_secret(texts):
        return rows
    return {
        name: params if name == "schemas" else [storable_row(r) for r in params]
        for name, params in rows.items()
    }


_is_text = str.__instancecheck__  # isinstance(v, str), without a Python loop over the values


def _conversation_rows(rows: Rows, cid: str, model: str, name: str | None, at: float) -> Rows:
    rows.setdefault("conversations", []).append((cid, model, name, at))
    if name is not None:
        rows.setdefault("conversation_names", []).append((name, cid))
    return rows


def _response_rows(rows: Rows, record: LoggedCall, sid: str | None, encoded: Encoded, blobs: Blobs) -> None:
    usage = record.usage
    rows.setdefault("responses", []).append(
        (
            record.id,
            record.conversation_id,
            record.chain_id,
            record.seq,
            record.purpose,
            record.strategy,
            record.model,
            record.prompt,
            record.system,
            messages_to_json(record.messages, encoded, blobs),
            record.options_json or dumps(redact(record.options)),
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
            record.parent_conversation_id,
            record.parent_chain_id,
            record.parent_tool_call_id,
            record.agent_name,
            str(usage.cost) if usage is not None and usage.cost is not None else None,
        )
    )
    for c in record.tool_calls:
        rows.setdefault("tool_calls", []).append((record.id, c.call_id, c.name, dumps(c.arguments)))
    for r in record.tool_results:
        rows.setdefault("tool_results", []).append((record.id, r.call_id, r.name, r.output, r.error))
    if record.format_context is not None:
        rows.setdefault("format_contexts", []).append(
            (record.id, record.format_context_policy, record.format_context)
        )


def read_call(db: sqlite3.Connection, row: tuple[Any, ...]) -> CallRecord:
    data = dict(zip(SELECT_NAMES, row, strict=True))
    rid = data["id"]
    counts = [data.pop(k) for k in ("input_tokens", "output_tokens", "total_tokens", "additional_counts")]
    cost = data.pop("cost")
    if cost is not None or any(v is not None for v in counts):
        data["usage"] = UsageDetails(
            counts[0],
            counts[1],
            counts[2],
            json.loads(counts[3]) if counts[3] else {},
            Decimal(cost) if cost is not None else None,
            None if cost is not None else "not priced when it was logged",
        )
    data["messages"] = messages_from_json(restore(db, data["messages"]) if data["messages"] else None)
    data["attachments"] = of_call(db, rid)
    for key in ("options", "schema", "parsed"):
        data[key] = json.loads(data[key]) if data[key] is not None else None
    data["options"] = data["options"] or {}
    data["tool_calls"] = [
        {"call_id": c[0], "name": c[1], "arguments": json.loads(c[2]) if c[2] else None}
        for c in db.execute(
            "SELECT call_id, name, arguments FROM tool_calls WHERE response_id = ? ORDER BY id", (rid,)
        )
    ]
    data["tool_results"] = [
        {"call_id": r[0], "name": r[1] or "", "output": r[2] or "", "error": r[3]}
        for r in db.execute(
            "SELECT call_id, name, output, error FROM tool_results WHERE response_id = ? ORDER BY id",
            (rid,),
        )
    ]
    try:
        return CallRecord.model_validate(data)
    except ValueError as exc:
        raise StoreError(f"malformed row {rid} in the log: {exc}") from exc


def filters(
    *,
    ids: list[str] | None = None,
    conversation_id: str | None = None,
    chain_id: str | None = None,
    schema_id: str | None = None,
    before: float | None = None,
) -> tuple[list[str], list[Any]]:
    """WHERE clauses (all must hold) over `responses r` and their arguments, for reads and deletes."""
    clauses: list[str] = []
    args: list[Any] = []

    def add(clause: str, *values: Any) -> None:
        clauses.append(clause)
        args.extend(values)

    if ids:
        add(f"r.id IN ({', '.join('?' * len(ids))})", *(rid.strip().lower() for rid in ids))
    if conversation_id is not None:
        add("r.conversation_id = ?", conversation_id)
    if chain_id is not None:
        add("r.chain_id = ?", chain_id)
    if schema_id is not None:
        add("r.schema_id >= ? AND r.schema_id < ?", schema_id.lower(), schema_id.lower() + "g")
    if before is not None:
        add("r.created_at < ?", before)
    return clauses, args
