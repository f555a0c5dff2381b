"""The ChatClient protocol and a base class with a middleware chain and guardrails.

A client on this base implements `_stream`, producing `ChatResponseUpdate`s; a non-streamed
response is the join of those updates (`_complete`) unless the client answers whole itself (the
provider adapters do where their API has a whole request: `_adapter.py`). Provider adapters are
`ProviderClient`s (`_adapter.py`), composed of an endpoint and a wire mapping; the in-process
clients (`local`, `ScriptedClient`, a map's gate) implement `_stream` directly.

Tool names on the wire: each provider gets names it accepts, and replies are mapped back
(`to_wire`, `from_wire`). Tools may be named `math.factorial` or `time.get_current_time` (MCP
prefixes), but OpenAI, Anthropic and Bedrock accept only ``[A-Za-z0-9_-]{1,64}``. The profile says
what a provider accepts (`ModelProfile.tool_name_pattern`); a name that does not fit is rewritten
(disallowed characters become ``_``, a short hash keeps rewritten names distinct) for the request
only, and the model's calls are renamed back before anything else sees them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from chainform.errors import GuardrailError, StructuredOutputGenerationError
from chainform.types import (
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionCallContent,
    FunctionResultContent,
    FunctionSpec,
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
    accept a failed output, or raise that error itself to reject one that validated. Its outcome
    is kept here, in one place: `value` when it passed, `failure` (the error, also raised) when not.
    """

    messages: list[Message]
    options: ChatOptions
    stream: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    validator: Callable[[ChatResponse], Any] | None = None
    value: Any = None
    failure: StructuredOutputGenerationError | None = None
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
        """The provider call, streamed: updates as they arrive."""
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
            validate(c, response)
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


def validate(ctx: CallContext, response: ChatResponse) -> None:
    """Run the call's validator, if any, keeping its outcome in the context (then raising a failure)."""
    if ctx.validator is None:
        return
    try:
        ctx.value = ctx.validator(response)
    except StructuredOutputGenerationError as exc:
        ctx.failure = exc
        raise


def _bind(mw: Middleware, nxt: CallNext) -> CallNext:
    async def handler(ctx: CallContext) -> ChatResponse:
        return await mw(ctx, nxt)

    return handler


_BAD = re.compile(r"[^A-Za-z0-9_-]")


def _digest(name: str) -> str:
    return hashlib.sha1(name.encode()).hexdigest()[:6]


class WireNames:
    """A two-way map between tool names and the names one provider accepts."""

    def __init__(self, pattern: str, names: Iterable[str]) -> None:
        self._fits = re.compile(pattern)
        self.to_wire: dict[str, str] = {}
        self.from_wire: dict[str, str] = {}
        ordered = list(dict.fromkeys(names))
        kept = {n for n in ordered if self._fits.fullmatch(n)}
        for name in ordered:
            wire = name if name in kept else self._rewrite(name, kept)
            self.to_wire[name] = wire
            self.from_wire[wire] = name

    def _rewrite(self, name: str, taken: set[str]) -> str:
        base = _BAD.sub("_", name)
        if not base[:1].isalpha() and not base.startswith("_"):
            base = "t_" + base
        wire = base[:64]
        if wire in taken or wire in self.from_wire or not self._fits.fullmatch(wire):
            wire = f"{base[:57]}_{_digest(name)}"
        return wire

    @property
    def identity(self) -> bool:
        return all(k == v for k, v in self.to_wire.items())

    def wire(self, name: str) -> str:
        return self.to_wire.get(name, name)

    def back(self, name: str) -> str:
        return self.from_wire.get(name, name)


def _names_in(messages: list[Message], options: ChatOptions) -> list[str]:
    names = [t.name for t in options.tools or ()]
    for message in messages:
        for c in message.contents:
            if isinstance(c, (FunctionCallContent, FunctionResultContent)) and c.name:
                names.append(c.name)
    return names


def _rename_contents(message: Message, rename: dict[str, str]) -> Message:
    return message.with_contents(
        [
            dataclasses.replace(c, name=rename.get(c.name, c.name))
            if isinstance(c, (FunctionCallContent, FunctionResultContent)) and c.name
            else c
            for c in message.contents
        ]
    )


def to_wire(
    messages: list[Message], options: ChatOptions, pattern: str
) -> tuple[list[Message], ChatOptions, WireNames | None]:
    """The request with every tool name in a form the provider accepts (None: nothing to rename)."""
    names = WireNames(pattern, _names_in(messages, options))
    if names.identity:
        return messages, options, None
    changed = {k: v for k, v in names.to_wire.items() if k != v}
    messages = [_rename_contents(m, changed) for m in messages]
    tools = [FunctionSpec(names.wire(t.name), t.description, dict(t.parameters)) for t in options.tools or ()]
    mode = options.tool_mode
    if mode is not None and mode.function_name:
        mode = dataclasses.replace(mode, function_name=names.wire(mode.function_name))
    return messages, options.replace(tools=tools or options.tools, tool_mode=mode), names


def from_wire(contents: Iterable[Content], names: WireNames) -> None:
    """Give the model's tool calls their original names again (in place: the adapter's fresh objects)."""
    for c in contents:
        if isinstance(c, FunctionCallContent) and c.name:
            c.name = names.back(c.name)
