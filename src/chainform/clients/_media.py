"""Attachments checked against the answering model's profile before anything is sent.

Every image or document part of a request meets `profile.media` here, in the adapter layer
(the skeleton's `_prepare`, `_adapter.py`),
whatever put it there (the documents step, a tool, a hand-built message): its type, its size
against the inline limit, the count per request. A URL goes on as a URL only where the profile
says the provider fetches that type; any other is downloaded once per client, through
`chainform.documents.fetch` (the one guarded download: http/https, size cap, timeout, no private
addresses), and sent inline.
"""

from __future__ import annotations

import asyncio
import dataclasses
import mimetypes
from collections import Counter
from urllib.parse import urlsplit

from chainform.errors import AttachmentError
from chainform.types import DataContent, MediaSupport, Message, ModelProfile, UriContent
from chainform.types._attachment import Attachment

Media = DataContent | UriContent
KEPT_DOWNLOADS = 8


async def checked(
    messages: list[Message],
    profile: ModelProfile,
    *,
    allow_private: bool = False,
    downloads: dict[str, DataContent] | None = None,
) -> list[Message]:
    """`messages` with every URL the provider does not fetch downloaded; AttachmentError (nothing
    sent) for a part whose type, size or count the model does not take. `downloads` (URL -> its
    content) keeps the last `KEPT_DOWNLOADS` downloads, so a chain, which sends its history again
    at every call, downloads each URL once."""
    parts = [c for m in messages for c in m.contents if isinstance(c, Media)]
    media, model = profile.media, f"{profile.provider}/{profile.name}"
    swapped: dict[int, Media] = {}
    for part in parts:
        if isinstance(part, UriContent):
            kind = part.media_type or _guess(part.uri)
            if kind is not None and media.fetches(kind):
                if part.media_type is None:  # told from its path: some providers want the type
                    swapped[id(part)] = dataclasses.replace(part, media_type=kind)
                continue
            kept = downloads if downloads is not None else {}
            if part.uri not in kept:
                while len(kept) >= KEPT_DOWNLOADS:
                    del kept[next(iter(kept))]
                kept[part.uri] = await asyncio.to_thread(_download, part, kind, media, allow_private)
            swapped[id(part)] = kept[part.uri]
    kinds: Counter[str] = Counter()
    for part in parts:
        inline = swapped.get(id(part), part)
        kind = inline.media_type or _guess(inline.uri) or "an unknown type"  # type: ignore[union-attr]
        _check(inline, kind, media, model)
        kinds[kind] += 1
    _count(kinds, media, model)
    if not swapped:
        return messages
    return [
        dataclasses.replace(m, contents=[swapped.get(id(c), c) for c in m.contents])  # type: ignore[misc]
        if any(id(c) in swapped for c in m.contents)
        else m
        for m in messages
    ]


def _check(part: Media, kind: str, media: MediaSupport, model: str) -> None:
    name = part.name or ("a URL" if isinstance(part, UriContent) else "an attachment")
    if not media.accepts(kind):
        raise AttachmentError(f"{name}: {model} cannot read {kind}; it accepts {media.describe()}")
    limit = media.limit(kind)
    if isinstance(part, DataContent) and limit is not None and len(part.data) > limit:
        raise AttachmentError(
            f"{name}: {len(part.data):,} bytes of {kind} is over {model}'s limit of {limit:,} bytes"
        )


def _count(kinds: Counter[str], media: MediaSupport, model: str) -> None:
    total = sum(kinds.values())
    if media.max_count is not None and total > media.max_count:
        raise AttachmentError(f"{total} attachments: {model} takes at most {media.max_count} in one request")
    for types, most in media.count_limits:
        found = sum(n for kind, n in kinds.items() if kind in types)
        if found > most:
            raise AttachmentError(
                f"{found} attachments of {', '.join(sorted(types))}: {model} takes at most {most} in one request"
            )


def _guess(uri: str) -> str | None:
    return mimetypes.guess_type(urlsplit(uri).path)[0]


def _download(part: UriContent, kind: str | None, media: MediaSupport, allow_private: bool) -> DataContent:
    """The URL's bytes, fetched through the one guarded download, as inline data."""
    from chainform.documents import fetch  # httpx (and what it imports) only when a URL is downloaded

    attachment = Attachment(url=part.uri, type=part.media_type, name=part.name)
    limit = media.limit(kind) if kind else media.max_bytes
    fetch(attachment, max_bytes=limit, allow_private=allow_private)
    return DataContent(attachment.read(limit), attachment.media_type(), name=attachment.name)
