"""Documents in: attachments checked against what a model reads, converted locally when it cannot.

Sits below the engine: `prepare_parts` turns a prompt's attachments into the content parts the
answering model's profile accepts (PDF text layers, OCR, decoded text files for the rest), and
reports each conversion so the CLI, the log and the chain's records can show it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from chainform.documents._convert import Conversion, can_convert, prepare, to_text
from chainform.errors import AttachmentError
from chainform.types import Content, ModelProfile, TextContent
from chainform.types._attachment import Attachment, ConversionLimits

if TYPE_CHECKING:  # imported on need at run time (httpx and what it imports)
    from chainform.documents._fetch import fetch as fetch

__all__ = [
    "Attachment",
    "Conversion",
    "ConversionLimits",
    "can_convert",
    "fetch",
    "prepare",
    "prepare_parts",
    "to_text",
]


def prepare_parts(
    items: Sequence[str | Attachment | Content],
    profile: ModelProfile,
    *,
    convert: bool = True,
    allow_private_urls: bool = False,
    stop: threading.Event | None = None,
) -> tuple[list[Content], list[Conversion]]:
    """The content parts for one user message, and how each attachment got there.

    Every check runs before anything is sent: the count limit, each file's size against the
    model's limit (before it is read whole), its type, and the conversion itself. `stop` set (the
    chain was cancelled): a download or conversion ends at its next chunk or page.
    """
    attachments = [item for item in items if isinstance(item, Attachment)]
    limit = profile.media.max_count
    if limit is not None and sum(1 for a in attachments if _sent_as_is(a, profile)) > limit:
        raise AttachmentError(
            f"{len(attachments)} attachments: {profile.provider}/{profile.name} takes at most {limit} in one request"
        )
    parts: list[Content] = []
    conversions: list[Conversion] = []
    for item in items:
        if isinstance(item, str):
            parts.append(TextContent(item))
        elif isinstance(item, Attachment):
            if item.is_remote and not _provider_fetches(item, profile):
                from chainform.documents._fetch import fetch  # httpx (and what it imports) on need

                fetch(item, allow_private=allow_private_urls, stop=stop)
            part, conversion = prepare(item, profile, convert=convert, stop=stop)
            parts.append(part)
            conversions.append(conversion)
        else:
            parts.append(item)
    return parts, conversions


def __getattr__(name: str) -> Any:
    if name == "fetch":
        from chainform.documents._fetch import fetch

        return fetch
    raise AttributeError(f"module 'chainform.documents' has no attribute {name!r}")


def _provider_fetches(attachment: Attachment, profile: ModelProfile) -> bool:
    try:
        return profile.media.fetches(attachment.media_type())
    except AttachmentError:
        return False  # no type told by its name: download it and look at the bytes


def _sent_as_is(attachment: Attachment, profile: ModelProfile) -> bool:
    try:
        return profile.media.accepts(attachment.media_type())
    except AttachmentError:
        return True
