"""Downloading an attached URL for a provider that does not fetch it itself.

A model's prompt can name any URL, so a download is guarded: http(s) only, a size cap read as the
body streams (never trusting Content-Length alone), a deadline for the whole download (redirects
included) beside the timeout on silence, at most five redirects each checked again, and addresses
in private, loopback, link-local or reserved ranges refused unless allowed. The connection goes to
the address that was checked (the request keeps the name in its Host header and TLS server name), so
a name that answers a public address to the check and 127.0.0.1 to the connection is never fetched.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx

from chainform.errors import AttachmentError
from chainform.keys import redact
from chainform.types._attachment import Attachment, check_url

MAX_BYTES = 50_000_000
TIMEOUT = 30.0
_MAX_REDIRECTS = 5


def fetch(
    attachment: Attachment,
    *,
    max_bytes: int | None = None,
    timeout: float | None = None,
    allow_private: bool = False,
    stop: threading.Event | None = None,
) -> Attachment:
    """Download `attachment.url` into the attachment (its bytes and the server's content type);
    `max_bytes` and `timeout` (seconds: for the whole download, and for any silence) default to
    MAX_BYTES and TIMEOUT as they are at the call. `stop` set, or the program ending (Ctrl-C): the
    download ends at its next chunk."""
    max_bytes = MAX_BYTES if max_bytes is None else max_bytes
    timeout = TIMEOUT if timeout is None else timeout
    if not attachment.is_remote:
        return attachment
    url = attachment.url or ""
    name = attachment.name or redact(url)
    deadline = _Deadline(name, timeout, stop)
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False) as client:
            for _ in range(_MAX_REDIRECTS + 1):
                target, headers, extensions = _pinned(url, allow_private)
                with client.stream("GET", target, headers=headers, extensions=extensions) as response:
                    if response.is_redirect:
                        url = urljoin(url, response.headers.get("location", ""))
                        deadline.check()
                        continue
                    if response.status_code >= 400:
                        raise AttachmentError(f"{name}: the server answered HTTP {response.status_code}")
                    body = _body(response, name, max_bytes, deadline)
                    media = response.headers.get("content-type", "").split(";")[0].strip() or None
                    attachment.set_downloaded(body, None if media == "application/octet-stream" else media)
                    return attachment
            raise AttachmentError(f"{name}: more than {_MAX_REDIRECTS} redirects")
    except httpx.TimeoutException:
        raise AttachmentError(f"{name}: the download timed out after {timeout:g} s") from None
    except httpx.HTTPError as exc:
        raise AttachmentError(
            f"{name}: the download failed ({type(exc).__name__}: {redact(str(exc))})"
        ) from None
    except (ValueError, UnicodeError) as exc:  # a URL httpx or the resolver cannot take
        if isinstance(exc, AttachmentError):
            raise
        raise AttachmentError(f"{name}: malformed URL ({redact(str(exc))})") from None


def _body(response: httpx.Response, name: str, max_bytes: int, deadline: _Deadline) -> bytes:
    declared = response.headers.get("content-length") or "0"
    if declared.isdigit() and int(declared) > max_bytes:
        raise AttachmentError(f"{name}: {int(declared):,} bytes is over the limit of {max_bytes:,}")
    body = bytearray()
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) > max_bytes:
            raise AttachmentError(f"{name}: more than {max_bytes:,} bytes (the limit)")
        deadline.check()
    return bytes(body)


class _Deadline:
    """The download's deadline: a server that sends a byte a second is stopped like a silent one;
    a stopped chain or an ending program stops it too."""

    def __init__(self, name: str, timeout: float, stop: threading.Event | None) -> None:
        self.name, self.timeout, self.stop = name, timeout, stop
        self.end = time.monotonic() + timeout

    def check(self) -> None:
        if (self.stop is not None and self.stop.is_set()) or not threading.main_thread().is_alive():
            raise AttachmentError(f"{self.name}: the download was stopped")
        if time.monotonic() > self.end:
            raise AttachmentError(
                f"{self.name}: the download took longer than {self.timeout:g} s (the deadline)"
            )


def _pinned(url: str, allow_private: bool) -> tuple[str, dict[str, str], dict[str, str]]:
    """The URL to connect to (its host replaced by the checked address), the Host header and the
    TLS server name that keep the original name; the URL as it is when private addresses are allowed."""
    check_url(url)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AttachmentError(f"{redact(url)[:80]}: only http(s) URLs are downloaded")
    if allow_private:
        return url, {}, {}
    host = parts.hostname
    address = _checked_address(host, parts.port or (443 if parts.scheme == "https" else 80), url)
    literal = f"[{address}]" if address.version == 6 else str(address)
    netloc = literal if parts.port is None else f"{literal}:{parts.port}"
    if parts.username is not None:
        netloc = f"{parts.netloc.rpartition('@')[0]}@{netloc}"
    target = urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))
    host_header = parts.netloc.rpartition("@")[2]
    return target, {"Host": host_header}, {"sni_hostname": host} if parts.scheme == "https" else {}


def _checked_address(host: str, port: int, url: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The first address `host` resolves to, refused when any is not a global one."""
    try:
        infos = socket.getaddrinfo(host, port, proto=socket.IPPROTO_TCP)
    except socket.gaierror as exc:
        raise AttachmentError(f"{host}: cannot resolve ({exc.strerror})") from None
    addresses = [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
    for address in addresses:
        if not address.is_global:
            raise AttachmentError(
                f"{redact(url)[:80]}: {address} is a private, loopback or reserved address; "
                "downloads from it are refused (allow_private=True / --allow-private-urls to permit)"
            )
    if not addresses:
        raise AttachmentError(f"{host}: cannot resolve (no address)")
    return addresses[0]
