"""The adapter skeleton: what every provider adapter shares, so an adapter module holds only its wire mapping.

An adapter subclasses `AdapterClient`, names its provider and profile table, and writes its wire
mapping only:

- `build_request(messages, options)`: chainform messages and options as its SDK call's arguments
  (`check_options`, `split_system`, `merge_turns`, `replay_reasoning`, `dialect_schema` help);
- `open_stream(request, state, guard)`: the SDK call that starts the stream;
- a `StreamState` subclass: `translate(event)` into updates (`usage_details`, `finish_reason`),
  and `end(guard)`: the last updates, or the error for a stream that stopped short;
- `error(exc, guard, opened)`: its SDK's exceptions as a `ProviderError` through the guard, which
  applies the one retry/status policy and classifies `ProviderError.kind` (`_errors.py`).

`AdapterClient._stream` runs them in that order; `pump` keeps translation bugs apart from SDK
failures, bounds each wait on the SDK by `self.timeout` (`_timeouts.py`) and closes the stream. Option
checks, SDK import, key lookup, the lazy SDK client, profile lookup and a broken stream's partial response live here.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar

from pydantic_core import from_json

from chainform.clients._errors import StreamGuard
from chainform.clients._media import MediaAdapter
from chainform.clients._reading import CLAUDE_FINISH as CLAUDE_FINISH  # the adapters' shared reading helpers
from chainform.clients._reading import finish_reason as finish_reason
from chainform.clients._reading import usage_details as usage_details
from chainform.clients._timeouts import IdleClock
from chainform.clients.base import BaseChatClient, Middleware
from chainform.errors import ChainformError, UnsupportedOptionError
from chainform.keys import require_key
from chainform.types import (
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    ErrorContent,
    FunctionCallContent,
    Message,
    ModelProfile,
    Role,
    TextReasoningContent,
    Timeout,
    TimeoutLike,
    ToolMode,
)


def import_sdk(module: str, extra: str) -> Any:
    """Import a provider SDK on first use (then from sys.modules), naming the extra when it is missing."""
    try:
        return sys.modules.get(module) or importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"this adapter needs {module}: pip install 'chainform[{extra}]'") from exc


def resolve_key(provider: str, key: str | None, env_var: str) -> str:
    """An explicit key wins, then the environment, then the user's keys file."""
    return require_key(provider, explicit=key, env_var=env_var)


class AdapterClient(MediaAdapter, BaseChatClient):
    """Base of every provider adapter: model, SDK client (given, or built on first use), key hygiene,
    the profile (given, or looked up in the family's table), option checks, the guarded stream loop
    (`timeout`: the connect and idle-read timeouts of every call, `Timeout.of`; 10 s / 120 s).

    A subclass names its provider and its profile table (`clients/profiles/<family>.py`)."""

    provider: str = "unknown"
    known_models: ClassVar[Mapping[str, ModelProfile]] = {}
    unknown_profile: ClassVar[ModelProfile] = ModelProfile()

    def __init__(
        self,
        model: str,
        sdk: Any = None,
        *,
        profile: ModelProfile | str | None = None,
        middleware: Sequence[Middleware] = (),
        secret: str | None = None,
        provider: str | None = None,
        base_url: str | None = None,
        timeout: TimeoutLike = None,
    ) -> None:
        self.provider = provider or self.provider
        self.timeout = Timeout.of(timeout)
        if isinstance(profile, str):  # a name is resolved by the OpenAI-compatible adapters only
            raise ValueError(f"profile={profile!r}: {self.provider} models take a ModelProfile, not a name")
        super().__init__(profile=profile or self.default_profile(model), middleware=middleware)
        self.model = model
        self.base_url = base_url
        self._sdk = sdk
        self._owns_sdk = sdk is None  # a client the caller gave is the caller's to close
        self._secret = secret  # only to scrub it from error messages

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"{type(self).__name__}(model={self.model!r}, provider={self.provider!r}{where})"

    def default_profile(self, model: str) -> ModelProfile:
        """The profile of `model` when none is given: its family's entry in `known_models`."""
        from chainform.clients.profiles import profile_for

        return profile_for(model, self.known_models, self.unknown_profile)

    @property
    def sdk(self) -> Any:
        """The provider SDK's client, built on first use."""
        if self._sdk is None:
            self._sdk = self._build_sdk()
        return self._sdk

    def _build_sdk(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} needs an SDK client")

    async def aclose(self) -> None:
        """Close the connections of the SDK client this adapter built; the next call builds a new
        one. A dropped SDK client otherwise closes its connections whenever it is collected, which
        can stall the loop of whatever runs then."""
        sdk, owned = self._sdk, self._owns_sdk
        if sdk is None or not owned:
            return
        self._sdk = None
        await self._close_sdk(sdk)

    async def _close_sdk(self, sdk: Any) -> None:
        """`sdk.close()`, awaited when the SDK's is a coroutine (openai, anthropic; boto3's is not)."""
        close = getattr(sdk, "close", None)
        if close is not None:
            result = close()
            if inspect.isawaitable(result):
                await result

    def in_dialect(self, schema: Mapping[str, Any]) -> dict[str, Any] | bool:
        """`schema` in this model's dialect (the engine restores outputs against the original);
        raises `SchemaError` when the dialect cannot express it."""
        return self.profile.dialect.convert(schema if isinstance(schema, dict) else dict(schema)).schema

    def dialect_schema(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        """`schema` in this model's dialect, as an object schema (`true` accepts anything: `{}`)."""
        converted = self.in_dialect(schema)
        return dict(converted) if isinstance(converted, dict) else {}

    def guard(self) -> StreamGuard:
        """A fresh failure reporter for one call."""
        return StreamGuard(self.provider, self._secret)

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

    def error(self, exc: Exception, guard: StreamGuard, opened: bool) -> ChainformError:
        """What the SDK raised, typed (`opened`: the stream began); an early ValueError: a refused request."""
        if not opened and isinstance(exc, ValueError | TypeError):
            return guard.error(f"request refused: {type(exc).__name__}: {exc}", kind="bad_request")
        return guard.error(f"stream broke: {type(exc).__name__}: {exc}")

    def stream_state(self, request: dict[str, Any]) -> StreamState:
        """The translation state of one streamed call."""
        raise NotImplementedError

    def open_stream(self, request: dict[str, Any], state: StreamState, guard: StreamGuard) -> Awaitable[Any]:
        """The SDK call that starts the stream (awaited inside `pump`, so its failures are classified)."""
        raise NotImplementedError

    async def _stream(
        self, messages: list[Message], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate]:
        request = self.build_request(messages, options)
        guard = self.guard()
        state = self.stream_state(request)
        async for update in self.pump(guard, self.open_stream(request, state, guard), state):
            yield update
        for update in state.end(guard):
            yield guard.seen(update)

    def build_request(self, messages: Sequence[Message], options: ChatOptions) -> dict[str, Any]:
        """The keyword arguments of the SDK call (public so tests and logs can inspect them)."""
        raise NotImplementedError

    whole_sender: Callable[[dict[str, Any]], Awaitable[Any]] | None = None
    """Set on a map's copy of the client by `map(..., batch=True)`: each whole request goes into a
    provider batch (`_map/_batch.py`), whose answer's body is read as this API's whole answer."""

    def batch_body(self, request: dict[str, Any]) -> dict[str, Any]:
        """The request as the body of one batch line: unstreamed, its extra body merged in."""
        body = {k: v for k, v in request.items() if k not in ("stream", "stream_options", "extra_body")}
        return {**body, **(request.get("extra_body") or {})}

    async def batched(self, messages: list[Message], options: ChatOptions) -> ChatResponse:
        """One call answered through a batch (`whole_sender`), priced at the batch price."""
        assert self.whole_sender is not None
        request = self.build_request(messages, options)
        body = await self.whole_sender(self.batch_body(request))
        guard, state = self.guard(), self.stream_state(request)
        updates = self.whole_updates(state, body, guard)
        answer = ChatResponse.from_updates([*updates, *state.end(guard)])
        answer.additional_properties["batch"] = True  # Meter prices it at the batch price
        return answer

    async def _complete(self, messages: list[Message], options: ChatOptions) -> ChatResponse:
        if self.whole_sender is not None:
            return await self.batched(messages, options)
        return await super()._complete(messages, options)

    async def pump(
        self, guard: StreamGuard, open_stream: Awaitable[Any], state: StreamState
    ) -> AsyncIterator[ChatResponseUpdate]:
        """Open the SDK stream, translate each event (`state.translate`; a whole JSON body, from a
        gateway that ignored `stream: true`, by `state.whole`), and turn SDK failures into typed
        errors. Only SDK calls sit inside the `try`s, so a bug in translation is never disguised
        as a provider failure, and a wait on a silent server ends in a "timeout" one. The stream is
        closed however the loop ends."""
        clock = IdleClock(self.timeout, guard)
        try:
            stream = await clock.wait(open_stream, opening=True)
        except ChainformError:
            raise
        except Exception as exc:
            raise self.error(exc, guard, False) from None  # no chained SDK error: it may quote the key
        guard.request_id = guard.request_id or getattr(stream, "request_id", None)
        events = 0
        try:
            if (body := await clock.wait(whole_body(stream, guard), opening=True)) is not None:
                for update in self.whole_updates(state, body, guard):
                    yield guard.seen(update)
                return
            iterator = stream.__aiter__()
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
                    break
                except ChainformError:
                    raise
                except Exception as exc:
                    raise self.error(exc, guard, True) from None
                events += 1
                for update in state.translate(event):
                    yield guard.seen(update)
        finally:
            clock.close()
            close = getattr(stream, "aclose", None) or getattr(stream, "close", None)
            if close is not None and inspect.isawaitable(result := close()):
                await result

    def whole_updates(self, state: StreamState, body: Any, guard: StreamGuard) -> list[ChatResponseUpdate]:
        """A whole answer read by `state.whole`, or the typed error of a malformed answer."""
        updates = state.whole(body)
        if updates is None:
            raise guard.error("malformed response body: not an answer of this API", interrupted=False)
        state.finished = True
        return updates


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
        raise guard.error(f"reading the body failed: {type(exc).__name__}: {exc}", interrupted=False) from None


def tool_mode(options: ChatOptions) -> ToolMode | None:
    """The effective tool mode: None when no tools are offered (nothing to choose from)."""
    if not options.tools:
        return None
    return options.tool_mode or ToolMode.AUTO


def split_system(messages: Sequence[Message]) -> tuple[str | None, list[Message]]:
    """System messages joined into one instruction (these APIs take it apart), and the rest in order."""
    system = [m.text for m in messages if m.role == Role.SYSTEM and m.text]
    rest = [m for m in messages if m.role != Role.SYSTEM]
    return ("\n\n".join(system) or None), rest


def call_names(messages: Sequence[Message]) -> dict[str, str]:
    """call_id -> tool name, for providers whose tool results must repeat the name."""
    return {c.call_id: c.name for m in messages for c in m.contents if isinstance(c, FunctionCallContent)}


def merge_turns(
    messages: Sequence[Message],
    encode: Callable[[Message, str], list[dict[str, Any]]],
    *,
    assistant: str = "assistant",
    key: str = "content",
) -> list[dict[str, Any]]:
    """Turns for APIs with two speakers: the assistant's, and the user's (tool results included).

    `encode(message, role)` gives the message's blocks; a message without any is left out, and
    consecutive turns of one speaker are merged (these APIs require alternation).
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        role = assistant if message.role == Role.ASSISTANT else "user"
        blocks = encode(message, role)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1][key].extend(blocks)
        else:
            out.append({"role": role, key: blocks})
    return out


def replay_reasoning(
    content: TextReasoningContent,
    role: str,
    *,
    signed: Callable[[str, str], dict[str, Any]],
    redacted: Callable[[str], dict[str, Any]],
) -> dict[str, Any] | None:
    """A reasoning block sent back: only on assistant turns and with the signature that proves it
    (`signed(text, signature)`); without text it is the provider's redacted form (`redacted(data)`)."""
    if role != "assistant" or not content.protected_data:
        return None
    if not content.text:
        return redacted(content.protected_data)
    return signed(content.text, content.protected_data)


class StreamState:
    """Per-call translation state: the ids every update of one response carries, whether the
    event that closes a stream (`closing_event`, when the API has one) arrived, and the refusal
    text gathered (told at the end as one `ErrorContent`, code "refusal")."""

    closing_event: str | None = None

    def __init__(self, model_id: str | None = None) -> None:
        self.response_id: str | None = None
        self.message_id: str | None = None
        self.model_id = model_id
        self.finished = False
        self.refusal: list[str] = []

    def whole(self, body: Any) -> list[ChatResponseUpdate] | None:
        """A whole answer's JSON `body` (what a non-streamed request gets) as updates; None when the
        body is no answer of this API (the caller raises the typed error of a malformed answer)."""
        return None

    def translate(self, event: Any) -> list[ChatResponseUpdate]:
        """One SDK event as updates (often none); by default `translate_one`'s update, if any."""
        update = self.translate_one(event)
        return [update] if update is not None else []

    def translate_one(self, event: Any) -> ChatResponseUpdate | None:
        raise NotImplementedError

    def end(self, guard: StreamGuard) -> list[ChatResponseUpdate]:
        """Updates due when the stream ends, or `guard.error(...)` raised when it stopped short."""
        if self.closing_event is not None and not self.finished:
            raise guard.error(f"stream ended before {self.closing_event}")
        if not self.refusal:
            return []
        return [ChatResponseUpdate([ErrorContent("".join(self.refusal), error_code="refusal")])]

    def update(self, contents: list[Content], **extra: Any) -> ChatResponseUpdate:
        return ChatResponseUpdate(
            contents,
            role=Role.ASSISTANT,
            response_id=self.response_id,
            message_id=self.message_id,
            model_id=self.model_id,
            **extra,
        )
