"""Messages, responses and streaming updates, and the join that turns a stream into a response."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from chainform.types._content import (
    Content,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
    TextReasoningContent,
    UsageContent,
    encodable_text,
    encodable_value,
    parse_arguments,
)
from chainform.types._usage import UsageDetails
from chainform.types._values import FinishReason, Role


def _text_of(contents: Iterable[Content]) -> str:
    return "".join(c.text for c in contents if isinstance(c, TextContent))


def encodable_messages(messages: list[Message]) -> list[Message]:
    """`messages` as a provider can encode them: text a model wrote with lone surrogates comes back
    in the history; every SDK would fail to send it. Messages needing no change are kept as they are."""
    return [m if _encodable(m) else _escaped(m) for m in messages]


def _encodable(message: Message) -> bool:
    try:
        for c in message.contents:
            if isinstance(c, TextContent | TextReasoningContent):
                c.text.encode("utf-8")
            elif isinstance(c, FunctionCallContent):
                c.arguments_json().encode("utf-8")
            elif isinstance(c, FunctionResultContent):
                c.result_text().encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _escaped(message: Message) -> Message:
    contents: list[Content] = []
    for c in message.contents:
        if isinstance(c, TextContent | TextReasoningContent):
            c = dataclasses.replace(c, text=encodable_text(c.text))
        elif isinstance(c, FunctionCallContent):
            raw = encodable_text(c.raw_arguments) if c.raw_arguments is not None else None
            c = dataclasses.replace(c, arguments=encodable_value(c.arguments), raw_arguments=raw)
        elif isinstance(c, FunctionResultContent):
            error = encodable_text(c.error) if c.error is not None else None
            c = dataclasses.replace(c, result=encodable_value(c.result), error=error)
        contents.append(c)
    return message.with_contents(contents)


def _as_contents(contents: str | Content | Sequence[Content] | None) -> list[Content]:
    if contents is None:
        return []
    if isinstance(contents, str):
        return [TextContent(contents)]
    if isinstance(contents, list | tuple):
        return list(contents)
    return [contents]  # type: ignore[list-item]


@dataclass(init=False)
class Message:
    """One turn of a conversation. `contents` may be given as a plain string."""

    role: Role
    contents: list[Content]
    author_name: str | None
    message_id: str | None
    raw_representation: Any
    additional_properties: dict[str, Any]

    def __init__(
        self,
        role: str,
        contents: str | Content | Sequence[Content] | None = None,
        *,
        author_name: str | None = None,
        message_id: str | None = None,
        raw_representation: Any = None,
        additional_properties: dict[str, Any] | None = None,
    ) -> None:
        self.role = Role(role)
        self.contents = _as_contents(contents)
        self.author_name = author_name
        self.message_id = message_id
        self.raw_representation = raw_representation
        self.additional_properties = dict(additional_properties or {})

    def with_contents(self, contents: Sequence[Content]) -> Message:
        """A copy of this message holding other contents; role, ids and extras are kept."""
        return Message(
            self.role,
            list(contents),
            author_name=self.author_name,
            message_id=self.message_id,
            raw_representation=self.raw_representation,
            additional_properties=self.additional_properties,
        )

    @property
    def text(self) -> str:
        return _text_of(self.contents)

    @property
    def function_calls(self) -> list[FunctionCallContent]:
        return [c for c in self.contents if isinstance(c, FunctionCallContent)]

    @property
    def function_results(self) -> list[FunctionResultContent]:
        return [c for c in self.contents if isinstance(c, FunctionResultContent)]

    @classmethod
    def system(cls, text: str) -> Message:
        return cls(Role.SYSTEM, text)

    @classmethod
    def user(cls, contents: str | Content | Sequence[Content]) -> Message:
        return cls(Role.USER, contents)

    @classmethod
    def assistant(cls, contents: str | Content | Sequence[Content]) -> Message:
        return cls(Role.ASSISTANT, contents)


@dataclass
class ChatResponseUpdate:
    """One streamed piece of a response; `ChatResponse.from_updates` joins them."""

    contents: list[Content] = field(default_factory=list)
    role: Role | None = None
    author_name: str | None = None
    response_id: str | None = None
    message_id: str | None = None
    conversation_id: str | None = None
    model_id: str | None = None
    created_at: float | None = None
    finish_reason: FinishReason | None = None
    raw_representation: Any = None
    additional_properties: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return _text_of(self.contents)


@dataclass
class ChatResponse:
    """A complete model reply: usually one assistant message, possibly with tool calls."""

    messages: list[Message] = field(default_factory=list)
    response_id: str | None = None
    conversation_id: str | None = None
    model_id: str | None = None
    created_at: float | None = None
    finish_reason: FinishReason | None = None
    usage_details: UsageDetails | None = None
    raw_representation: Any = None
    additional_properties: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "".join(m.text for m in self.messages)

    @property
    def function_calls(self) -> list[FunctionCallContent]:
        return [c for m in self.messages for c in m.function_calls]

    @property
    def reasoning(self) -> str:
        return "".join(
            c.text for m in self.messages for c in m.contents if isinstance(c, TextReasoningContent)
        )

    @classmethod
    def from_updates(cls, updates: Iterable[ChatResponseUpdate]) -> ChatResponse:
        """Join streamed updates; the result equals the response the provider would have sent whole."""
        joiner = _Joiner()
        for update in updates:
            joiner.add(update)
        return joiner.finish()


class _Joiner:
    """Accumulates updates: merges adjacent text, reassembles tool-call argument fragments, sums usage."""

    def __init__(self) -> None:
        self.response = ChatResponse()
        self.current: Message | None = None
        self.calls_by_index: dict[int, FunctionCallContent] = {}
        self.calls_by_id: dict[str, FunctionCallContent] = {}
        self.fragments: dict[int, list[str]] = {}
        self.text_parts: dict[int, list[str]] = {}

    def add(self, update: ChatResponseUpdate) -> None:
        r = self.response
        r.response_id = update.response_id or r.response_id
        r.conversation_id = update.conversation_id or r.conversation_id
        r.model_id = update.model_id or r.model_id
        r.created_at = r.created_at or update.created_at
        r.finish_reason = update.finish_reason or r.finish_reason
        r.additional_properties.update(update.additional_properties)
        message = self._message_for(update)
        for content in update.contents:
            if isinstance(content, UsageContent):
                r.usage_details = content.details + r.usage_details
            elif isinstance(content, FunctionCallContent):
                self._add_call(message, content)
            else:
                self._add_content(message, content)

    def _message_for(self, update: ChatResponseUpdate) -> Message:
        cur = self.current
        new_id = (
            update.message_id is not None
            and cur is not None
            and cur.message_id
            not in (
                None,
                update.message_id,
            )
        )
        new_role = update.role is not None and cur is not None and cur.role != update.role
        if cur is None or new_id or new_role:
            cur = Message(update.role or Role.ASSISTANT, message_id=update.message_id)
            self.response.messages.append(cur)
            self.current = cur
        cur.message_id = cur.message_id or update.message_id
        cur.author_name = cur.author_name or update.author_name
        return cur

    def _add_content(self, message: Message, content: Content) -> None:
        """Adjacent text pieces are collected and joined once (`+=` per delta would be quadratic)."""
        last = message.contents[-1] if message.contents else None
        pending = self.text_parts.get(id(last)) if last is not None else None
        if pending is not None and isinstance(content, TextContent) and type(last) is TextContent:
            pending.append(content.text)
        elif (
            pending is not None
            and isinstance(content, TextReasoningContent)
            and isinstance(last, TextReasoningContent)
            and last.protected_data is None
        ):
            pending.append(content.text)
            last.protected_data = content.protected_data
        elif isinstance(content, TextContent | TextReasoningContent):
            piece = (
                TextContent(content.text)
                if isinstance(content, TextContent)
                else TextReasoningContent(content.text, content.protected_data)
            )
            message.contents.append(piece)
            self.text_parts[id(piece)] = [content.text]
        else:
            message.contents.append(content)

    def _add_call(self, message: Message, fragment: FunctionCallContent) -> None:
        call = None
        if fragment.index is not None:
            call = self.calls_by_index.get(fragment.index)
        if call is None and fragment.call_id:
            call = self.calls_by_id.get(fragment.call_id)
        if call is None:
            call = FunctionCallContent(fragment.call_id, fragment.name, index=fragment.index)
            message.contents.append(call)
            self.fragments[id(call)] = []
            if fragment.index is not None:
                self.calls_by_index[fragment.index] = call
        call.call_id = call.call_id or fragment.call_id
        call.name = call.name or fragment.name
        if call.call_id:
            self.calls_by_id[call.call_id] = call
        if fragment.arguments is not None and not fragment.raw_arguments:
            call.arguments = dict(fragment.arguments)
        if fragment.raw_arguments:
            self.fragments[id(call)].append(fragment.raw_arguments)

    def finish(self) -> ChatResponse:
        for message in self.response.messages:
            for content in message.contents:
                if isinstance(content, TextContent | TextReasoningContent):
                    content.text = "".join(self.text_parts.get(id(content), [content.text]))
                elif isinstance(content, FunctionCallContent):
                    parts = self.fragments.get(id(content))
                    if parts:
                        content.raw_arguments = "".join(parts)
                        content.arguments = parse_arguments(content.raw_arguments)
                    elif content.arguments is None:
                        content.arguments = {}
        if self.response.created_at is None:
            self.response.created_at = time.time()
        return self.response
