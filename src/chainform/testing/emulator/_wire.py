"""The wire-format plugin interface of the emulator (the request record every format reads is
`_script.RecordedRequest`, re-exported here).

The core (`_server.py`) knows HTTP, the script, faults and stream framing; it knows no
provider. A provider's wire format is a `WireFormat` subclass in its own module of this package (`_openai_chat.py`,
`_anthropic.py`, ...) exposing a module-level `WIRE_FORMATS` tuple of instances. The core finds
those modules by itself (any `_*.py` here other than the core's own), so adding a provider never
touches the core.

The plugin interface (override what your provider needs):

- `name`: a short id, recorded on each request (`RecordedRequest.wire_format`).
- `routes`: regexes matched in full against the URL path of a POST (no query string); named
  groups land in `RecordedRequest.path_params` (e.g. `(?P<model>[^/:]+)` for Gemini).
- `is_stream(request)`: whether to answer with a stream (default: JSON body `"stream": true`).
- `render(reply, request) -> dict`: the non-streamed JSON body for a neutral `Reply`.
- `render_stream(reply, request) -> list[StreamEvent]`: the events of a streamed reply, last
  one included (e.g. OpenAI's `[DONE]`: pass a str as `data` to send it verbatim).
- `render_error(fault, request) -> dict`: the provider's error body for a `Fault`.
- `media(request) -> list[RecordedMedia]`: the request's images and documents as the provider
  reads them (`_media.py`); raising `MediaRefused` answers HTTP 400, as the provider would.
- `request_id_header`: the header carrying the request id (`x-request-id` by default).
- `stream_content_type`, `encode_event(event) -> bytes`, `malformed_event() -> bytes`: framing;
  Server-Sent Events by default. Override for binary framings (Bedrock's event stream).
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from dataclasses import dataclass
from typing import Any, ClassVar

from chainform.testing.emulator._media import RecordedMedia
from chainform.testing.emulator._script import Fault, RecordedRequest, Reply

__all__ = ["ERROR_TYPES", "RecordedRequest", "StreamEvent", "WireFormat"]

# The `type` OpenAI's and Anthropic's APIs both give the body of these client errors.
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
}

_CORE_MODULES = frozenset(
    {"_server", "_script", "_wire", "_media", "_batches", "_anthropic_batches", "_gemini_batches"}
)


@dataclass
class StreamEvent:
    """One streamed event: `data` is JSON-encoded unless it is a str (sent verbatim)."""

    data: Any
    event: str | None = None


class WireFormat:
    """Base of every provider wire format; see the module docstring for the contract."""

    name: ClassVar[str] = "base"
    routes: ClassVar[tuple[str, ...]] = ()
    request_id_header: ClassVar[str] = "x-request-id"
    stream_content_type: ClassVar[str] = "text/event-stream"

    def is_stream(self, request: RecordedRequest) -> bool:
        return request.json.get("stream") is True

    def render(self, reply: Reply, request: RecordedRequest) -> dict[str, Any]:
        raise NotImplementedError

    def render_stream(self, reply: Reply, request: RecordedRequest) -> list[StreamEvent]:
        raise NotImplementedError

    def render_error(self, fault: Fault, request: RecordedRequest) -> dict[str, Any]:
        return {"error": {"message": fault.text, "code": fault.status}}

    def media(self, request: RecordedRequest) -> list[RecordedMedia]:
        return []

    def encode_event(self, event: StreamEvent) -> bytes:
        data = event.data if isinstance(event.data, str) else json.dumps(event.data)
        head = f"event: {event.event}\n" if event.event else ""
        return f"{head}data: {data}\n\n".encode()

    def malformed_event(self) -> bytes:
        return b'data: {"broken": \n\n'

    def cache_prefixes(self, request: RecordedRequest) -> list[Any]:
        """The parts of `request` its cache markers ask the provider to cache (JSON-able, one per
        marker; none: no caching asked). The longest one the emulator saw before is reported as
        cached input tokens (`Usage.cached_input_tokens`), as the provider's cache would."""
        return []


def marked_prefixes(blocks: list[Any], marked: str) -> list[Any]:
    """The prefixes of `blocks` that end at each block holding the key `marked` (cache_control,
    cachePoint): what a provider with cache breakpoints caches."""
    return [blocks[: i + 1] for i, block in enumerate(blocks) if isinstance(block, dict) and marked in block]


def leading_instructions(body: dict[str, Any], key: str) -> list[Any]:
    """The system/developer messages (or items) that open `body[key]`: with the tools, what
    OpenAI's automatic cache finds again for requests that share a prompt_cache_key."""
    lead = []
    for message in body.get(key) or []:
        if not isinstance(message, dict) or message.get("role") not in ("system", "developer"):
            break
        lead.append(message)
    return [body.get("prompt_cache_key"), body.get("tools"), body.get("instructions"), lead]


def discover_formats() -> list[WireFormat]:
    """Every `WIRE_FORMATS` declared by a private module of this package."""
    package = importlib.import_module("chainform.testing.emulator")
    found: list[WireFormat] = []
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        if not info.name.startswith("_") or info.name in _CORE_MODULES:
            continue
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        found.extend(getattr(module, "WIRE_FORMATS", ()))
    return found
