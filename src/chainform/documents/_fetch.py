"""Downloading an attached URL for a provider that does not fetch it itself.

A model's prompt can name any URL, so a download is guarded: http(s) only, a size cap read as the
body streams (never trusting Content-Length alone), a timeout, at most five redirects each checked
again, and addresses in private, loopback, link-local or reserved ranges refused unless allowed.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urljoin, urlsplit

import httpx

from chainform.errors import AttachmentError
from chainform.types._attachment import Attachment

MAX_BYTES = 50_000_000
TIMEOUT = 30.0
_MAX_REDIRECTS = 5


def fetch(
    attachment: Attachment,
    *,
    max_bytes: int | None = None,
    timeout: float | None = None,
    allow_private: bool = False,
) -> Attachment:
    """Download `attachment.url` into the attachment (its bytes and the server's content type);
    `max_bytes` and `timeout` default to MAX_BYTES and TIMEOUT as they are at the call."""
    max_bytes = MAX_BYTES if max_bytes is None else max_bytes
    timeout = TIMEOUT if timeout is None else timeout
    if not attachment.is_remote:
        return attachment
    url = attachment.url or ""
    name = attachment.name or url
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False) as client:
            for _ in range(_MAX_REDIRECTS + 1):
                _check_address(url, allow_private)
                with client.stream("GET", url) as response:
                    if response.is_redirect:
                        url = urljoin(url, response.headers.get("location", ""))
                        continue
                    if response.status_code >= 400:
                        raise AttachmentError(f"{name}: the server answered HTTP {response.status_code}")
                    declared = int(response.headers.get("content-length") or 0)
                    if declared > max_bytes:
                        raise AttachmentError(f"{name}: {declared:,} bytes is over the limit of {max_bytes:,}")
                    body = bytearray()
                    for chunk in response.iter_bytes():
                        body += chunk
                        if len(body) > max_bytes:
                            raise AttachmentError(f"{name}: more than {max_bytes:,} bytes (the limit)")
                    media = response.headers.get("content-type", "").split(";")[0].strip() or None
                    attachment.set_downloaded(bytes(body), None if media == "application/octet-stream" else media)
                    return attachment
            raise AttachmentError(f"{name}: more than {_MAX_REDIRECTS} redirects")
    except httpx.TimeoutException:
        raise AttachmentError(f"{name}: the download timed out after {timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise AttachmentError(f"{name}: the download failed ({type(exc).__name__}: {exc})") from None


def _check_address(url: str, allow_private: bool) -> None:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AttachmentError(f"{url[:80]}: only http(s) URLs are downloaded")
    if allow_private:
        return
    try:
        infos = socket.getaddrinfo(parts.hostname, parts.port or 443, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise AttachmentError(f"{parts.hostname}: cannot resolve ({exc.strerror})") from None
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if not address.is_global:
            raise AttachmentError(
                f"{url[:80]}: {address} is a private, loopback or reserved address; "
                "downloads from it are refused (allow_private=True / --allow-private-urls to permit)"
            )
