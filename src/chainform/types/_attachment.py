"""Attachments: a file, a URL or bytes handed to a model beside the prompt.

An `Attachment` is vocabulary: before a request is built it becomes a `DataContent` (inline bytes) or a
`UriContent` (a URL the provider fetches itself), or converted text for a model that cannot read it
(chainform.documents). Its content type is told from the bytes (puremagic), the file name's extension
only where the bytes say nothing, and `type=` overrides both.
"""

from __future__ import annotations

import hashlib
import ipaddress
import mimetypes
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from chainform.errors import AttachmentError
from chainform.keys import redact, remember_url
from chainform.types._content import DataContent, UriContent

_SNIFF_BYTES = 8192
MAX_READ_BYTES = 100_000_000
"""The most bytes any attachment is read into memory (a file, stdin, a download to convert), whatever
the model's own limit: devices, FIFOs and endless pipes never grow past it."""
# Extensions whose text types mimetypes does not know everywhere.
_TEXT_EXTENSIONS = {
    ".md": "text/markdown",
    ".csv": "text/csv",
    ".json": "application/json",
    ".txt": "text/plain",
}
_TEXT_TYPES = ("text/", "application/json", "application/xml")


@dataclass(frozen=True)
class ConversionLimits:
    """Bounds on converting one document to text locally (for a model that cannot read it): pages
    (a PDF's, or a TIFF's or GIF's frames), pixels of one rendered page or image (a PDF page is
    rendered at a smaller scale to fit; an image over it is refused before it is decoded), and
    seconds of OCR for the whole document. Over a bound: an AttachmentError naming it."""

    max_pages: int = 100
    max_pixels: int = 25_000_000
    ocr_seconds: float = 300.0

    def __post_init__(self) -> None:
        for name in ("max_pages", "max_pixels", "ocr_seconds"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < float("inf"):
                raise AttachmentError(f"ConversionLimits: {name} must be a positive number, not {value!r}")


def is_text_type(media_type: str) -> bool:
    """Whether `media_type` is text a model reads as text (plain, markdown, CSV, JSON, XML...)."""
    return media_type.startswith(_TEXT_TYPES)


@dataclass(eq=False)
class Attachment:
    """A document or image for the model: exactly one of `path`, `url` or `content` (bytes).

    `type` overrides the detected content type. A path is read lazily and once; `name` is what
    the log and the CLI call it (the file name, the URL's last segment, else "attachment");
    `limits` bounds its conversion to text (`ConversionLimits()` when None).
    """

    path: str | os.PathLike[str] | None = None
    url: str | None = None
    content: bytes | None = None
    type: str | None = None
    name: str | None = None
    limits: ConversionLimits | None = None  # bounds on converting it to text (None: the defaults)
    _data: bytes | None = field(default=None, init=False, repr=False)
    _media_type: str | None = field(default=None, init=False, repr=False)
    _declared: str | None = field(default=None, init=False, repr=False)  # a server's content type

    def __post_init__(self) -> None:
        given = [k for k in ("path", "url", "content") if getattr(self, k) is not None]
        if len(given) != 1:
            raise AttachmentError(
                "an Attachment needs exactly one of path=, url= or content= "
                f"(got {', '.join(given) or 'none'})"
            )
        if self.content is not None:
            if not isinstance(self.content, bytes | bytearray | memoryview):
                raise AttachmentError(f"content= takes bytes, not {type(self.content).__name__}")
            self._data = bytes(self.content)
        if self.url is not None:
            remember_url(self.url)  # a password in it is masked wherever text leaves chainform
            scheme = self.url.partition(":")[0].lower()
            if scheme not in ("http", "https", "data"):
                raise AttachmentError(
                    f"{redact(self.url)[:80]!r}: only http(s) and data: URLs can be attached"
                )
            if scheme != "data":
                check_url(self.url)
            if scheme == "data":
                try:
                    inline = DataContent.from_uri(self.url)
                except ValueError as exc:
                    raise AttachmentError(f"malformed data: URL ({exc})") from None
                self._data, self.url = inline.data, None
                self.type = self.type or inline.media_type
        if self.path is not None:
            self.path = Path(self.path)
        # a newline or other control character in a name would split the lines --td and logs print
        self.name = _CONTROL_CHARACTERS.sub("?", self._default_name() if self.name is None else self.name)

    def _default_name(self) -> str:
        if self.path is not None:
            return Path(self.path).name
        if self.url is not None:
            parts = urlsplit(self.url)
            return parts.path.rstrip("/").rsplit("/", 1)[-1] or parts.hostname or "attachment"
        return "attachment"

    @property
    def is_remote(self) -> bool:
        """A URL not yet downloaded."""
        return self.url is not None and self._data is None

    def size(self) -> int | None:
        """Size in bytes without reading the file (None for a URL not downloaded)."""
        if self._data is not None:
            return len(self._data)
        if self.path is not None:
            return self._stat().st_size
        return None

    def _stat(self) -> os.stat_result:
        path = Path(self.path or "")
        try:
            found = path.stat()
        except FileNotFoundError:
            raise AttachmentError(f"{path}: no such file") from None
        except OSError as exc:
            raise AttachmentError(f"{path}: cannot read ({exc.strerror or exc})") from None
        _check_regular(found, str(path))
        return found

    def read(self, max_bytes: int | None = None) -> bytes:
        """The bytes, read once; a file over `max_bytes` (at most MAX_READ_BYTES) is refused before
        it is read whole, and never more than that many bytes are read."""
        limit = MAX_READ_BYTES if max_bytes is None else min(max_bytes, MAX_READ_BYTES)
        if self._data is not None:
            data = self._data
        elif self.path is not None:
            data = self._data = read_regular(self.path, limit, self.name or str(self.path))
        else:
            raise AttachmentError(f"{self.url}: not downloaded yet")
        if not data:
            raise AttachmentError(f"{self.name}: is empty")
        if len(data) > limit:
            raise AttachmentError(f"{self.name}: {len(data):,} bytes is over the limit of {limit:,}")
        return data

    def _head(self) -> bytes:
        """The first bytes, enough to tell the type, without reading a large file whole."""
        if self._data is None and self.path is not None:
            head = read_regular(self.path, _SNIFF_BYTES, self.name or str(self.path), whole=False)
            if not head:
                raise AttachmentError(f"{self.name}: is empty")
            return head
        return self.read()[:_SNIFF_BYTES]

    def set_downloaded(self, data: bytes, media_type: str | None) -> None:
        """Keep what a download of `url` brought (chainform.documents fetches it). The server's
        content type is a claim like a file's extension: the bytes must agree with it."""
        self._data = data
        self._declared = media_type
        self._media_type = None

    def media_type(self) -> str:
        """The content type: `type=`, else told from the bytes, else from the extension."""
        if self._media_type is None:
            self._media_type = self._detect()
        return self._media_type

    def _detect(self) -> str:
        if self.type:
            return self.type
        by_name = self._declared or _type_from_name(self.name or "")
        if self.is_remote:
            if by_name is None:
                raise AttachmentError(f"{self.name}: cannot tell its content type (give type=)")
            return by_name
        data = self._head()
        by_bytes = _type_from_bytes(data)
        if by_bytes is None or (by_name and is_text_type(by_name) and _looks_like_text(data)):
            if _looks_like_text(data):
                return by_name if by_name and is_text_type(by_name) else "text/plain"
            if by_name and is_text_type(by_name):
                raise AttachmentError(
                    f"{self.name}: its bytes are not text, which contradicts its type ({by_name})"
                )
            raise AttachmentError(
                f"{self.name}: unknown binary content type (give type= or a known format: "
                "PNG, JPEG, WebP, GIF, PDF, text)"
            )
        if by_name and _family(by_name) != _family(by_bytes):
            raise AttachmentError(
                f"{self.name}: its bytes are {by_bytes}, which contradicts its extension ({by_name})"
            )
        return by_bytes

    def sha256(self) -> str:
        return hashlib.sha256(self.read()).hexdigest()

    def to_content(self) -> DataContent | UriContent:
        """The content part a provider receives as it is (no conversion)."""
        if self.is_remote:
            return UriContent(uri=self.url or "", media_type=self.media_type(), name=self.name)
        return DataContent(data=self.read(), media_type=self.media_type(), name=self.name)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "media_type": self.media_type(), "bytes": self.size()}


def read_regular(path: str | os.PathLike[str], limit: int, name: str, *, whole: bool = True) -> bytes:
    """At most `limit` bytes of the regular file at `path` (`whole`: all of it, refused when it is
    larger). The file is opened without blocking and checked on the open handle, so a FIFO, a
    device (/dev/zero reports size 0) or a socket is refused, never waited on or read forever, and
    a file swapped for one between a check and the read is caught."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise AttachmentError(f"{name}: no such file") from None
    except OSError as exc:
        raise AttachmentError(f"{name}: cannot read ({exc.strerror or exc})") from None
    try:
        found = os.fstat(fd)
        _check_regular(found, name)
    except BaseException:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as handle:
        if whole and found.st_size > limit:
            raise AttachmentError(f"{name}: {found.st_size:,} bytes is over the limit of {limit:,}")
        try:
            if not whole:
                data = handle.read(limit)
            else:  # its size (+1, to see it grew), then whatever it grew by up to the limit
                data = handle.read(min(found.st_size, limit) + 1)
                if found.st_size < len(data) <= limit:
                    data += handle.read(limit + 1 - len(data))
        except OSError as exc:
            raise AttachmentError(f"{name}: cannot read ({exc.strerror or exc})") from None
    if whole and len(data) > limit:
        raise AttachmentError(f"{name}: more than {limit:,} bytes (the limit)")
    return data


def _check_regular(found: os.stat_result, name: str) -> None:
    if stat.S_ISDIR(found.st_mode):
        raise AttachmentError(f"{name}: is a directory, not a file")
    if not stat.S_ISREG(found.st_mode):
        raise AttachmentError(
            f"{name}: is not a regular file (a device, FIFO or socket); "
            "give its bytes with content= or on stdin (-a -)"
        )


def _type_from_name(name: str) -> str | None:
    suffix = Path(name).suffix.lower()
    if suffix in _TEXT_EXTENSIONS:
        return _TEXT_EXTENSIONS[suffix]
    guessed, _ = mimetypes.guess_type(f"x{suffix}") if suffix else (None, None)
    return guessed


def _type_from_bytes(data: bytes) -> str | None:
    import puremagic  # a kept library of magic numbers; imported only when something is attached

    try:
        found = puremagic.from_string(data[:_SNIFF_BYTES], mime=True)
    except (puremagic.PureError, ValueError):
        return None
    return found or None


_CONTROL = re.compile(rb"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f]")
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")


def _looks_like_text(data: bytes) -> bool:
    """No NUL or other control bytes, and UTF-8 or (a legacy file: a cp1252 CSV) Windows-1252."""
    head = data[:_SNIFF_BYTES]
    if _CONTROL.search(head):
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start >= len(head) - 3:
            return True  # a multi-byte character cut by the sniff window
        return decode_text(head) is not None
    return True


def decode_text(data: bytes) -> str | None:
    """Text bytes as a string: UTF-8 (a BOM dropped), else Windows-1252; None when neither reads them."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252")
    except UnicodeDecodeError:
        return None


def check_url(url: str) -> None:
    """An http(s) URL chainform can parse and connect to; AttachmentError (its password masked) for
    a malformed one: a port that is not a number or out of range, junk after `[IPv6]`, a host that is
    not a valid name (`xn--`, an empty label)."""
    shown = redact(url)[:80]
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parsing the port is the check (ValueError when it is not one)
        host = parts.hostname
    except ValueError as exc:
        raise AttachmentError(f"{shown}: malformed URL ({exc})") from None
    if not host:
        raise AttachmentError(f"{shown}: malformed URL (no host)")
    where = parts.netloc.rpartition("@")[2]
    if where.startswith("["):
        rest = where[where.find("]") + 1 :]
        try:
            ipaddress.ip_address(host.split("%")[0])
        except ValueError:
            raise AttachmentError(f"{shown}: malformed URL ({host!r} is not an IP address)") from None
        if rest and not re.fullmatch(r":\d+", rest):
            raise AttachmentError(f"{shown}: malformed URL ({rest!r} after the address)")
        return
    try:
        host.encode("idna")
        for label in host.split("."):
            if label.lower().startswith("xn--"):
                label.encode("ascii").decode("idna")
    except UnicodeError:
        raise AttachmentError(f"{shown}: malformed URL ({host!r} is not a valid host name)") from None


def _family(media_type: str) -> str:
    """`image` for any image type, else the whole type: formats within a family may be relabelled."""
    major = media_type.split("/", 1)[0]
    return major if major in ("image", "audio", "video") else media_type
