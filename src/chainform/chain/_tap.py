"""Turning one model call's stream into chain events: text chunks, tagged with the answer they build.

Partial objects are not parsed here: a reader that asks for them derives them from the tagged text
(`PartialObjects`), so a chain nobody watches that way pays nothing for them.
"""

from __future__ import annotations

from chainform.chain._events import ChainEvent, EventLog, JsonSource
from chainform.output import OUTPUT_TOOL_NAME, OutputSpec
from chainform.types import ChatResponse, ChatResponseUpdate, FunctionCallContent, TextContent


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
