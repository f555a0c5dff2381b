"""Bedrock Converse's image and document blocks (bedrock.py's media mapping, kept apart so each
module stays small): formats by media type, and document names in the characters Converse allows
(letters, digits, single spaces, hyphens, parentheses, square brackets), unique in a request.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from chainform import types
from chainform.clients.profiles.bedrock import PROVIDER
from chainform.errors import UnsupportedOptionError

IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
_OOXML = "application/vnd.openxmlformats-officedocument."
DOCUMENT_FORMATS = {
    "application/pdf": "pdf",
    "text/plain": "txt",
    "text/csv": "csv",
    "text/markdown": "md",
    "text/html": "html",
    "application/msword": "doc",
    _OOXML + "wordprocessingml.document": "docx",
    "application/vnd.ms-excel": "xls",
    _OOXML + "spreadsheetml.sheet": "xlsx",
}
_NAME_REFUSED = re.compile(r"[^A-Za-z0-9\s\-()\[\]]+")
DOCUMENT_TEXT = "The attached document."
"""The text block Converse wants beside a document, for a turn that has none."""


def media_block(
    content: types.DataContent, media: Callable[[types.DataContent], bytes], names: set[str]
) -> dict[str, Any]:
    """An image or document block; `media` gives the bytes (a placeholder spliced when signed),
    `names` the document names the request already uses."""
    kind, source = content.media_type, {"bytes": media(content)}
    if kind in IMAGE_FORMATS:
        return {"image": {"format": IMAGE_FORMATS[kind], "source": source}}
    if kind not in DOCUMENT_FORMATS:
        raise UnsupportedOptionError(f"Bedrock Converse cannot take {kind!r} data", provider=PROVIDER)
    name = document_name(content.name, names)
    return {"document": {"format": DOCUMENT_FORMATS[kind], "name": name, "source": source}}


def document_name(name: str | None, taken: set[str]) -> str:
    """The file name without its extension in the characters Converse allows, unique in `taken`."""
    stem = (name or "").rsplit(".", 1)[0]
    base = " ".join(_NAME_REFUSED.sub(" ", stem).split())[:180] or "document"
    chosen, n = base, 1
    while chosen in taken:
        n += 1
        chosen = f"{base} ({n})"
    taken.add(chosen)
    return chosen
