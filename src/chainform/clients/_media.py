"""Attachments checked against the answering model's profile before anything is sent.

Every image or document part of a request meets `profile.media` here, in the adapter layer,
whatever put it there (the documents step, a tool, a hand-built message): its type, its size
against the inline limit, the count per request. A URL goes on as a URL only where the profile
says the provider fetches that type; any other is downloaded once, through
`chainform.documents.fetch` (the one guarded download: http/https, size cap, timeout, no private
addresses), and sent inline.
"""

from __future__ import annotations

import asyncio
import dataclasses
import mimetypes
import weakref
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

from chainform.clients import _splice
from chainform.documents import fetch
from chainform.errors import AttachmentError
from chainform.types import DataContent, MediaSupport, Message, ModelProfile, UriContent
from chainform.types._attachment import Attachment

Media = DataContent | UriContent


class MediaAdapter:
    """What every adapter (`_common.AdapterClient`) does with attachments: check them before
    sending, and put inline data in the request as tokens its SDK client splices (`_splice.py`)."""

    allow_private_urls = False
    """Whether a URL this provider does not fetch may be downloaded from a private address."""
    profile: ModelProfile
    _sdk: Any
    _owns_sdk: bool

    async def _prepare(self, messages: list[Message]) -> list[Message]:
        """Attachments checked against the profile before anything is sent; URLs the provider does
        not fetch downloaded."""
        return await checked(messages, self.profile, allow_private=self.allow_private_urls)

    def _splicing(self) -> bool:
        return self._owns_sdk or _splice.splices(self._sdk)

    def inline_base64(self, content: DataContent) -> str:
        """`content`'s base64 for the request: a token spliced in as the body is sent when this
        adapter's SDK client splices, else the base64 itself."""
        return _splice.token(content) if self._splicing() else content.base64

    def inline_uri(self, content: DataContent) -> str:
        """`content` as a data URL for the request (its base64 spliced in when sent, as above)."""
        return _splice.data_uri(content) if self._splicing() else content.uri

    def inline_bytes(self, content: DataContent, *, urlsafe: bool = False) -> bytes:
        """`content`'s bytes for SDKs that encode them: a placeholder whose base64 is spliced."""
        return _splice.placeholder(content, urlsafe=urlsafe) if self._splicing() else content.data


async def checked(
    messages: list[Message], profile: ModelProfile, *, allow_private: bool = False
) -> list[Message]:
    """`messages` with every URL the provider does not fetch downloaded; AttachmentError (nothing
    sent) for a part whose type, size or count the model does not take."""
    parts = [c for m in messages for c in m.contents if isinstance(c, DataContent | UriContent)]
    if not parts:
        return messages
    media, model = profile.media, f"{profile.provider}/{profile.name}"
    swapped: dict[int, Media] = {}
    for part in parts:
        if isinstance(part, UriContent):
            kind = part.media_type or _guess(part.uri)
            if kind is not None and media.fetches(kind):
                if part.media_type is None:  # told from its path: some providers want the type
                    swapped[id(part)] = dataclasses.replace(part, media_type=kind)
                continue
            swapped[id(part)] = await _downloaded(part, kind, media, allow_private)
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


# a URL part's download, kept while the part lives: a chain sends its history again at every call
_DOWNLOADS: dict[int, tuple[weakref.ref[UriContent], DataContent]] = {}


async def _downloaded(
    part: UriContent, kind: str | None, media: MediaSupport, allow_private: bool
) -> DataContent:
    kept = _DOWNLOADS.get(id(part))
    if kept is not None and kept[0]() is part:
        return kept[1]
    data = await asyncio.to_thread(_download, part, kind, media, allow_private)
    key = id(part)
    _DOWNLOADS[key] = (weakref.ref(part, lambda _: _DOWNLOADS.pop(key, None)), data)
    return data


def _download(part: UriContent, kind: str | None, media: MediaSupport, allow_private: bool) -> DataContent:
    """The URL's bytes, fetched through the one guarded download, as inline data."""
    attachment = Attachment(url=part.uri, type=part.media_type, name=part.name)
    limit = media.limit(kind) if kind else media.max_bytes
    fetch(attachment, max_bytes=limit, allow_private=allow_private)
    return DataContent(attachment.read(limit), attachment.media_type(), name=attachment.name)
