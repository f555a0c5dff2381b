"""Turning one model call's stream into chain events: text chunks and partial objects."""

from __future__ import annotations

from chainform.chain._events import ChainEvent, EventLog
from chainform.output import OUTPUT_TOOL_NAME, OutputSpec
from chainform.schema.partial import parse_partial
from chainform.types import ChatResponse, ChatResponseUpdate, FunctionCallContent, TextContent


class CallTap:
    """Watches one model call. Partial objects come from the answer's JSON text or from the
    `final_result` call's streamed arguments; `partials=False` (a deferred chain's tool phase,
    whose text is not the answer) emits text only."""

    def __init__(self, events: EventLog, purpose: str, output: OutputSpec | None, *, partials: bool) -> None:
        self.events = events
        self.purpose = purpose
        self.output = output if partials else None
        self.text = ""
        self.call_names: dict[int | str, str] = {}
        self.call_args: dict[int | str, str] = {}

    async def on_update(self, update: ChatResponseUpdate) -> None:
        for content in update.contents:
            if isinstance(content, TextContent) and content.text:
                self._text(content.text)
                self.text += content.text
                self._partial(self.text, tool=False)
            elif isinstance(content, FunctionCallContent):
                key: int | str = content.index if content.index is not None else content.call_id
                if content.name:
                    self.call_names[key] = content.name
                if self.call_names.get(key) == OUTPUT_TOOL_NAME and content.raw_arguments:
                    self.call_args[key] = self.call_args.get(key, "") + content.raw_arguments
                    self._text(content.raw_arguments)
                    self._partial(self.call_args[key], tool=True)

    def whole(self, response: ChatResponse) -> None:
        """The same events for a call that was not streamed."""
        if response.text:
            self._text(response.text)
            self._partial(response.text, tool=False)
        for call in response.function_calls:
            if call.name == OUTPUT_TOOL_NAME:
                self._text(call.arguments_json())
                self._partial(call.arguments_json(), tool=True)

    def _text(self, text: str) -> None:
        self.events.append(ChainEvent("text", text, purpose=self.purpose))

    def _partial(self, text: str, *, tool: bool) -> None:
        if self.output is None:
            return
        value = parse_partial(text)
        if tool and self.output.wraps_for_tool and isinstance(value, dict):
            value = value.get("result")
        if value is not None:
            self.events.append(ChainEvent("partial", value=value, purpose=self.purpose))
