"""A replayable event stream: the engine appends, any number of sync or async readers follow.

One model call's stream becomes chain events here too (`CallTap`): text chunks, tagged with the
answer they build. Partial objects are not parsed then: a reader that asks for them derives them
from the tagged text (`PartialObjects`), so a chain nobody watches that way pays nothing for them.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from chainform.output import OUTPUT_TOOL_NAME, OutputSpec
from chainform.schema.partial import PartialJSON
from chainform.types import ChatResponse, ChatResponseUpdate, FunctionCallContent, TextContent

EventKind = Literal["text", "partial", "tool_call", "tool_result", "call_end", "attachment", "fallback"]


@dataclass(frozen=True)
class ChainEvent:
    """Something that happened while a chain ran; `purpose` says which kind of model call it belongs to.

    `call_end` closes each model call; its `value` is True when that call produced the final answer;
    a call that failed (its text, if any, cut short) closes with `text` saying so ("MODEL failed: KIND").
    `attachment` (before any call) says how an attachment reached the model (`value`: a
    documents.Conversion; `text`: "receipt.png: OCR, 14 lines").
    `fallback` follows a failed call's `call_end` when the chain goes on with the next model
    (`value`: a `FellBack`; `text`: "MODEL failed: KIND; NEXT answers from here"): the text streamed
    since the last answer is not the answer, and partial objects start over.
    A `text` event that builds a structured answer carries its `JsonSource` as `value`.
    """

    kind: EventKind
    text: str = ""
    value: Any = None
    purpose: str = "chain"


@dataclass(frozen=True)
class FellBack:
    """A chain's switch to its next fallback model: the model that failed, why, and the next one."""

    failed: str
    error: Exception
    model: str


@dataclass(frozen=True)
class JsonSource:
    """Which JSON a text chunk extends: the answer text (`tool_call` None) or an output-tool call's
    arguments, whose answer sits under "result" when `unwrap`."""

    tool_call: int | str | None
    unwrap: bool = False


class EventLog:
    """Appended to on the engine's loop; read from threads (sync API) or the same loop (async API)."""

    def __init__(self) -> None:
        self.events: list[ChainEvent] = []
        self.closed = False
        self._cond = threading.Condition()
        self._sleepers = 0
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
        self.readers = 0
        self.result_only = False

    @property
    def streamed(self) -> bool:
        """Whether the next model call should stream: unless a caller waits for the result alone
        (`.text()`, `.value`, `await`) with nobody reading events. A reader who joins later still
        gets every event (the log replays), a whole call's in one burst."""
        return self.readers > 0 or not self.result_only

    def append(self, event: ChainEvent) -> None:
        # One event per streamed delta: no lock unless a reader sleeps. Readers announce themselves
        # before they check for new events, so an event appended after that check sees them.
        self.events.append(event)
        if self._sleepers:
            with self._cond:
                self._cond.notify_all()
        if self._waiters:
            self._wake()

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify_all()
        self._wake()

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for loop, event in waiters:
            loop.call_soon_threadsafe(event.set)

    def follow(self) -> Iterator[ChainEvent]:
        """Every event from the start, blocking for new ones until the log closes."""
        self.readers += 1
        try:
            yield from self._follow()
        finally:
            self.readers -= 1

    def _follow(self) -> Iterator[ChainEvent]:
        index = 0
        while True:
            with self._cond:
                self._sleepers += 1
                while index >= len(self.events) and not self.closed:
                    self._cond.wait()
                self._sleepers -= 1
                if index >= len(self.events):
                    return
                event = self.events[index]
            index += 1
            yield event

    async def afollow(self) -> AsyncIterator[ChainEvent]:
        self.readers += 1
        try:
            async for event in self._afollow():
                yield event
        finally:
            self.readers -= 1

    async def _afollow(self) -> AsyncIterator[ChainEvent]:
        index = 0
        while True:
            if index < len(self.events):
                index += 1
                yield self.events[index - 1]
                continue
            if self.closed:
                return
            wake = asyncio.Event()
            self._waiters.append((asyncio.get_running_loop(), wake))
            if index < len(self.events) or self.closed:
                continue
            await wake.wait()


class FinalText:
    """Turns events into text chunks; without `intermediate`, only the final answer's text.

    The formatting call's text is always final and passes at once; other calls' text is held until
    the call ends and released only if that call gave the answer (a turn cannot be known to be the
    last before it ends: tool calls may follow its text).
    """

    def __init__(self, intermediate: bool) -> None:
        self.intermediate = intermediate
        self.held: list[str] = []

    def feed(self, event: ChainEvent) -> list[str]:
        if event.kind == "text":
            if self.intermediate or event.purpose == "format":
                return [event.text]
            self.held.append(event.text)
        elif event.kind == "call_end":
            held, self.held = self.held, []
            return held if event.value else []
        return []


class PartialObjects:
    """Adds `partial` events after the text events that build a structured answer.

    Readers that ask for partial objects run this over the log, so parsing happens only for them;
    `PartialJSON` keeps it linear, and the last partial of each call is its complete JSON.
    """

    def __init__(self) -> None:
        self.answers: dict[JsonSource, PartialJSON] = {}
        self.purpose = "chain"

    def feed(self, event: ChainEvent) -> list[ChainEvent]:
        if event.kind == "text" and isinstance(event.value, JsonSource):
            self.purpose = event.purpose
            answer = self.answers.setdefault(event.value, PartialJSON())
            return [event, *self._partial(event.value, answer.feed(event.text))]
        if event.kind == "call_end":
            return [*self.close(), event]
        return [event]

    def close(self) -> list[ChainEvent]:
        """The final partial of each answer still open (at a call's end or the log's)."""
        answers, self.answers = self.answers, {}
        return [e for source, answer in answers.items() for e in self._partial(source, answer.finish())]

    def _partial(self, source: JsonSource, value: Any) -> list[ChainEvent]:
        if source.unwrap:
            value = value.get("result") if isinstance(value, dict) else None
        if value is None:
            return []
        return [ChainEvent("partial", value=value, purpose=self.purpose)]


class CallTap:
    """Watches one model call. Answer text and the `final_result` call's streamed arguments are
    tagged as JSON sources; with no `output` (no schema, or a deferred chain's tool phase, whose
    text is not the answer) text is left untagged."""

    def __init__(self, events: EventLog, purpose: str, output: OutputSpec | None) -> None:
        self.events = events
        self.purpose = purpose
        self.output = output
        self.call_names: dict[int | str, str] = {}
        self.sources: dict[int | str | None, JsonSource] = {}

    async def on_update(self, update: ChatResponseUpdate) -> None:
        for content in update.contents:
            if isinstance(content, TextContent) and content.text:
                self._text(content.text, None)
            elif isinstance(content, FunctionCallContent):
                key: int | str = content.index if content.index is not None else content.call_id
                if content.name:
                    self.call_names[key] = content.name
                if self.call_names.get(key) == OUTPUT_TOOL_NAME and content.raw_arguments:
                    self._text(content.raw_arguments, key)

    def whole(self, response: ChatResponse) -> None:
        """The same events for a call that was not streamed."""
        if response.text:
            self._text(response.text, None)
        for index, call in enumerate(response.function_calls):
            if call.name == OUTPUT_TOOL_NAME:
                self._text(call.arguments_json(), index)

    def _text(self, text: str, call: int | str | None) -> None:
        source = None
        if self.output is not None:
            source = self.sources.get(call)
            if source is None:
                unwrap = call is not None and self.output.wraps_for_tool
                source = self.sources[call] = JsonSource(call, unwrap)
        self.events.append(ChainEvent("text", text, value=source, purpose=self.purpose))
