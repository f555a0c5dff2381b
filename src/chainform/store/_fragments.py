"""Fragments in the log (llm's `-f`): a text attached to prompts, kept once by the sha256 of its
text, linked to every call that sent it.

A fragment is a text part of a message, marked in the message's `additional_properties` under
`fragments`: `[{"position": i, "sha256": ..., "source": "notes.txt"}]`. A call's stored messages
keep the mark with the part's text emptied, the text is written once in `fragments` (`INSERT OR
IGNORE`, in the same transaction as the call) and `response_fragments` links the call to it;
reading a call puts the text back. So a chain that resends a long document with each of its calls,
or many prompts that attach the same file, store it once.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from dataclasses import dataclass
from typing import Any

from chainform.types import Message
from chainform.types._content import TextContent

MARK = "fragments"
"""The `Message.additional_properties` key naming a message's fragment parts."""

ORPHAN_FRAGMENTS = "DELETE FROM fragments WHERE sha256 NOT IN (SELECT sha256 FROM response_fragments)"
"""What `logs rm` runs once calls are gone: the fragments no call names any more."""

Texts = dict[str, tuple[str, str | None]]
"""sha256 -> (text, source) of the fragments met while encoding one batch of calls."""


@dataclass(frozen=True)
class Fragment:
    """A fragment: its id (the sha256 of its text), text, where it came from and when it was first logged."""

    sha256: str
    text: str
    source: str | None = None
    created_at: float | None = None


def fragment_id(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def message_with(fragments: list[Fragment], text: str | None, role: str = "user") -> Message:
    """A message of `fragments` (each one text part, marked) followed by `text` when given."""
    parts = [TextContent(f.text) for f in fragments] + ([TextContent(text)] if text else [])
    marks = [{"position": i, "sha256": f.sha256, "source": f.source} for i, f in enumerate(fragments)]
    return Message(role, parts, additional_properties={MARK: marks} if marks else None)


def unmarked_text(message: Message) -> str:
    """The message's text without its fragments (what the log's `prompt` column holds)."""
    marked = {m.get("position") for m in message.additional_properties.get(MARK) or () if isinstance(m, dict)}
    if not marked:
        return message.text
    return Message(message.role, [c for i, c in enumerate(message.contents) if i not in marked]).text


def without_text(message: Message, stored: dict[str, Any], texts: Texts) -> None:
    """Empty the text of `message`'s fragment parts in its stored form, keeping each in `texts`."""
    for mark in message.additional_properties.get(MARK) or ():
        position = mark.get("position") if isinstance(mark, dict) else None
        if not isinstance(position, int) or not 0 <= position < len(message.contents):
            continue
        part = message.contents[position]
        if isinstance(part, TextContent) and fragment_id(part.text) == mark.get("sha256"):
            texts.setdefault(mark["sha256"], (part.text, mark.get("source")))
            stored["contents"][position]["text"] = ""


def has_fragments(message: Message) -> bool:
    """Whether `message` holds fragments (parts kept once in the log)."""
    return bool(message.additional_properties.get(MARK))


def rows(texts: Texts, linked: dict[str, list[str]]) -> dict[str, list[tuple[Any, ...]]]:
    """The fragment rows of calls: each text once, and a link from each call (id) to each of its fragments."""
    now = time.time()
    return {
        "fragments": [(key, text, source, now) for key, (text, source) in texts.items()],
        "response_fragments": [(rid, key) for rid, keys in linked.items() for key in dict.fromkeys(keys)],
    }


def restore(db: sqlite3.Connection, text: str) -> str:
    """A call's stored messages (JSON) with each fragment's text put back from the log."""
    if f'"{MARK}"' not in text:
        return text
    messages = json.loads(text)
    for message in messages:
        for mark in (message.get("additional_properties") or {}).get(MARK) or ():
            position, key = mark.get("position"), mark.get("sha256")
            contents = message.get("contents") or []
            if isinstance(position, int) and 0 <= position < len(contents) and isinstance(key, str):
                row = db.execute("SELECT content FROM fragments WHERE sha256 = ?", (key,)).fetchone()
                if row is not None:
                    contents[position] = {**contents[position], "text": row[0]}
    return json.dumps(messages, ensure_ascii=False)


def find(db: sqlite3.Connection, id_or_prefix: str) -> list[Fragment]:
    """The fragments whose id is `id_or_prefix` or starts with it."""
    found = db.execute(
        "SELECT sha256, content, source, created_at FROM fragments WHERE sha256 >= ? AND sha256 < ? LIMIT 2",
        (id_or_prefix, id_or_prefix + "g"),
    ).fetchall()
    return [Fragment(*row) for row in found]


def listing(db: sqlite3.Connection) -> list[tuple[Fragment, int]]:
    """Every fragment with how many calls sent it, most recently first logged first."""
    found = db.execute(
        """SELECT f.sha256, f.content, f.source, f.created_at, COUNT(l.response_id)
           FROM fragments f LEFT JOIN response_fragments l ON l.sha256 = f.sha256
           GROUP BY f.sha256 ORDER BY f.created_at DESC, f.sha256"""
    ).fetchall()
    return [(Fragment(*row[:4]), int(row[4])) for row in found]
