"""What the emulator makes of the images and documents in a request, as each provider checks them.

A wire format's `media(request)` reads its provider's parts into `RecordedMedia` (kept on
`RecordedRequest.media` for tests to assert on) and raises `MediaRefused` for a part the provider
refuses (bad base64, a type or format it does not take, a Bedrock document name or turn it
rejects); the core then answers HTTP 400 in the provider's error format.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

_DATA_URL = re.compile(r"data:(?P<type>[^;,]+);base64,(?P<data>.*)", re.DOTALL)
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})


class MediaRefused(ValueError):
    """A part the provider would refuse with HTTP 400; the message is its error."""


@dataclass
class RecordedMedia:
    """One image or document as the provider received it: `data` decoded, or the `url` to fetch."""

    kind: str  # the provider's part or block type: "image_url", "file", "input_file", "document"...
    media_type: str | None
    data: bytes | None = None
    url: str | None = None
    name: str | None = None


def decode(text: object, what: str, *, urlsafe: bool = False) -> bytes:
    """Strict standard base64; `urlsafe` also takes the URL-safe alphabet (proto JSON takes both)."""
    if not isinstance(text, str) or not text:
        raise MediaRefused(f"{what}: base64 data is missing")
    if urlsafe:
        text = text.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise MediaRefused(f"{what}: invalid base64 data") from None


def data_url(url: object, what: str) -> tuple[str, bytes]:
    """`data:<type>;base64,<data>` as (type, bytes)."""
    match = _DATA_URL.fullmatch(url) if isinstance(url, str) else None
    if match is None:
        raise MediaRefused(f"{what}: expected a base64 data URL")
    return match.group("type"), decode(match.group("data"), what)


def url_or_data(url: object, kind: str, what: str) -> RecordedMedia:
    """An http(s) URL the provider fetches, or a data URL."""
    if isinstance(url, str) and url.startswith(("http://", "https://")):
        return RecordedMedia(kind, None, url=url)
    media_type, data = data_url(url, what)
    return RecordedMedia(kind, media_type, data=data)
