"""Shared rate limits for every worker of a map: requests/min, tokens/min, and pool-wide pauses.

The budgets are aiolimiter leaky buckets. What aiolimiter does not do is the pause: when a
provider answers 429 with Retry-After, every worker must hold off (not only the one that was
told), or the others keep hitting the limit. `GatedClient` applies the gate to each model call of
a chain (a chain with tools makes several), and retries transient failures of that one call, so a
rate limit never restarts a chain whose tools already ran.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from aiolimiter import AsyncLimiter

from chainform.clients.base import BaseChatClient, CallContext, ChatClient
from chainform.errors import ProviderError
from chainform.types import ChatOptions, ChatResponse, ChatResponseUpdate, Message, ModelProfile

TRANSIENT_KINDS = ("rate_limit", "server", "timeout", "connection")
_MAX_BACKOFF = 30.0


@dataclass
class GateStats:
    """What the gate saw, for the progress line and tests."""

    calls: int = 0
    retried: int = 0
    rate_limited: int = 0
    tokens: int = 0


class RateGate:
    """Budgets shared by all workers of one map run (create it inside the run's event loop)."""

    def __init__(self, requests_per_minute: float | None, tokens_per_minute: float | None) -> None:
        self.rpm = requests_per_minute
        self.tpm = tokens_per_minute
        self._requests = AsyncLimiter(requests_per_minute, 60) if requests_per_minute else None
        self._tokens = AsyncLimiter(tokens_per_minute, 60) if tokens_per_minute else None
        self._resume_at = 0.0
        self.stats = GateStats()

    def ready(self) -> bool:
        """True when a call may start at once without asking the budgets (none set, no pause)."""
        return (
            self._requests is None
            and self._tokens is None
            and (self._resume_at == 0.0 or self._resume_at <= asyncio.get_running_loop().time())
        )

    async def turn(self, estimated_tokens: int) -> None:
        """Wait for a pause to end and for room in both budgets."""
        await self._paused()
        if self._requests is not None:
            await self._requests.acquire()
        if self._tokens is not None and self.tpm:
            await self._tokens.acquire(min(max(estimated_tokens, 1), self.tpm))
        await self._paused()  # a 429 elsewhere may have paused the pool while we waited

    async def spent(self, estimated_tokens: int, actual_tokens: int) -> None:
        """Charge what a call used beyond its estimate (the worker waits if that overdraws)."""
        self.stats.tokens += actual_tokens
        extra = actual_tokens - estimated_tokens
        if self._tokens is not None and self.tpm and extra > 0:
            await self._tokens.acquire(min(extra, self.tpm))

    def pause(self, seconds: float) -> None:
        """Hold every worker for `seconds` from now (a later, longer pause wins)."""
        loop = asyncio.get_running_loop()
        self._resume_at = max(self._resume_at, loop.time() + seconds)

    async def _paused(self) -> None:
        loop = asyncio.get_running_loop()
        while (wait := self._resume_at - loop.time()) > 0:
            await asyncio.sleep(wait)

    async def failed(self, exc: ProviderError, attempt: int) -> None:
        """Back off after a transient failure: a rate limit pauses the pool, others this worker."""
        self.stats.retried += 1
        if exc.kind == "rate_limit":
            self.stats.rate_limited += 1
            self.pause(exc.retry_after if exc.retry_after is not None else min(2.0**attempt, _MAX_BACKOFF))
            await self._paused()
        else:
            await asyncio.sleep(min(0.25 * 2.0**attempt, _MAX_BACKOFF) * (0.5 + random.random()))


def estimate_tokens(messages: Sequence[Message], options: ChatOptions) -> int:
    """A cheap guess of a call's tokens (4 characters a token), before the provider counts them."""
    chars = sum(len(m.text) for m in messages)
    return chars // 4 + 1 + (options.max_output_tokens or 0)


def is_transient(exc: ProviderError) -> bool:
    return exc.kind in TRANSIENT_KINDS


class GatedClient(BaseChatClient):
    """Wraps a model's client: every call waits its turn at the gate and retries transient faults."""

    def __init__(self, inner: ChatClient, gate: RateGate, retries: int) -> None:
        super().__init__()
        self.inner = inner
        self.gate = gate
        self.retries = retries
        self.retried = 0  # calls sent again through this client after a transient failure

    @property
    def profile(self) -> ModelProfile:
        return self.inner.profile

    async def call(self, ctx: CallContext) -> ChatResponse:
        attempt = 0
        gate = self.gate
        while True:
            estimate = estimate_tokens(ctx.messages, ctx.options) if gate.tpm else 0
            if not gate.ready():  # no budget set and no pause: nothing to wait for
                await gate.turn(estimate)
            gate.stats.calls += 1
            try:
                if isinstance(self.inner, BaseChatClient):
                    response = await self.inner.call(ctx)
                else:  # a bare ChatClient: the base class's own path (validator included)
                    response = await super().call(ctx)
            except ProviderError as exc:
                if not is_transient(exc) or attempt >= self.retries:
                    raise
                await gate.failed(exc, attempt)
                attempt += 1
                self.retried += 1
                continue
            usage = response.usage_details
            tokens = (usage.total_tokens or 0) if usage else 0
            if gate.tpm:
                await gate.spent(estimate, tokens)
            else:
                gate.stats.tokens += tokens
            return response

    def _stream(self, messages: list[Message], options: ChatOptions) -> AsyncIterator[ChatResponseUpdate]:
        return self.inner.get_streaming_response(messages, options)

    async def _complete(self, messages: list[Message], options: ChatOptions) -> ChatResponse:
        return await self.inner.get_response(messages, options)
