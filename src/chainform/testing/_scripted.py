"""ScriptedClient: a real ChatClient whose replies come from a script, for tests (yours and ours)."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Union

from chainform.clients.base import BaseChatClient, Middleware
from chainform.errors import ScriptExhaustedError
from chainform.types import (
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    FinishReason,
    FunctionCallContent,
    Message,
    ModelProfile,
    Role,
    TextContent,
    UsageContent,
    UsageDetails,
)

_ids = itertools.count(1)

Reply = Union[
    str, FunctionCallContent, ChatResponse, BaseException, Sequence[Union[str, FunctionCallContent]]
]
ScriptItem = Union[Reply, Callable[[list[Message], ChatOptions], Reply]]


def tool_call(name: str, /, *, _raw: str | None = None, **arguments: Any) -> FunctionCallContent:
    """A scripted tool call. `_raw` sends argument text verbatim (e.g. broken JSON)."""
    call_id = f"call_{next(_ids)}"
    if _raw is not None:
        return FunctionCallContent.from_raw(call_id, name, _raw)
    return FunctionCallContent(call_id, name, dict(arguments), json.dumps(arguments))


def _count_tokens(text: str) -> int:
    return len(text.split())


def _chunks(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


class ScriptedClient(BaseChatClient):
    """Answers each request with the next script item and records it in `.requests`.

    Items: a str (text reply), `tool_call(name, **args)`, a list of those (parallel calls, text
    allowed), a `ChatResponse`, an exception instance (raised), or a callable
    `(messages, options) -> one of those`. Replies stream as several updates with usage
    (whitespace-separated words count as tokens).
    """

    def __init__(
        self,
        script: Sequence[ScriptItem],
        profile: ModelProfile | None = None,
        *,
        chunk_size: int = 4,
        middleware: Sequence[Middleware] = (),
        model_id: str = "scripted",
    ) -> None:
        super().__init__(
            profile=profile
            or ModelProfile(
                name="scripted",
                provider="testing",
                supports_json_schema=True,
                supports_tools_with_schema=True,
            ),
            middleware=middleware,
        )
        self.script = list(script)
        self.position = 0
        self.chunk_size = chunk_size
        self.model_id = model_id
        self.requests: list[tuple[list[Message], ChatOptions]] = []

    @property
    def remaining(self) -> int:
        return len(self.script) - self.position

    def _next_reply(self, messages: list[Message], options: ChatOptions) -> Reply:
        self.requests.append((list(messages), options))
        if self.position >= len(self.script):
            raise ScriptExhaustedError(
                f"ScriptedClient ran out of script: request #{len(self.requests)} arrived but the "
                f"script has only {len(self.script)} item(s). Last message: {messages[-1].text[:120]!r}"
                if messages
                else f"ScriptedClient ran out of script after {len(self.script)} item(s)"
            )
        item = self.script[self.position]
        self.position += 1
        if callable(item) and not isinstance(item, BaseException):
            item = item(list(messages), options)
        return item

    async def _stream(
        self, messages: list[Message], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate]:
        reply = self._next_reply(messages, options)
        if isinstance(reply, BaseException):
            raise reply
        response_id = f"resp_{next(_ids)}"
        if isinstance(reply, ChatResponse):
            for message in reply.messages:
                yield ChatResponseUpdate(list(message.contents), role=message.role, response_id=response_id)
            if reply.usage_details or reply.finish_reason:
                yield ChatResponseUpdate(
                    [UsageContent(reply.usage_details or UsageDetails())], finish_reason=reply.finish_reason
                )
            return
        parts = [reply] if isinstance(reply, str | FunctionCallContent) else list(reply)
        output = 0
        base = dict(role=Role.ASSISTANT, response_id=response_id, model_id=self.model_id)
        for index, part in enumerate(parts):
            if isinstance(part, str):
                output += _count_tokens(part)
                for piece in _chunks(part, self.chunk_size):
                    yield ChatResponseUpdate([TextContent(piece)], **base)  # type: ignore[arg-type]
                continue
            raw = part.arguments_json() if part.raw_arguments is None else part.raw_arguments
            output += max(1, len(raw) // 4)
            pieces = _chunks(raw, self.chunk_size)
            first = FunctionCallContent(part.call_id, part.name, raw_arguments=pieces[0], index=index)
            yield ChatResponseUpdate([first], **base)  # type: ignore[arg-type]
            for piece in pieces[1:]:
                fragment = FunctionCallContent("", "", raw_arguments=piece, index=index)
                yield ChatResponseUpdate([fragment], **base)  # type: ignore[arg-type]
        has_calls = any(isinstance(p, FunctionCallContent) for p in parts)
        prompt = sum(_count_tokens(m.text) for m in messages)
        yield ChatResponseUpdate(
            [UsageContent(UsageDetails(input_tokens=prompt, output_tokens=output))],
            finish_reason=FinishReason.TOOL_CALLS if has_calls else FinishReason.STOP,
            **base,  # type: ignore[arg-type]
        )
