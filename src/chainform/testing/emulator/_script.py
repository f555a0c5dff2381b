"""The provider-neutral script an emulator plays: replies, usage and scripted faults.

A script item is what a test author writes; `Reply` is what a wire format renders. Keeping the
two apart lets every wire format share one notion of "the model said this".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from chainform.testing.emulator._media import RecordedMedia
from chainform.types import FunctionCallContent, TextReasoningContent

Part = Union[str, FunctionCallContent, TextReasoningContent]


@dataclass
class RecordedRequest:
    """One request as the emulator received it. `body` is the parsed JSON (None if it was not JSON)."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    raw_body: bytes
    index: int
    request_id: str
    wire_format: str | None = None
    path_params: dict[str, str] = field(default_factory=dict)
    # the images and documents it carried, decoded (testing/emulator/_media.py)
    media: list[RecordedMedia] = field(default_factory=list)

    @property
    def json(self) -> dict[str, Any]:
        """The body as a dict (empty when it was not a JSON object)."""
        return self.body if isinstance(self.body, dict) else {}


@dataclass
class Usage:
    """Token counts a reply reports; wire formats spell them in their own fields."""

    input_tokens: int
    output_tokens: int
    cached_input_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass
class Reply:
    """One model turn in neutral form: text, tool calls and reasoning, in the order given.

    `finish_reason` uses the neutral values "stop", "tool_calls", "length", "content_filter";
    None derives it ("tool_calls" when the reply calls a tool). `usage` None is estimated from
    the request size (4 bytes a token) and the reply text (one token a word).
    """

    parts: list[Part]
    usage: Usage | None = None
    finish_reason: str | None = None
    chunk_size: int | None = None

    @property
    def text(self) -> str:
        return "".join(p for p in self.parts if isinstance(p, str))

    @property
    def calls(self) -> list[FunctionCallContent]:
        return [p for p in self.parts if isinstance(p, FunctionCallContent)]

    @property
    def reasoning(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextReasoningContent))

    @property
    def finish(self) -> str:
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.calls else "stop"

    def chunks(self, text: str) -> list[str]:
        """`text` cut into the deltas a stream sends (at least one, possibly empty)."""
        size = self.chunk_size or 8
        return [text[i : i + size] for i in range(0, len(text), size)] or [""]


@dataclass
class Fault:
    """An HTTP error reply in the provider's error format; `retry_after` (seconds) sets Retry-After."""

    status: int = 500
    retry_after: float | None = None
    message: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.message if self.message is not None else f"emulated error (HTTP {self.status})"


@dataclass
class MalformedEvent:
    """Stream `after_events` events of `reply`, then one event whose data is not valid JSON.

    A non-streaming request gets a 200 response with `body` under `content_type` (by default JSON
    cut short; any bytes, to play a server whose whole answer is not the completion it should be).
    """

    after_events: int = 1
    reply: ReplyItem = "partial answer"
    body: bytes = b'{"id": "broken", "choices": ['
    content_type: str = "application/json"


@dataclass
class DropConnection:
    """Stream `after_events` events of `reply`, then close the socket mid-body.

    A non-streaming request (or `after_events=0`) has its connection closed before any response.
    """

    after_events: int = 2
    reply: ReplyItem = "partial answer that never finishes"


@dataclass
class Stall:
    """Answer `reply` only after `seconds`, like a provider that hangs: a client whose timeout is
    shorter sees a timeout (and may retry). Stopping the emulator cuts the wait short.

    `after_events`: stream that many events of `reply` first, then go silent mid-stream (the rest
    follows the pause, to a client still listening). `every`: pause before each event from there
    on (a slow, steady stream: long in total, never silent for longer than `seconds`).
    """

    seconds: float = 5.0
    reply: ReplyItem = "an answer that came too late"
    after_events: int | None = None
    every: bool = False


@dataclass
class CutStream:
    """Stream `after_events` events of `reply`, then end the body cleanly (the chunked
    terminator, no error): a server that stops early with nothing wrong on the wire. `mid_event`
    sends the first half of the next event before the end, a cut in the middle of an event."""

    after_events: int = 2
    reply: ReplyItem = "partial answer that ends cleanly too soon"
    mid_event: bool = False


@dataclass
class RawResponse:
    """An HTTP response sent exactly as given: `status`, `body` bytes (a recorded JSON body, an
    event stream, an AWS event stream) under `content_type`, plus `headers`. For replaying what
    a real server said, byte for byte, whatever the request asked."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


ReplyItem = Union[Part, Sequence[Part], Reply]
FaultItem = Union[Fault, MalformedEvent, DropConnection, Stall, CutStream, RawResponse]
ScriptItem = Union[ReplyItem, FaultItem, Callable[[RecordedRequest], Union[ReplyItem, FaultItem]]]


def to_reply(item: ReplyItem) -> Reply:
    """The neutral `Reply` for a reply item (str, tool call, reasoning, list of those, or Reply)."""
    if isinstance(item, Reply):
        return item
    if isinstance(item, str | FunctionCallContent | TextReasoningContent):
        return Reply([item])
    parts = list(item)
    for part in parts:
        if not isinstance(part, str | FunctionCallContent | TextReasoningContent):
            raise TypeError(
                f"emulator script part must be str, tool_call(...) or TextReasoningContent, "
                f"got {type(part).__name__}"
            )
    return Reply(parts)


def estimate_usage(reply: Reply, raw_body: bytes) -> Usage:
    """Deterministic token counts for replies whose script gave none."""
    words = len(reply.text.split()) + len(reply.reasoning.split())
    words += sum(max(1, len(c.arguments_json()) // 4) for c in reply.calls)
    return Usage(input_tokens=max(1, len(raw_body) // 4), output_tokens=words)
