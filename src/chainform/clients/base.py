"""The ChatClient protocol and a base class with a middleware chain and guardrails.

Every adapter implements one method, `_stream`, producing `ChatResponseUpdate`s: a non-streamed
response is the join of those updates, so streaming and non-streaming can never disagree.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from chainform.clients._tool_names import from_wire, to_wire
from chainform.errors import GuardrailError
from chainform.types import (
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    Message,
    ModelProfile,
    encodable_messages,
)


@runtime_checkable
class ChatClient(Protocol):
    """What the chain engine needs from a provider: two async calls and a capability profile."""

    @property
    def profile(self) -> ModelProfile: ...

    async def get_response(
        self, messages: Sequence[Message], options: ChatOptions | None = None
    ) -> ChatResponse: ...

    def get_streaming_response(
        self, messages: Sequence[Message], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]: ...


@dataclass
class CallContext:
    """One call as middleware sees it. Middleware may change `messages`/`options` before `call_next`.

    `validator`, when the chain engine sets it, checks the finished response (raising
    `StructuredOutputGenerationError`) INSIDE the middleware chain, so a middleware can catch and
    accept a failed output, or raise that error itself to reject one that validated.
    """

    messages: list[Message]
    options: ChatOptions
    stream: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    validator: Callable[[ChatResponse], Any] | None = None
    value: Any = None
    response: ChatResponse | None = None
    on_update: Callable[[ChatResponseUpdate], Awaitable[None]] | None = None


CallNext = Callable[[CallContext], Awaitable[ChatResponse]]
Middleware = Callable[[CallContext, CallNext], Awaitable[ChatResponse]]
InputGuardrail = Callable[[list[Message]], "list[Message] | Awaitable[list[Message] | None] | None"]
OutputGuardrail = Callable[[ChatResponse], "ChatResponse | Awaitable[ChatResponse | None] | None"]


async def _maybe_await(value: Any) -> Any:
    if asyncio.iscoroutine(value) or isinstance(value, asyncio.Future):
        return await value
    return value


class BaseChatClient:
    """Base of every adapter: middleware around each call, then input/output guardrails.

    A guardrail returns None to pass, a replacement to rewrite, or raises `GuardrailError` to reject.
    """

    def __init__(
        self,
        *,
        profile: ModelProfile | None = None,
        middleware: Sequence[Middleware] = (),
        input_guardrails: Sequence[InputGuardrail] = (),
        output_guardrails: Sequence[OutputGuardrail] = (),
    ) -> None:
        self._profile = profile or ModelProfile()
        self.middleware: list[Middleware] = list(middleware)
        self.input_guardrails: list[InputGuardrail] = list(input_guardrails)
        self.output_guardrails: list[OutputGuardrail] = list(output_guardrails)

    @property
    def profile(self) -> ModelProfile:
        return self._profile

    def _stream(self, messages: list[Message], options: ChatOptions) -> AsyncIterator[ChatResponseUpdate]:
        """The provider call. Subclasses yield updates as they arrive."""
        raise NotImplementedError

    async def _prepare(self, messages: list[Message]) -> list[Message]:
        """The messages as this client sends them; adapters check attachments here."""
        return messages

    async def _complete(self, messages: list[Message], options: ChatOptions) -> ChatResponse:
        """Non-streaming provider call; by default the join of `_stream`."""
        return ChatResponse.from_updates([u async for u in self._stream(messages, options)])

    def add_middleware(self, middleware: Middleware) -> None:
        self.middleware.append(middleware)

    async def call(self, ctx: CallContext) -> ChatResponse:
        """Run one call through guardrails and middleware. The engine's entry point."""

        async def terminal(c: CallContext) -> ChatResponse:
            await self._check_input(c)
            c.messages = encodable_messages(c.messages)
            messages, options, names = to_wire(c.messages, c.options, self.profile.tool_name_pattern)
            messages = await self._prepare(messages)
            if c.stream:
                updates: list[ChatResponseUpdate] = []
                async for update in self._stream(messages, options):
                    if names is not None:
                        from_wire(update.contents, names)
                    updates.append(update)
                    if c.on_update is not None:
                        await c.on_update(update)
                response = ChatResponse.from_updates(updates)
            else:
                response = await self._complete(messages, options)
                if names is not None:
                    from_wire((x for m in response.messages for x in m.contents), names)
            response = await self._check_output(response)
            c.response = response
            if c.validator is not None:
                c.value = c.validator(response)
            return response

        handler: CallNext = terminal
        for mw in reversed(self.middleware):
            handler = _bind(mw, handler)
        return await handler(ctx)

    async def get_response(
        self, messages: Sequence[Message], options: ChatOptions | None = None
    ) -> ChatResponse:
        return await self.call(CallContext(list(messages), options or ChatOptions()))

    async def get_streaming_response(
        self, messages: Sequence[Message], options: ChatOptions | None = None
    ) -> AsyncIterator[ChatResponseUpdate]:
        queue: asyncio.Queue[ChatResponseUpdate | None] = asyncio.Queue()

        async def push(update: ChatResponseUpdate) -> None:
            await queue.put(update)

        ctx = CallContext(list(messages), options or ChatOptions(), stream=True, on_update=push)
        task = asyncio.ensure_future(self.call(ctx))
        task.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (item := await queue.get()) is not None:
                yield item
            await task  # re-raise what the call raised
        finally:
            if not task.done():
                task.cancel()

    async def _check_input(self, ctx: CallContext) -> None:
        for guard in self.input_guardrails:
            replaced = await _maybe_await(guard(ctx.messages))
            if replaced is not None:
                ctx.messages = list(replaced)

    async def _check_output(self, response: ChatResponse) -> ChatResponse:
        for guard in self.output_guardrails:
            try:
                replaced = await _maybe_await(guard(response))
            except GuardrailError as exc:
                exc.stage = "output"
                raise
            if replaced is not None:
                response = replaced
        return response


def _bind(mw: Middleware, nxt: CallNext) -> CallNext:
    async def handler(ctx: CallContext) -> ChatResponse:
        return await mw(ctx, nxt)

    return handler
