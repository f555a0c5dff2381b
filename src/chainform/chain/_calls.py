"""One model call of a chain: streamed into the event log, validated in the middleware, logged.

Kept apart from the turn loop (chain/_engine.py) so the loop reads top to bottom; this is the
plumbing every turn shares, whatever the strategy.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from chainform import _trace
from chainform.chain._events import ChainEvent, EventLog
from chainform.chain._records import ModelCall
from chainform.chain._tap import CallTap
from chainform.clients.base import BaseChatClient, CallContext, ChatClient
from chainform.errors import ProviderError, StructuredOutputGenerationError
from chainform.output._fallbacks import Fallbacks
from chainform.output._select import StrategyChoice
from chainform.output.strategies import NOT_FINAL, Strategy
from chainform.pricing import Meter
from chainform.types import ChatOptions, ChatResponse, Message

CallLogger = Callable[[ModelCall, Any], None]


class CallRunner:
    """Makes the calls of one chain and keeps their records (`calls`) in order."""

    def __init__(
        self,
        client: ChatClient,
        events: EventLog,
        fallbacks: Fallbacks,
        *,
        stream: bool,
        logger: CallLogger | None,
        meter: Meter | None = None,
    ) -> None:
        self.client = client
        self.meter = meter  # prices each call (its usage.cost) and holds the chain to max_cost
        self.events = events
        self.fallbacks = fallbacks
        self.stream = stream
        self.logger = logger
        self.calls: list[ModelCall] = []
        self.model_name: str | None = None
        self.choice: StrategyChoice | None = None
        self.format_context: str | None = None
        self._pending: list[ModelCall] = []

    async def call(
        self, messages: list[Message], options: ChatOptions, strategy: Strategy, purpose: str
    ) -> tuple[ChatResponse, Any, StructuredOutputGenerationError | None]:
        """One model call; returns (response, value or NOT_FINAL, validation error)."""
        if self.meter is not None:
            self.meter.check(self.calls)  # a capped chain ends between calls
        stream = self.stream and self.events.streamed
        stream = stream and not (options.tools and "streamed_tools" in self.fallbacks)
        try:
            return await self._call(messages, options, strategy, purpose, stream)
        except ProviderError as exc:
            if not (stream and options.tools and exc.kind == "streaming_rejected"):
                raise
            self.fallbacks.remember("streamed_tools", exc.provider_message[:200])
            return await self._call(messages, options, strategy, purpose, False)

    async def _call(
        self, messages: list[Message], options: ChatOptions, strategy: Strategy, purpose: str, stream: bool
    ) -> tuple[ChatResponse, Any, StructuredOutputGenerationError | None]:
        failure: list[StructuredOutputGenerationError] = []

        def checked(response: ChatResponse) -> Any:
            try:
                return strategy.check(response)
            except StructuredOutputGenerationError as exc:
                failure.append(exc)
                raise

        tap = CallTap(self.events, purpose, strategy.output)
        ctx = CallContext(
            list(messages),
            options,
            stream=stream,
            validator=checked if strategy.validates else None,
            value=NOT_FINAL,
            on_update=tap.on_update if stream else None,
        )
        started = time.perf_counter()
        error: StructuredOutputGenerationError | None = None
        try:
            if isinstance(self.client, BaseChatClient):
                response = await self.client.call(ctx)
            else:
                response = await self.client.get_response(ctx.messages, options)
                ctx.response = response
                if ctx.validator is not None:
                    ctx.value = ctx.validator(response)
            value = ctx.value if strategy.validates else strategy.check(response)
            if failure and value is NOT_FINAL:  # a middleware accepted an output that failed validation
                value = failure[-1].value
        except StructuredOutputGenerationError as exc:
            error, value = exc, NOT_FINAL
            response = ctx.response or ChatResponse([Message.assistant(exc.raw_text)])
        except Exception as exc:  # a broken stream's partial response keeps the text that arrived
            partial = getattr(exc, "partial_response", None)
            kind = type(exc).__name__
            self._record(purpose, ctx.messages, options, partial, started, f"{kind}: {exc}", failed=kind)
            raise
        if not stream:
            tap.whole(response)
        parsed = None if value is NOT_FINAL or not strategy.validates else plain_data(value)
        self._record(purpose, ctx.messages, options, response, started, str(error) if error else None, parsed)
        final = value is not NOT_FINAL and strategy.answers
        self.events.append(ChainEvent("call_end", value=final, purpose=purpose))
        return response, value, error

    def _record(
        self,
        purpose: str,
        messages: list[Message],
        options: ChatOptions,
        response: ChatResponse | None,
        started: float,
        error: str | None,
        parsed: Any = None,
        failed: str | None = None,
    ) -> None:
        call = ModelCall(
            purpose,
            messages,
            options,
            response,
            (time.perf_counter() - started) * 1000,
            error,
            self.choice.name if self.choice else None,
            parsed=parsed,
            format_context=self.format_context if purpose in ("format", "retry") else None,
            model=self.model_name,
            failed=failed,
        )
        if self.meter is not None:
            call.priced = self.meter.priced(response, call.model)
        if _trace.hooks is not None:
            _trace.hooks.call(call)
        self.flush_log()
        self.calls.append(call)
        self._pending.append(call)

    def flush_log(self) -> None:
        """Log calls whose tool results are known; called at every step and at the end."""
        pending, self._pending = self._pending, []
        if self.logger is not None:
            for call in pending:
                self.logger(call, self)


def plain_data(value: Any) -> Any:
    """JSON-able form of a validated value (pydantic instances dumped in JSON mode)."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    try:
        from pydantic import TypeAdapter

        return TypeAdapter(type(value)).dump_python(value, mode="json")
    except Exception:  # plain JSON values need no conversion
        return value
