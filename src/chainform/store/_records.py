"""The one record of a model call: built by the engine (chain/_calls.py), written to the log
(`_rows.rows_of`), read back (`_rows.read_call`), and printed by `chainform logs --json`.

Its shape is versioned with the database (store/_migrations.py): a field added here is a column or
table added by a new migration there.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from ulid import ULID

from chainform.errors import ChainformError
from chainform.store._attachments import AttachmentRecord
from chainform.store._serialize import StoredMessage
from chainform.types import UsageDetails


def new_id() -> str:
    """A new ULID (python-ulid), lower case: 48 bits of milliseconds then 80 random bits, counted on
    within a millisecond, so ids sort by creation without a central counter."""
    return str(ULID()).lower()


class StoreError(ChainformError):
    """The log database cannot be opened, migrated, written or read (or a lookup is ambiguous)."""


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

    The engine builds it when the call's tool results are known and commits it before the next
    call starts; `Store.recent` reads it back, and `to_dict()` is what `chainform logs --json` prints.
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

    @property
    def schema(self) -> dict[str, Any] | None:  # type: ignore[override]
        """The JSON Schema the call had to satisfy (None without one)."""
        return self.schema_

    def to_dict(self) -> dict[str, Any]:
        """The JSON-able view `chainform logs --json` prints."""
        return self.model_dump(mode="json", by_alias=True, fallback=str)


@dataclass
class SchemaInfo:
    """A saved schema and how often the log used it."""

    id: str
    content: dict[str, Any]
    created_at: float
    uses: int
    last_used: float | None
