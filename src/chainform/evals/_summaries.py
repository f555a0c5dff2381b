"""The few columns of many conversations' calls, read from the log in one query per batch of
conversations: what an eval's report needs of each row's calls (ids, purposes, durations, the
strategy), without decoding the messages, attachments and tool calls that `Store.recent` reads back
whole.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

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


__all__ = ["CallSummary", "call_summaries"]
