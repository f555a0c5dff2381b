"""The few columns of many conversations' calls, read from the log in one query per batch of
conversations: what an eval's report needs of each row's calls (ids, purposes, durations, the
strategy), without decoding the messages, attachments and tool calls that `Store.recent` reads back
whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chainform.store._store import Store

IDS_PER_QUERY = 500
"""Conversation ids bound into one query (well under SQLite's limit on a statement's variables)."""


@dataclass(frozen=True)
class CallSummary:
    """One logged call, as few of its columns as a summary of its conversation needs."""

    id: str
    conversation_id: str
    seq: int
    purpose: str
    strategy: str | None
    duration_ms: float | None


def call_summaries(store: Store, conversation_ids: Iterable[str]) -> dict[str, list[CallSummary]]:
    """The calls of each of `conversation_ids` in the order they ran (by seq); a conversation with no
    logged call is absent from the result."""
    wanted = sorted(set(conversation_ids))
    out: dict[str, list[CallSummary]] = {}
    with store.read() as db:
        for start in range(0, len(wanted), IDS_PER_QUERY):
            batch = wanted[start : start + IDS_PER_QUERY]
            rows = db.execute(
                "SELECT id, conversation_id, seq, purpose, strategy, duration_ms FROM responses "
                f"WHERE conversation_id IN ({', '.join('?' * len(batch))}) ORDER BY conversation_id, seq, rowid",
                batch,
            )
            for row in rows:
                call = CallSummary(*row)
                out.setdefault(call.conversation_id, []).append(call)
    return out


def tool_calls(
    store: Store, conversation_ids: Iterable[str], *, skip: str
) -> dict[str, list[tuple[str, Any]]]:
    """The tool calls (name, decoded arguments) each of `conversation_ids` made, in the order made;
    calls of the tool named `skip` (the output tool, whose arguments are the answer) left out."""
    wanted = sorted(set(conversation_ids))
    out: dict[str, list[tuple[str, Any]]] = {}
    with store.read() as db:
        for start in range(0, len(wanted), IDS_PER_QUERY):
            batch = wanted[start : start + IDS_PER_QUERY]
            rows = db.execute(
                "SELECT r.conversation_id, t.name, t.arguments FROM tool_calls t JOIN responses r "
                f"ON t.response_id = r.id WHERE r.conversation_id IN ({', '.join('?' * len(batch))}) "
                "ORDER BY r.conversation_id, r.seq, r.rowid, t.id",
                batch,
            )
            for conversation, name, arguments in rows:
                if name != skip:
                    out.setdefault(conversation, []).append((name, _decoded(arguments)))
    return out


def _decoded(arguments: str | None) -> Any:
    try:
        return json.loads(arguments) if arguments else {}
    except ValueError:
        return arguments  # not JSON: matches no expected argument


__all__ = ["CallSummary", "call_summaries", "tool_calls"]
