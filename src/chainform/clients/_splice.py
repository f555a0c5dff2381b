"""Inline attachments without copies: the request carries a short token where the base64 goes, and the
body is spliced as it is sent.

An SDK given a 40 MB PDF as base64 makes a copy at every step (the base64 text, the data URL, the
JSON text, its UTF-8 bytes, the socket buffer): about six times the file. Adapters put `token(...)`
(or `data_uri(...)`, `placeholder(...)` for SDKs that take bytes) in the request instead; the SDK
serialises a small body, and at the HTTP layer:

- httpx-based SDKs (openai, anthropic, google-genai) get a request hook (`httpx_hook`) that swaps
  the body for a stream writing the base64 in 1 MB pieces straight from the bytes (no copy of the
  file at all, re-iterable so the SDK's retries resend it, with its exact Content-Length);
- botocore (Bedrock), which signs the body's hash, gets the body spliced once into bytes before
  signing (`splice_bytes`: one base64 copy).

The tokens of one SDK client live in its `Splicer`, made with the client and handed to its hooks
and to the adapter's `Endpoint` (`_hooks.SdkHooks`); a token is forgotten with its content. Kept by hand because no library
splices encoded data into an SDK's request; the token is 40 characters of [a-z0-9], the same in
base64 and URL-safe base64, so a placeholder's own encoding is the token.
"""

from __future__ import annotations

import base64
import functools
import io
import re
import uuid
import weakref
from collections.abc import Callable, Iterator
from typing import Any

from chainform.errors import AttachmentError
from chainform.types import DataContent

_PREFIX = b"cfinline"
_TOKEN = re.compile(rb"cfinline[0-9a-f]{32}")
_CHUNK = 3 * 262_144  # raw bytes a piece: a multiple of 3, so pieces encode without padding between them


def has_tokens(body: bytes) -> bool:
    return _PREFIX in body and _TOKEN.search(body) is not None


class Splicer:
    """The inline attachments of one SDK client's requests: each token stands for a content's
    base64 until the body is sent, and is forgotten with the content."""

    def __init__(self) -> None:
        # token -> (the content, whether the SDK writes URL-safe base64)
        self._pending: dict[str, tuple[weakref.ref[DataContent], bool]] = {}

    def token(self, content: DataContent, *, urlsafe: bool = False) -> str:
        """A token that stands for `content`'s base64 (URL-safe or not) until the body is sent."""
        made = (_PREFIX + uuid.uuid4().hex.encode()).decode("ascii")
        pending = self._pending
        pending[made] = (weakref.ref(content, lambda _: pending.pop(made, None)), urlsafe)
        return made

    def data_uri(self, content: DataContent) -> str:
        """`data:<type>;base64,<token>`: a data URL whose base64 is spliced in when sent."""
        return f"data:{content.media_type};base64,{self.token(content)}"

    def placeholder(self, content: DataContent, *, urlsafe: bool = False) -> bytes:
        """Bytes whose base64 is the token: for SDKs that take the raw bytes and encode them."""
        return base64.b64decode(self.token(content, urlsafe=urlsafe))

    def _lookup(self, found: bytes) -> tuple[bytes, bool]:
        entry = self._pending.get(found.decode("ascii"))
        content = entry[0]() if entry is not None else None
        if entry is None or content is None:
            raise AttachmentError("an inline attachment was released before its request was sent")
        return content.data, entry[1]

    def pieces(self, body: bytes) -> Iterator[bytes | memoryview]:
        """`body` with every token replaced by its content's base64, in pieces of at most ~1 MB."""
        view = memoryview(body)
        start = 0
        for match in _TOKEN.finditer(body):
            if match.start() > start:
                yield view[start : match.start()]
            data, urlsafe = self._lookup(match.group())
            encode: Callable[[bytes], bytes] = base64.urlsafe_b64encode if urlsafe else base64.b64encode
            raw = memoryview(data)
            for at in range(0, len(raw), _CHUNK):
                yield encode(raw[at : at + _CHUNK])  # type: ignore[arg-type]
            start = match.end()
        if start < len(body):
            yield view[start:]

    def length(self, body: bytes) -> int:
        """The length of `body` once spliced."""
        total = len(body)
        for match in _TOKEN.finditer(body):
            total += 4 * ((len(self._lookup(match.group())[0]) + 2) // 3) - len(match.group())
        return total

    def splice_bytes(self, body: bytes) -> bytes:
        """`body` with its tokens replaced, as one bytes object (the file's base64 copied once)."""
        if not has_tokens(body):
            return body
        out = io.BytesIO()
        for piece in self.pieces(body):
            out.write(piece)
        return out.getvalue()  # BytesIO hands its buffer over without a copy

    def httpx_hook(self, httpx_module: Any) -> Callable[[Any], Any]:
        """An httpx `request` event hook (for `httpx_module`, httpx or httpx2) splicing inline
        attachments into the body as it is sent."""
        stream_class = _stream_class(httpx_module.AsyncByteStream)

        async def splice(request: Any) -> None:
            body = request.content if isinstance(request.stream, httpx_module.ByteStream) else b""
            if not has_tokens(body):
                return
            request.headers["Content-Length"] = str(self.length(body))
            request.headers.pop("Transfer-Encoding", None)
            request.stream = stream_class(body, self)

        return splice

    def botocore_hook(self, request: Any, **_: Any) -> None:
        """A botocore `before-sign` handler: the body spliced before its hash is signed."""
        body = request.data
        if isinstance(body, bytes) and has_tokens(body):
            request.data = self.splice_bytes(body)


@functools.cache
def _stream_class(base: type) -> type:
    """A re-iterable body stream for one httpx flavour (`base` is its AsyncByteStream)."""

    class SplicedStream(base):  # type: ignore[misc, valid-type]
        def __init__(self, body: bytes, splicer: Splicer) -> None:
            self.body = body
            self.splicer = splicer

        async def __aiter__(self) -> Any:
            for piece in self.splicer.pieces(self.body):
                yield bytes(piece)

        async def aclose(self) -> None:
            return None

    return SplicedStream
