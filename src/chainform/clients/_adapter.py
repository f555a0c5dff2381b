"""The adapter skeleton: one straight line from chainform messages to updates, through one
provider's wire functions.

A provider adapter is a `ProviderClient` composed of two parts, neither a subclass of the other:
an `Endpoint` (the model, its provider and profile, the key to mask, the timeouts) and a `Wire`
(the provider's wire mapping, one concern per function). A streamed call runs, in order:

1. `wire.build_request(messages, options)`: the SDK call's keyword arguments;
2. `wire.open_stream(sdk, request, reader, guard)`: the adapter's one SDK call, awaited under the
   idle clock (`_timeouts.py`), its failures typed by `wire.error`;
3. each event read by `reader.translate` (a `StreamState` from `wire.reader(request)`), or a whole
   JSON body, from a gateway that ignored `stream: true`, by `reader.whole`;
4. `reader.end(guard)`: the last updates, or the typed error of a stream that stopped short.

An unstreamed call (`_complete`) is the join of that stream, unless the wire answers whole
(`WholeWire`: Chat Completions, Bedrock's `converse`): then `send_whole` and `read_answer`.
Only SDK calls sit inside the `try`s, so a bug in translation is never disguised as a provider
failure. What adapters share to write their mapping (`StreamState`, turn merging, usage and
finish reasons) is in `_wire.py`.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pydantic_core import from_json

from chainform.clients import _splice
from chainform.clients._errors import StreamGuard
from chainform.clients._hooks import SdkHooks, hooks_of
from chainform.clients._media import Media, checked
from chainform.clients._timeouts import Clocks, IdleClock, within
from chainform.clients._wire import StreamState, tool_mode
from chainform.clients.base import BaseChatClient, Middleware
from chainform.clients.profiles import profile_for
from chainform.errors import ChainformError, UnsupportedOptionError
from chainform.types import (
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    DataContent,
    Message,
    ModelProfile,
    Timeout,
    TimeoutLike,
)


@dataclass(eq=False)
class Endpoint:
    """What every call of one client shares, and the helpers a wire mapping reads it through.

    `splicer`: the SDK client's `_splice.Splicer` when it splices inline data as it sends, so a
    request may carry a token where an attachment's base64 goes; `clocks`: its hooks' table of
    the idle clocks of calls in flight (`_timeouts.Clocks`), when it has those hooks. `allow_private_urls`: whether a URL this
    provider does not fetch may be downloaded from a private address."""

    model: str
    provider: str
    profile: ModelProfile
    timeout: Timeout = field(default_factory=Timeout)
    base_url: str | None = None
    secret: str | None = field(default=None, repr=False)  # only to scrub it from error messages
    splicer: _splice.Splicer | None = None
    clocks: Clocks | None = None
    allow_private_urls: bool = False

    @classmethod
    def for_model(
        cls,
        model: str,
        provider: str,
        known_models: Mapping[str, ModelProfile],
        unknown_profile: ModelProfile,
        *,
        profile: ModelProfile | str | None = None,
        timeout: TimeoutLike = None,
        base_url: str | None = None,
        secret: str | None = None,
    ) -> Endpoint:
        """The endpoint of `model`, whose profile is the one given, else its family's entry in
        `known_models` (`clients/profiles/<family>.py`), else `unknown_profile` renamed."""
        if isinstance(profile, str):  # a name is resolved by the OpenAI-compatible adapters only
            raise ValueError(f"profile={profile!r}: {provider} models take a ModelProfile, not a name")
        found = profile or profile_for(model, known_models, unknown_profile)
        return cls(model, provider, found, Timeout.of(timeout), base_url, secret)

    def guard(self) -> StreamGuard:
        """A fresh failure reporter for one call."""
        return StreamGuard(self.provider, self.secret)

    def check_options(self, options: ChatOptions) -> None:
        """Refuse, by name and before anything is sent, options this model has no equivalent for."""
        bad = [f"{k}={v!r}" for k, v in options.set_fields().items() if k in self.profile.unsupported_options]
        if bad:
            raise UnsupportedOptionError(
                f"option(s) {', '.join(bad)} not supported by {self.provider}/{self.model}; "
                "remove them or choose another model",
                provider=self.provider,
            )
        mode = tool_mode(options)
        if mode is not None and mode.mode == "required" and not self.profile.supports_tool_choice_required:
            raise UnsupportedOptionError(
                f"tool_mode=required is not supported by {self.provider}/{self.model}: "
                "it cannot be made to call a tool",
                provider=self.provider,
            )

    def in_dialect(self, schema: Mapping[str, Any]) -> dict[str, Any] | bool:
        """`schema` in this model's dialect (the engine restores outputs against the original);
        raises `SchemaError` when the dialect cannot express it."""
        return self.profile.dialect.convert(schema if isinstance(schema, dict) else dict(schema)).schema

    def dialect_schema(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        """`schema` in this model's dialect, as an object schema (`true` accepts anything: `{}`)."""
        converted = self.in_dialect(schema)
        return dict(converted) if isinstance(converted, dict) else {}

    def inline_base64(self, content: DataContent) -> str:
        """`content`'s base64 for the request: a token spliced in as the body is sent, where the
        SDK client splices, else the base64 itself."""
        return self.splicer.token(content) if self.splicer is not None else content.base64

    def inline_uri(self, content: DataContent) -> str:
        """`content` as a data URL for the request (its base64 spliced in when sent, as above)."""
        return self.splicer.data_uri(content) if self.splicer is not None else content.uri

    def inline_bytes(self, content: DataContent, *, urlsafe: bool = False) -> bytes:
        """`content`'s bytes for SDKs that encode them: a placeholder whose base64 is spliced."""
        if self.splicer is None:
            return content.data
        return self.splicer.placeholder(content, urlsafe=urlsafe)


class Wire(Protocol):
    """One provider's wire mapping: what the skeleton calls, in this order, for a streamed call."""

    def build_request(self, messages: Sequence[Message], options: ChatOptions) -> dict[str, Any]:
        """The keyword arguments of the SDK call."""
        ...

    def reader(self, request: dict[str, Any]) -> StreamState:
        """The translation state of one call."""
        ...

    def open_stream(
        self, sdk: Any, request: dict[str, Any], reader: StreamState, guard: StreamGuard
    ) -> Awaitable[Any]:
        """The SDK call that starts the stream."""
        ...

    def error(self, exc: Exception, guard: StreamGuard, opened: bool) -> ChainformError:
        """What the SDK raised, typed (`opened`: the stream had begun); `sdk_error` is the default."""
        ...


@runtime_checkable
class WholeWire(Wire, Protocol):
    """A wire whose API answers an unstreamed request whole, cheaper than a stream."""

    def send_whole(self, sdk: Any, request: dict[str, Any]) -> Awaitable[Any] | None:
        """The SDK call of an unstreamed request; None to stream it after all."""
        ...

    def read_answer(
        self, raw: Any, request: dict[str, Any], guard: StreamGuard
    ) -> list[ChatResponseUpdate] | None:
        """The whole answer's updates; None when the server streamed anyway."""
        ...


def sdk_error(exc: Exception, guard: StreamGuard, opened: bool) -> ChainformError:
    """What an SDK raised that its adapter does not know: an early ValueError or TypeError is a
    refused request, anything else a broken stream."""
    if not opened and isinstance(exc, ValueError | TypeError):
        return guard.error(f"request refused: {type(exc).__name__}: {exc}", kind="bad_request")
    return guard.error(f"stream broke: {type(exc).__name__}: {exc}")


class ProviderClient(BaseChatClient):
    """A provider adapter: an `Endpoint`, a `Wire` and the SDK client (given, or built on first use
    by `build_sdk` with the hooks it installs; one it built is closed by `aclose`)."""

    whole_sender: Callable[[dict[str, Any]], Awaitable[Any]] | None = None
    """Set on a map's copy of the client by `map(..., batch=True)`: each whole request goes into a
    provider batch (`_map/_batch.py`), whose answer's body is read as this API's whole answer."""

    def __init__(
        self,
        endpoint: Endpoint,
        wire: Wire,
        sdk: Any = None,
        *,
        build_sdk: Callable[[SdkHooks], Any] | None = None,
        middleware: Sequence[Middleware] = (),
    ) -> None:
        super().__init__(middleware=middleware)
        self.endpoint = endpoint
        self.wire = wire
        self._sdk = sdk
        self._build_sdk = build_sdk
        self._downloads: dict[str, DataContent] = {}  # URL -> content (`_media.checked`)
        # an SDK client this adapter builds gets hooks of its own, handed to `build_sdk`
        self._use_hooks(SdkHooks() if sdk is None else hooks_of(sdk))
        # a client the caller gave is the caller's to close; one the registry built (it can build
        # another) is this adapter's
        self._owns_sdk = sdk is None or (self._hooks is not None and self._hooks.rebuild is not None)

    def _use_hooks(self, hooks: SdkHooks | None) -> None:
        self._hooks = hooks
        self.endpoint.splicer = hooks.splicer if hooks is not None else None
        self.endpoint.clocks = hooks.clocks if hooks is not None else None

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"{type(self).__name__}(model={self.model!r}, provider={self.provider!r}{where})"

    @property
    def profile(self) -> ModelProfile:
        return self.endpoint.profile

    @property
    def model(self) -> str:
        return self.endpoint.model

    @property
    def provider(self) -> str:
        return self.endpoint.provider

    @property
    def base_url(self) -> str | None:
        return self.endpoint.base_url

    @property
    def timeout(self) -> Timeout:
        return self.endpoint.timeout

    @property
    def allow_private_urls(self) -> bool:
        return self.endpoint.allow_private_urls

    @allow_private_urls.setter
    def allow_private_urls(self, allowed: bool) -> None:
        self.endpoint.allow_private_urls = allowed

    @property
    def sdk(self) -> Any:
        """The provider SDK's client, built on first use."""
        if self._sdk is None:
            rebuild = self._hooks.rebuild if self._hooks is not None else None
            if self._build_sdk is not None:
                assert self._hooks is not None  # made with the adapter (`__init__`)
                self._sdk = self._build_sdk(self._hooks)
            elif rebuild is not None:  # the registry's client was closed: a new one, with its hooks
                self._sdk = rebuild()
                self._use_hooks(hooks_of(self._sdk))
            else:
                raise RuntimeError(f"{self!r} was given no SDK client")
        return self._sdk

    async def aclose(self) -> None:
        """Close the connections of the SDK client this adapter built; the next call builds a new
        one. A dropped SDK client otherwise closes its connections whenever it is collected, which
        can stall the loop of whatever runs then."""
        sdk, self._sdk = self._sdk, (None if self._owns_sdk else self._sdk)
        if sdk is None or not self._owns_sdk:
            return
        close = getattr(sdk, "close", None)  # a coroutine for openai and anthropic, not for boto3
        if close is not None and inspect.isawaitable(result := close()):
            await result
        for closer in hooks.closers if (hooks := hooks_of(sdk)) is not None else ():
            await closer()

    def guard(self) -> StreamGuard:
        return self.endpoint.guard()

    def build_request(self, messages: Sequence[Message], options: ChatOptions) -> dict[str, Any]:
        """The keyword arguments of the SDK call (public so tests and logs can inspect them)."""
        return self.wire.build_request(messages, options)

    async def _prepare(self, messages: list[Message]) -> list[Message]:
        """Attachments checked against the profile before anything is sent; URLs the provider does
        not fetch downloaded (`_media.py`). Messages without a file go as they are."""
        if not any(isinstance(c, Media) for m in messages for c in m.contents):
            return messages
        return await checked(
            messages, self.profile, allow_private=self.endpoint.allow_private_urls, downloads=self._downloads
        )

    async def _stream(
        self, messages: list[Message], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate]:
        async for update in self._stream_request(self.wire.build_request(messages, options)):
            yield update

    async def _stream_request(self, request: dict[str, Any]) -> AsyncIterator[ChatResponseUpdate]:
        """A built request sent streamed: its updates as they are read."""
        guard = self.endpoint.guard()
        reader = self.wire.reader(request)
        clock = IdleClock(self.endpoint.timeout, guard)
        with self._calling(clock) as call:
            opening = self.wire.open_stream(self.sdk, self._tagged(request, call), reader, guard)
            try:  # a failed wait closes the clock itself
                stream = await clock.wait(opening, opening=True)
            except ChainformError:
                raise
            except Exception as exc:
                raise self.wire.error(
                    exc, guard, False
                ) from None  # no chained SDK error: it may quote the key
            guard.request_id = guard.request_id or getattr(stream, "request_id", None)
            reading = self._read(stream, reader, guard, clock)
            try:
                async for update in reading:
                    yield guard.seen(update)
            finally:
                await reading.aclose()
                clock.close()
                close = getattr(stream, "aclose", None) or getattr(stream, "close", None)
                if close is not None and inspect.isawaitable(result := close()):
                    await result
        for update in reader.end(guard):
            yield guard.seen(update)

    def _calling(self, clock: IdleClock) -> contextlib.AbstractContextManager[str | None]:
        """Around one call: its id for the SDK client's hooks (`_timeouts.Clocks`), None without them."""
        clocks = self.endpoint.clocks
        return clocks.calling(clock) if clocks is not None else contextlib.nullcontext(None)

    def _tagged(self, request: dict[str, Any], call: str | None) -> dict[str, Any]:
        """`request` naming call `call` to the SDK client's hooks, where its wire can (`tagged`)."""
        tagged = getattr(self.wire, "tagged", None)
        return request if call is None or tagged is None else dict(tagged(request, call))

    async def _read(
        self, stream: Any, reader: StreamState, guard: StreamGuard, clock: IdleClock
    ) -> AsyncGenerator[ChatResponseUpdate, None]:
        """The opened stream's events as updates; a whole JSON body instead, read at once."""
        if (body := await clock.wait(whole_body(stream, guard), opening=True)) is not None:
            for update in whole_updates(reader, body, guard):
                yield update
            return
        iterator, events = stream.__aiter__(), 0
        while True:
            try:
                event = await clock.wait(iterator.__anext__(), opening=events == 0)
            except StopAsyncIteration:
                if events == 0:  # headers, then nothing: the server refused to stream this
                    raise guard.error(
                        "the server answered with an empty stream (no events)",
                        kind="streaming_rejected",
                        interrupted=False,
                    ) from None
                return
            except ChainformError:
                raise
            except Exception as exc:
                raise self.wire.error(exc, guard, True) from None
            events += 1
            for update in reader.translate(event):
                yield update

    async def _complete(self, messages: list[Message], options: ChatOptions) -> ChatResponse:
        """An unstreamed call: through a provider batch (`whole_sender`), whole where the wire
        answers whole, else the join of the stream (of the same request, built once)."""
        if self.whole_sender is not None:
            return await self.batched(messages, options)
        request = self.wire.build_request(messages, options)
        if isinstance(self.wire, WholeWire):
            guard = self.endpoint.guard()
            clock = IdleClock(self.endpoint.timeout, guard)
            with self._calling(clock) as call:
                sending = self.wire.send_whole(self.sdk, self._tagged(request, call))
                if sending is not None:
                    try:
                        raw = await within(clock, sending)
                    except ChainformError:
                        raise
                    except Exception as exc:
                        raise self.wire.error(exc, guard, False) from None
                    updates = self.wire.read_answer(raw, request, guard)
                    if updates is not None:
                        return ChatResponse.from_updates(updates)
        return ChatResponse.from_updates([u async for u in self._stream_request(request)])

    def batch_body(self, request: dict[str, Any]) -> dict[str, Any]:
        """The request as the body of one batch line: unstreamed, its extra body merged in."""
        body = {k: v for k, v in request.items() if k not in ("stream", "stream_options", "extra_body")}
        return {**body, **(request.get("extra_body") or {})}

    async def batched(self, messages: list[Message], options: ChatOptions) -> ChatResponse:
        """One call answered through a batch (`whole_sender`), priced at the batch price."""
        assert self.whole_sender is not None
        request = self.wire.build_request(messages, options)
        body = await self.whole_sender(self.batch_body(request))
        guard, reader = self.endpoint.guard(), self.wire.reader(request)
        answer = ChatResponse.from_updates(whole_answer(reader, body, guard))
        answer.additional_properties["batch"] = True  # Meter prices it at the batch price
        return answer


def whole_updates(reader: StreamState, body: Any, guard: StreamGuard) -> list[ChatResponseUpdate]:
    """A whole answer read by `reader.whole`, or the typed error of a malformed answer."""
    updates = reader.whole(body)
    if updates is None:
        raise guard.error("malformed response body: not an answer of this API", interrupted=False)
    reader.finished = True
    return updates


def whole_answer(reader: StreamState, body: Any, guard: StreamGuard) -> list[ChatResponseUpdate]:
    """A whole answer's updates, with what `reader` tells at the end (`whole_updates`, then `end`)."""
    return [*whole_updates(reader, body, guard), *reader.end(guard)]


async def whole_body(stream: Any, guard: StreamGuard) -> Any:
    """The JSON body of a streamed request's answer that came whole (a gateway ignoring `stream:
    true`; by the content type of the SDK stream's `response`), else None; not JSON: malformed."""
    response = getattr(stream, "response", None)
    content_type = str(getattr(response, "headers", {}).get("content-type", ""))
    if response is None or not content_type.startswith("application/json"):
        return None
    try:
        return from_json(await response.aread())
    except ValueError as exc:
        raise guard.error(f"malformed response body: not JSON ({exc})", interrupted=False) from None
    except Exception as exc:  # the connection broke while the body was read
        raise guard.error(
            f"reading the body failed: {type(exc).__name__}: {exc}", interrupted=False
        ) from None
