"""The one record of a model call (CallRecord), to the log's rows (`rows_of`) and back (`read_call`):
the one place that knows the column layout that store/_migrations.py creates.

The engine builds the record (chain/_calls.py) and `chainform logs --json` prints it. Its shape is
versioned with the database: a field added here is a column or table added by a new migration.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from ulid import ULID

from chainform._json import content_id
from chainform.errors import StoreError
from chainform.store._attachments import Attached, AttachmentRecord, Blobs, of_call, restore
from chainform.store._attachments import rows as attachment_rows
from chainform.store._fragments import MARK as FRAGMENT_MARK
from chainform.store._fragments import Texts
from chainform.store._fragments import restore as restore_fragments
from chainform.store._fragments import rows as fragment_rows
from chainform.store._serialize import (
    StoredMessage,
    canonical_json,
    dumps,
    messages_from_json,
    messages_to_json,
    redact,
    storable_row,
)
from chainform.types import UsageDetails


def new_id() -> str:
    """A new ULID (python-ulid), lower case: 48 bits of milliseconds then 80 random bits, counted on
    within a millisecond, so ids sort by creation without a central counter."""
    return str(ULID()).lower()


@dataclass
class ToolCallRecord:
    """A tool call the model made in one response (arguments as parsed, else the raw text)."""

    call_id: str
    name: str
    arguments: Any = None


@dataclass
class ToolResultRecord:
    """What a tool returned (or the error it raised) for a call, as the model was shown it."""

    call_id: str
    name: str = ""
    output: str = ""
    error: str | None = None


class CallRecord(BaseModel):
    """One model call of a chain (failures, retries and the formatting call included).

    The engine commits it the moment the call returns (or raises), before its tools run; each
    tool result is added when it returns (`Store.write_tool_results`); `Store.recent` reads it back, and `to_dict()` is what `chainform logs --json` prints.
    """

    model_config = ConfigDict(populate_by_name=True, ser_json_bytes="base64", val_json_bytes="base64")

    id: str = Field(default_factory=new_id)
    conversation_id: str
    conversation_name: str | None = None
    chain_id: str
    seq: int
    purpose: str  # "chain" | "retry" | "format"
    strategy: str | None = None
    model: str
    prompt: str | None = None
    system: str | None = None
    messages: list[StoredMessage] = Field(default_factory=list)
    options: dict[str, Any] = Field(default_factory=dict)
    schema_id: str | None = None
    schema_: dict[str, Any] | None = Field(default=None, alias="schema", serialization_alias="schema")
    text: str = ""
    parsed: Any = None
    usage: UsageDetails | None = None
    duration_ms: float | None = None
    created_at: float = Field(default_factory=time.time)
    error: str | None = None
    finish_reason: str | None = None  # why the call stopped: stop, length, tool_calls, content_filter...
    ended_by: str | None = None  # the tool whose result ended the chain (stop_at_tools, cf.Final)
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    tool_results: list[ToolResultRecord] = Field(default_factory=list)
    format_context_policy: str | None = None
    format_context: str | None = None
    # set when the chain ran as a subagent: the chain, and its tool call, that started it
    parent_conversation_id: str | None = None
    parent_chain_id: str | None = None
    parent_tool_call_id: str | None = None
    agent_name: str | None = None
    attachments: list[AttachmentRecord] = Field(default_factory=list)  # files the call sent (stored once)
    failure: dict[str, Any] | None = None  # a call that raised: its type, kind, status and message

    @property
    def schema(self) -> dict[str, Any] | None:  # type: ignore[override]
        """The JSON Schema the call had to satisfy (None without one)."""
        return self.schema_

    def to_dict(self) -> dict[str, Any]:
        """The JSON-able view `chainform logs --json` prints."""
        return self.model_dump(mode="json", by_alias=True, fallback=str)


RESPONSE_COLUMNS = (
    "id", "conversation_id", "chain_id", "seq", "purpose", "strategy", "model", "prompt", "system",
    "messages", "options", "schema_id", "text", "parsed", "input_tokens", "output_tokens",
    "total_tokens", "additional_counts", "duration_ms", "created_at", "error",
    "parent_conversation_id", "parent_chain_id", "parent_tool_call_id", "agent_name", "cost",
    "finish_reason", "ended_by", "failure",
)  # fmt: skip

_INSERT_RESPONSE = (
    f"INSERT INTO responses ({', '.join(RESPONSE_COLUMNS)}) VALUES ({', '.join('?' * len(RESPONSE_COLUMNS))})"
)

SELECTED = {
    **{name: f"r.{name}" for name in RESPONSE_COLUMNS},
    "conversation_name": "c.name",
    "schema": "s.content",
    "format_context_policy": "f.policy",
    "format_context": "f.context",
}
"""What a read selects (`Store.recent` joins conversations c, schemas s, format_contexts f)."""
SELECT = ", ".join(SELECTED.values())


def schema_id(schema: dict[str, Any]) -> str:
    """The content address of a schema: sha256 of its canonical JSON (key order does not matter)."""
    return content_id(canonical_json(schema))


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
    "fragments": "INSERT OR IGNORE INTO fragments (sha256, content, source, created_at) VALUES (?, ?, ?, ?)",
    "response_fragments": "INSERT OR IGNORE INTO response_fragments (response_id, sha256) VALUES (?, ?)",
    "chain_attachments": "INSERT OR IGNORE INTO chain_attachments (chain_id, sha256) VALUES (?, ?)",
}


def write_rows(db: sqlite3.Connection, rows: Rows) -> None:
    """Run the statements of `rows` in order (inside the caller's transaction). A file the log
    holds already (sent by an earlier call of the chain, or by another chain) is not handed to
    SQLite again: each call of a chain carries its files' rows, and a document's bytes are large."""
    for name, statement in STATEMENTS.items():
        params = rows.get(name)
        if params and name == "attachments":
            params = [p for p in params if not _has_file(db, p[0])]
        if params:
            db.executemany(statement, params)


def _has_file(db: sqlite3.Connection, sha256: str) -> bool:
    return db.execute("SELECT 1 FROM attachments WHERE sha256 = ?", (sha256,)).fetchone() is not None


def insert_schema(db: sqlite3.Connection, schema: dict[str, Any]) -> str:
    """Store `schema` under its content address; that id."""
    text = canonical_json(schema)
    sid = content_id(text)
    write_rows(db, {"schemas": [(sid, text, time.time())]})
    return sid


def rows_of(records: Sequence[CallRecord], attached: Sequence[Attached] = ()) -> Rows:
    """The rows of calls: their conversations and schemas (each once), the calls with their tool
    calls, results and format contexts, and the files they sent (`attached`, the chain's, and any
    inline bytes of the messages), each file once, linked to every call. Every loaded key value is
    masked in them (`storable_row`), but in a schema's text (stored as hashed)."""
    rows: Rows = {}
    blobs: Blobs = {}
    texts: Texts = {}
    linked: dict[str, list[str]] = {}
    for record in records:
        rows.setdefault("conversations", []).append(
            (record.conversation_id, record.model, record.conversation_name, record.created_at)
        )
        if record.conversation_name is not None:
            rows.setdefault("conversation_names", []).append(
                (record.conversation_name, record.conversation_id)
            )
        sid = None
        if record.schema is not None:
            text = canonical_json(record.schema)
            sid = content_id(text)
            rows.setdefault("schemas", []).append((sid, text, record.created_at))
        _response_rows(rows, record, sid, blobs, texts)
        linked[record.id] = _fragments_of(record, texts)
    if attached or blobs:
        rows.update(attachment_rows(list(attached), blobs, [r.id for r in records]))
    if texts:
        rows.update(fragment_rows(texts, linked))
    return {
        name: params if name == "schemas" else [storable_row(r) for r in params]
        for name, params in rows.items()
    }


def _fragments_of(record: CallRecord, texts: Texts) -> list[str]:
    """The fragments `record`'s messages sent (those stored by their id)."""
    marks = [m for message in record.messages for m in message.additional_properties.get(FRAGMENT_MARK) or ()]
    return [m["sha256"] for m in marks if isinstance(m, dict) and m.get("sha256") in texts]


def _response_rows(rows: Rows, record: CallRecord, sid: str | None, blobs: Blobs, texts: Texts) -> None:
    usage = record.usage
    encoded = {
        "messages": messages_to_json(record.messages, blobs, texts),
        "options": dumps(redact(record.options)),
        "schema_id": sid,
        "text": record.text or "",
        "parsed": dumps(record.parsed) if record.parsed is not None else None,
        "input_tokens": usage.input_tokens if usage else None,
        "output_tokens": usage.output_tokens if usage else None,
        "total_tokens": usage.total_tokens if usage else None,
        "additional_counts": dumps(usage.additional_counts) if usage and usage.additional_counts else None,
        "cost": str(usage.cost) if usage is not None and usage.cost is not None else None,
        "failure": dumps(record.failure) if record.failure is not None else None,
    }  # the other columns are the record's fields of the same name
    row = tuple(encoded[c] if c in encoded else getattr(record, c) for c in RESPONSE_COLUMNS)
    rows.setdefault("responses", []).append(row)
    for c in record.tool_calls:
        rows.setdefault("tool_calls", []).append((record.id, c.call_id, c.name, dumps(c.arguments)))
    for r in record.tool_results:
        rows.setdefault("tool_results", []).append((record.id, r.call_id, r.name, r.output, r.error))
    if record.format_context is not None:
        rows.setdefault("format_contexts", []).append(
            (record.id, record.format_context_policy, record.format_context)
        )


def read_call(db: sqlite3.Connection, row: tuple[Any, ...], *, read_refs: bool = False) -> CallRecord:
    """The CallRecord of a row selected with `SELECT`, with its tool calls, results and files (a
    file logged as a reference: its metadata only, its bytes read again only with `read_refs`)."""
    data = dict(zip(SELECTED, row, strict=True))
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
    stored = data["messages"]
    data["messages"] = messages_from_json(
        restore_fragments(db, restore(db, stored, read_refs=read_refs)) if stored else None
    )
    data["attachments"] = of_call(db, rid)
    for key in ("options", "schema", "parsed", "failure"):
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
    query: str | None = None,
    index: str | None = None,
    models: Sequence[str] = (),
    since: float | None = None,
    with_tools: bool = False,
    runs: Sequence[str] = (),
) -> tuple[list[str], list[Any]]:
    """WHERE clauses (all must hold) over `responses r` and their arguments, for reads and deletes.
    `query`: see `search`; `index`: the log's full-text index ("trigram", "words" or None)."""
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
    if models:
        add(f"r.model IN ({', '.join('?' * len(models))})", *models)
    if since is not None:
        add("r.created_at >= ?", since)
    if with_tools:  # every call of a chain in which a tool was called
        add(
            "r.chain_id IN (SELECT t_r.chain_id FROM tool_calls t JOIN responses t_r ON t_r.id = t.response_id)"
        )
    if runs:  # a map run names each row's conversation `map RUN KEY` (_map/_run.py)
        add(
            "("
            + " OR ".join(
                "r.conversation_id IN (SELECT id FROM conversations WHERE substr(name, 1, ?) = ?)"
                for _ in runs
            )
            + ")",
            *(value for run in runs for value in (len(f"map {run} "), f"map {run} ")),
        )
    if query is not None:
        for clause, values in search(query, index):
            add(clause, *values)
    return clauses, args


def search(query: str, index: str | None) -> list[tuple[str, list[Any]]]:
    """The clauses of a search: every whitespace-separated term must occur in the prompt or the
    text (as a substring, case-insensitive for ASCII; with a "words" index a word term matches
    whole words), and a term written `-term` must not (a lone `-` is a term like any other).

    A term goes through the full-text index when the index answers it exactly: the trigram index
    (`responses_fts`, migration 12) any term of 3 characters or more that holds a letter or digit,
    a word index (a SQLite without the trigram tokenizer) a plain ASCII word. Other terms (only
    punctuation or emoji, CJK shorter than 3 characters, ...) are a plain substring scan: LIKE with
    its wildcards escaped, newest rows first, stopping at the requested count. Each term is quoted:
    user text is never parsed as FTS syntax (AND/OR/NEAR, quotes). An empty query, one of more than
    MAX_SEARCH_TERMS terms (SQLite's expression depth) and text SQLite cannot take (a NUL, a lone
    surrogate) are refused."""
    terms = query.split()
    if not terms:
        raise StoreError("the search is empty: give the words to look for (-q WORDS)")
    if len(terms) > MAX_SEARCH_TERMS:
        raise StoreError(f"the search has {len(terms):,} terms; give at most {MAX_SEARCH_TERMS}")
    if "\x00" in query or (not query.isascii() and not _encodable(query)):
        raise StoreError("the search holds a NUL or bytes that are not UTF-8 text; give words")
    out: list[tuple[str, list[Any]]] = []
    for term in terms:
        negate = len(term) > 1 and term.startswith("-")
        term = term[1:] if negate else term
        if _indexed(term, index):
            found = "r.rowid IN (SELECT rowid FROM responses_fts WHERE responses_fts MATCH ?)"
            out.append((found, ['"' + term.replace('"', '""') + '"']))
        else:
            pattern = "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            found = "(COALESCE(r.prompt, '') LIKE ? ESCAPE '\\' OR r.text LIKE ? ESCAPE '\\')"
            out.append((found, [pattern, pattern]))
        if negate:
            out[-1] = (f"NOT {out[-1][0]}", out[-1][1])
    return out


MAX_SEARCH_TERMS = 100
"""The most terms one search takes (each is a clause; SQLite refuses an expression 1000 deep)."""


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _indexed(term: str, index: str | None) -> bool:
    if index == "trigram":
        return len(term) >= 3 and re.search(r"\w", term) is not None
    return index == "words" and re.fullmatch(r"\w+", term, re.ASCII) is not None
