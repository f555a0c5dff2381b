"""What the chain engine hands the log (CallRecord) and what the log hands back (LoggedResponse)."""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from chainform.errors import ChainformError
from chainform.types import Message, UsageDetails

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"
_id_lock = threading.Lock()
_last_ms = 0
_last_random = 0


def new_id() -> str:
    """A 26-character ULID-style id: sorts by creation time, monotonic within one process.

    Sortable ids let the log order rows written in the same millisecond (or by several processes)
    without a central counter.
    """
    global _last_ms, _last_random
    with _id_lock:
        ms = time.time_ns() // 1_000_000
        if ms <= _last_ms:
            ms = _last_ms
            _last_random = (_last_random + 1) & ((1 << 80) - 1)
        else:
            _last_ms = ms
            _last_random = secrets.randbits(80)
        value = (ms << 80) | _last_random
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


class StoreError(ChainformError):
    """The log database cannot be opened, migrated, written or read (or a lookup is ambiguous)."""


@dataclass
class ToolCallRecord:
    """A tool call the model made in one response."""

    call_id: str
    name: str
    arguments: Any


@dataclass
class ToolResultRecord:
    """What a tool returned (or the error it raised) for a call, as the model was shown it."""

    call_id: str
    name: str
    output: str
    error: str | None = None


@dataclass
class CallRecord:
    """One model call of a chain, written by the engine before the chain returns (failures too)."""

    conversation_id: str
    chain_id: str
    seq: int
    purpose: str  # "chain" | "retry" | "format"
    model: str
    prompt: str | None
    system: str | None
    messages: list[Message]
    options: dict[str, Any]
    schema: dict[str, Any] | None
    strategy: str | None
    text: str
    parsed: Any | None
    usage: UsageDetails | None
    duration_ms: float
    created_at: float
    error: str | None = None
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    tool_results: list[ToolResultRecord] = field(default_factory=list)
    format_context: str | None = None
    format_context_policy: str | None = None
    response_id: str = field(default_factory=new_id)


@dataclass
class LoggedResponse:
    """One logged model call with everything the log knows about it."""

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
    schema: dict[str, Any] | None
    text: str
    parsed: Any | None
    usage: UsageDetails | None
    duration_ms: float | None
    created_at: float
    error: str | None
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    tool_results: list[ToolResultRecord] = field(default_factory=list)
    format_context: str | None = None
    format_context_policy: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able view (what `chainform logs --json` prints)."""
        from chainform.store._serialize import message_to_dict

        return {
            "id": self.id,
            "conversation_id": self.conversation_id,
            "conversation_name": self.conversation_name,
            "chain_id": self.chain_id,
            "seq": self.seq,
            "purpose": self.purpose,
            "strategy": self.strategy,
            "model": self.model,
            "prompt": self.prompt,
            "system": self.system,
            "messages": [message_to_dict(m) for m in self.messages],
            "options": self.options,
            "schema_id": self.schema_id,
            "schema": self.schema,
            "text": self.text,
            "parsed": self.parsed,
            "usage": self.usage.to_dict() if self.usage else None,
            "duration_ms": self.duration_ms,
            "created_at": self.created_at,
            "error": self.error,
            "tool_calls": [
                {"call_id": c.call_id, "name": c.name, "arguments": c.arguments} for c in self.tool_calls
            ],
            "tool_results": [
                {"call_id": r.call_id, "name": r.name, "output": r.output, "error": r.error}
                for r in self.tool_results
            ],
            "format_context_policy": self.format_context_policy,
            "format_context": self.format_context,
        }


@dataclass
class SchemaInfo:
    """A saved schema and how often the log used it."""

    id: str
    content: dict[str, Any]
    created_at: float
    uses: int
    last_used: float | None
