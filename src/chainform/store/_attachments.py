"""Attachments in the log: each file once, keyed by the sha256 of its bytes, linked to every call
that sent it and to every chain whose spec holds it (`chain_attachments`: a resume sends it again).

A chain resends its prompt with every call, and a map may attach one file to many rows: stored
inline in each call's messages, a 5 MB scan would be written once per call. So a message's inline
bytes (`DataContent`) are stored as `{"type": "data", "media_type": ..., "data": "", "sha256": ...}`
and their bytes once in `attachments` (`INSERT OR IGNORE`); reading a call puts them back. With
`--attachments-store ref` a file is kept as its path or URL only (content NULL): the log stays
small, reading a call back (`chainform logs`) never opens the file (the call's `attachments` say
its sha256, type, size and path), and only a replay (`-c`/`--cid`) that must send it again reads
it, refused if it changed or is gone. A URL the provider fetched itself (never downloaded) is keyed
by the sha256 of the URL.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import sqlite3
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from chainform.errors import AttachmentError
from chainform.types._attachment import read_regular

ORPHAN_FILES = (
    "DELETE FROM attachments WHERE sha256 NOT IN (SELECT sha256 FROM response_attachments) "
    "AND sha256 NOT IN (SELECT sha256 FROM chain_attachments)"
)
"""What `logs rm` runs once calls are gone: the files no call and no chain's spec names any more."""

Blobs = dict[str, tuple[str, bytes]]
"""sha256 -> (media type, bytes) of the inline parts met while encoding one chain's messages."""


class AttachmentRecord(BaseModel):
    """An attachment of a logged call, as `logs --json` shows it."""

    name: str | None = None
    media_type: str
    sha256: str
    bytes: int | None = None
    method: str | None = None  # "as is", "OCR", "PDF text"...
    detail: str | None = None  # "14 lines", "3 pages", "1.2 MB"
    stored: str = "copy"  # "copy": the bytes are in the log; "ref": only `ref` (a path or URL)
    ref: str | None = None

    def summary(self) -> str:
        how = f": {self.method}, {self.detail}" if self.method and self.detail else ""
        size = f", {self.bytes:,} bytes" if self.bytes is not None else ""
        return f"{self.name or self.sha256[:12]} ({self.media_type}{size}){how}"


@dataclass(frozen=True)
class Attached:
    """What a chain's logger knows of one attachment: its key, how it is stored, how it was sent."""

    sha256: str
    media_type: str
    size: int | None
    name: str | None
    method: str
    detail: str
    data: bytes | None  # None: stored as a reference
    ref: str | None


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def url_key(url: str) -> str:
    return sha256(url.encode("utf-8"))


def without_bytes(contents: list[Any], blobs: Blobs) -> tuple[list[Any], dict[int, str]]:
    """`contents` with each inline part's bytes taken out (kept in `blobs` under their sha256), and
    the key of each such part by position: the stored message names its files, and no base64 copy
    of a large file is ever made to write it."""
    light: list[Any] = []
    keys: dict[int, str] = {}
    for position, content in enumerate(contents):
        data = getattr(content, "data", None) if getattr(content, "type", None) == "data" else None
        if data:
            key = keys[position] = sha256(data)
            blobs.setdefault(key, (content.media_type, data))
            content = dataclasses.replace(content, data=b"")
        light.append(content)
    return light, keys


def with_bytes(parts: list[Any], files: Callable[[str], bytes]) -> list[Any]:
    """Stored content parts (dicts) with each part stored by its sha256 (`without_bytes`) given
    the bytes `files` returns for its key (which raises when the log lacks them)."""
    return [
        {**part, "data": files(part["sha256"])}
        if isinstance(part, dict) and part.get("type") == "data" and isinstance(part.get("sha256"), str)
        else part
        for part in parts
    ]


def rows(attached: list[Attached], blobs: Blobs, response_ids: list[str]) -> dict[str, list[tuple[Any, ...]]]:
    """The attachment rows of a chain: each file once (bytes or reference), and a link from every
    call of the chain to each file of the chain (so `logs rm` keeps a file while a call names it)."""
    now = time.time()
    files = {a.sha256: (a.sha256, a.media_type, a.size, a.data, a.ref, now) for a in attached}
    named: list[tuple[str, str | None, str | None, str | None]] = [
        (a.sha256, a.name, a.method, a.detail) for a in attached
    ]
    for key, (media_type, data) in blobs.items():  # inline bytes of the messages (a file a tool returned...)
        if key not in files:
            files[key] = (key, media_type, len(data), data, None, now)
            named.append((key, None, None, None))
    links = [(rid, position, *link) for rid in response_ids for position, link in enumerate(named)]
    return {"attachments": list(files.values()), "response_attachments": links}


def of_chain(chain_id: str, attached: list[Attached], blobs: Blobs) -> dict[str, list[tuple[Any, ...]]]:
    """The attachment rows of a chain's spec: the files its messages hold (`blobs`, stored as
    the chain's `attached` says: bytes or reference), each linked to the chain, so that they are
    kept while the chain is, whether or not a call of it is left."""
    files = rows([a for a in attached if a.sha256 in blobs], blobs, [])["attachments"]
    return {"attachments": files, "chain_attachments": [(chain_id, key) for key in blobs]}


def of_call(db: sqlite3.Connection, response_id: str) -> list[AttachmentRecord]:
    """The attachments a logged call sent, in order."""
    found = db.execute(
        """SELECT l.name, a.media_type, a.sha256, a.size, l.method, l.detail, a.content IS NULL, a.ref
           FROM response_attachments l JOIN attachments a ON a.sha256 = l.sha256
           WHERE l.response_id = ? ORDER BY l.position""",
        (response_id,),
    ).fetchall()
    fields = ("name", "media_type", "sha256", "bytes", "method", "detail", "stored", "ref")
    return [
        AttachmentRecord(**dict(zip(fields, (*r[:6], "ref" if r[6] else "copy", r[7]), strict=True)))
        for r in found
    ]


def restore(db: sqlite3.Connection, text: str, *, read_refs: bool = False) -> str:
    """A call's stored messages (JSON) with the bytes of each attachment put back from the log. A
    file logged as a reference is left empty unless `read_refs` (a replay that sends it again):
    then it is read as `content_of` reads it (left empty when it is gone or changed)."""
    if '"sha256"' not in text:
        return text
    messages = json.loads(text)
    for message in messages:
        for part in message.get("contents") or []:
            key = part.get("sha256") if isinstance(part, dict) else None
            if part.get("type") == "data" and isinstance(key, str):
                data = content_of(db, key, read_refs=read_refs)
                part["data"] = base64.b64encode(data).decode("ascii") if data else ""
    return json.dumps(messages, ensure_ascii=False)


def content_of(db: sqlite3.Connection, key: str, *, read_refs: bool = True) -> bytes | None:
    """The bytes logged under `key`. A reference is read again only with `read_refs`, and only when
    it is still a regular file of the logged size, not modified since it was logged, and must still
    hash to it (a FIFO, a device or a grown file is never read)."""
    query = "SELECT content, ref, size, created_at FROM attachments WHERE sha256 = ?"
    row = db.execute(query, (key,)).fetchone()
    if row is None:
        return None
    if row[0] is not None:
        return bytes(row[0])
    ref, size, logged_at = row[1], row[2], row[3]
    if not read_refs or not ref or "://" in ref or size is None:
        return None
    try:
        found = Path(ref).stat()
        if not stat.S_ISREG(found.st_mode) or found.st_size != size or found.st_mtime > logged_at:
            return None
        data = read_regular(ref, size, ref)
    except (OSError, AttachmentError):
        return None
    return data if sha256(data) == key else None
