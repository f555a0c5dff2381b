"""Anthropic Messages API adapter (official `anthropic` SDK, imported only when a client is made).

Every call streams (`messages.create(stream=True)`): the SDK refuses long non-streamed requests,
and a non-streamed response is the join of the stream anyway. Retries (429 with Retry-After, 5xx,
dropped connections before the body) are the SDK's own, tuned with `max_retries`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from chainform import types
from chainform.clients import _wire
from chainform.clients._adapter import Endpoint, ProviderClient, sdk_error
from chainform.clients._errors import StreamGuard, retry_after
from chainform.clients._hooks import SdkHooks, attach
from chainform.clients._timeouts import with_call_header
from chainform.clients._wire import CLAUDE_FINISH, StreamState, anthropic_breakpoints
from chainform.clients.profiles.anthropic import KNOWN_MODELS, PROVIDER, SAMPLING, UNKNOWN
from chainform.clients.registry import PROVIDERS
from chainform.errors import ChainformError, UnsupportedOptionError

__all__ = ["KNOWN_MODELS", "AnthropicClient", "create_client"]

DEFAULT_MAX_TOKENS = 8192
_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})

_FINISH = {**CLAUDE_FINISH, "refusal": types.FinishReason.CONTENT_FILTER}


def _sdk(
    anthropic: Any,
    key: str | None,
    base_url: str | None,
    max_retries: int,
    timeout: types.Timeout,
    **kwargs: Any,
) -> Any:
    """`anthropic.AsyncAnthropic`; extra keyword arguments are its own. Its HTTP client (unless the
    caller gave one) tells each attempt and chunk to the call's idle clock (`_timeouts.Clocks`)."""
    kwargs["timeout"] = anthropic.Timeout(timeout.read, connect=timeout.connect)
    spliced = "http_client" not in kwargs  # a client of the caller's is left as it is
    hooks = SdkHooks()
    if spliced:
        hook = hooks.splicer.httpx_hook(_wire.import_sdk("httpx2", "anthropic"))
        kwargs["http_client"] = anthropic.DefaultAsyncHttpxClient(
            event_hooks=hooks.clocks.http_hooks(request=(hook,))
        )
    sdk = anthropic.AsyncAnthropic(api_key=key, base_url=base_url, max_retries=max_retries, **kwargs)
    return attach(sdk, hooks) if spliced else sdk


class AnthropicClient(ProviderClient):
    """A ChatClient for the Messages API: the skeleton (`_adapter.py`) composed with
    `AnthropicWire`. `kwargs`: profile, middleware, secret, provider, base_url, timeout."""

    def __init__(self, model: str, sdk: Any, *, default_max_tokens: int | None = None, **kwargs: Any) -> None:
        middleware = kwargs.pop("middleware", ())
        endpoint = Endpoint.for_model(
            model, kwargs.pop("provider", None) or PROVIDER, KNOWN_MODELS, UNKNOWN, **kwargs
        )
        super().__init__(endpoint, AnthropicWire(endpoint, default_max_tokens), sdk, middleware=middleware)

    def batch_api(self) -> Any:
        """Anthropic's Message Batches through this client's SDK (`map(..., batch=True)`)."""
        from chainform.clients._anthropic_batch import AnthropicBatches

        return AnthropicBatches(self)


class AnthropicWire:
    """Chainform messages and options as Messages API requests, and its stream events back."""

    def __init__(self, endpoint: Endpoint, default_max_tokens: int | None = None) -> None:
        self.endpoint = endpoint
        cap = endpoint.profile.max_output_tokens or DEFAULT_MAX_TOKENS
        self.default_max_tokens = default_max_tokens or min(DEFAULT_MAX_TOKENS, cap)

    def build_request(self, messages: Sequence[types.Message], options: types.ChatOptions) -> dict[str, Any]:
        """The keyword arguments of `messages.create` (public so tests and logs can inspect it)."""
        self.endpoint.check_options(options)
        system, rest = _wire.split_system(messages)
        request: dict[str, Any] = {
            "model": options.model_id or self.endpoint.model,
            "max_tokens": options.max_output_tokens or self.default_max_tokens,
            "messages": _wire.merge_turns(
                rest, lambda message, role: _blocks(message, role, self.media_block)
            ),
        }
        if system:
            request["system"] = system
        if options.stop_sequences:
            request["stop_sequences"] = list(options.stop_sequences)
        # SDK 1.x dropped the sampling keywords; the API still takes them on models that sample.
        extra = {k: getattr(options, k) for k in SAMPLING if getattr(options, k) is not None}
        request.update(self._tools(options))
        output_format = self._output_format(options)
        if output_format is not None:
            request["output_config"] = {"format": output_format}
        provider_extra = options.additional_properties.get(PROVIDER)
        if isinstance(provider_extra, dict):
            extra.update(provider_extra)
        if extra:
            request["extra_body"] = extra
        anthropic_breakpoints(request, options)
        return request

    def _tools(self, options: types.ChatOptions) -> dict[str, Any]:
        hosted = [_hosted(t) for t in options.hosted_tools or ()]
        betas = sorted({b for t in options.hosted_tools or () if (b := _BETAS.get(t.kind))})
        extra: dict[str, Any] = {"extra_headers": {"anthropic-beta": ",".join(betas)}} if betas else {}
        mode = _wire.tool_mode(options)
        if mode is None or not options.tools:
            return {"tools": hosted, **extra} if hosted else {}
        tools = [
            {
                "name": t.name,
                "description": t.description,
                "input_schema": self.endpoint.dialect_schema(t.parameters),
            }
            for t in options.tools
        ]
        choice: dict[str, Any]
        if mode.mode == "none":
            choice = {"type": "none"}
        elif mode.mode == "required":
            choice = {"type": "tool", "name": mode.function_name} if mode.function_name else {"type": "any"}
        else:
            choice = {"type": "auto"}
        if options.allow_multiple_tool_calls is False and mode.mode != "none":
            choice["disable_parallel_tool_use"] = True
        return {"tools": [*tools, *hosted], "tool_choice": choice, **extra}

    def _output_format(self, options: types.ChatOptions) -> dict[str, Any] | None:
        fmt = options.response_format
        if fmt is None or fmt.kind == "text":
            return None
        if fmt.kind != "json_schema" or fmt.schema is None:
            raise UnsupportedOptionError(
                "Anthropic has no JSON mode without a schema; give response_format a JSON schema",
                provider=PROVIDER,
            )
        if not self.endpoint.profile.supports_json_schema:
            raise UnsupportedOptionError(
                f"{self.endpoint.profile.name!r} has no native structured output; use the tool or prompted strategy",
                provider=PROVIDER,
            )
        return {"type": "json_schema", "schema": self.endpoint.dialect_schema(fmt.schema)}

    def media_block(self, content: types.DataContent | types.UriContent) -> dict[str, Any]:
        """An image or document block: base64 (spliced as sent) or URL source; plain text as a
        document with a text source. Documents carry the file name as their title."""
        media = content.media_type or ""
        if isinstance(content, types.UriContent):
            source: dict[str, Any] = {"type": "url", "url": content.uri}
        elif media == "text/plain":
            source = {"type": "text", "media_type": media, "data": content.data.decode("utf-8", "replace")}
        else:
            source = {"type": "base64", "media_type": media, "data": self.endpoint.inline_base64(content)}
        if media in _IMAGE_TYPES or (isinstance(content, types.UriContent) and not media):
            return {"type": "image", "source": source}
        if media in ("application/pdf", "text/plain"):
            block = {"type": "document", "source": source}
            if content.name:
                block["title"] = content.name
            return block
        raise UnsupportedOptionError(f"Anthropic cannot take {media!r} content", provider=PROVIDER)

    def reader(self, request: dict[str, Any]) -> StreamState:
        return _StreamState()

    def open_stream(self, sdk: Any, request: dict[str, Any], reader: StreamState, guard: StreamGuard) -> Any:
        return sdk.messages.create(**request, stream=True)  # the one SDK call

    def tagged(self, request: dict[str, Any], call: str) -> dict[str, Any]:
        """`request` naming call `call` to the SDK client's hooks (`_timeouts.Clocks`)."""
        return with_call_header(request, call)

    def error(self, exc: Exception, guard: StreamGuard, opened: bool) -> ChainformError:
        import anthropic

        if isinstance(exc, anthropic.APIStatusError):
            status = exc.status_code if exc.status_code != 200 else None
            message = getattr(exc, "api_message", None) or exc.message
            headers = exc.response.headers
            return guard.error(
                message, status=status, request_id=exc.request_id, retry_after=retry_after(headers)
            )
        if isinstance(exc, anthropic.APITimeoutError):
            return guard.error("request timed out", kind="timeout")
        if isinstance(exc, anthropic.APIConnectionError):
            return guard.error(f"connection failed: {exc.message}")
        if isinstance(exc, anthropic.AnthropicError | OSError | ValueError):
            return guard.error(f"stream failed: {exc}")
        return sdk_error(exc, guard, opened)  # the HTTP library's own errors for a body cut short


class _StreamState(StreamState):
    """Turns raw Messages stream events into updates; usage is sent once, when the message ends."""

    closing_event = "message_stop"

    def __init__(self) -> None:
        super().__init__()
        self.start_usage: Any = None
        self.server_uses: dict[int, tuple[dict[str, Any], list[str]]] = {}
        """Server-side tool use blocks (by index) and their input's JSON pieces, until they stop."""

    def translate_one(self, event: Any) -> types.ChatResponseUpdate | None:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            message = event.message
            self.response_id = self.message_id = message.id
            self.model_id = message.model
            self.start_usage = message.usage
            return None
        if kind == "content_block_start":
            return self._block_start(event.index, event.content_block)
        if kind == "content_block_delta":
            return self._block_delta(event.index, event.delta)
        if kind == "content_block_stop":
            return self._block_stop(event.index)
        if kind == "message_delta":
            usage = _usage(self.start_usage, event.usage)
            finish = _wire.finish_reason(event.delta.stop_reason, _FINISH)
            return self.update([types.UsageContent(usage)], finish_reason=finish, raw_representation=event)
        if kind == "message_stop":
            self.finished = True
        return None

    def whole(self, body: Any) -> list[types.ChatResponseUpdate] | None:
        """A whole Message (a gateway that ignored `stream: true`): its blocks as the events of a
        stream would give them, then its usage and stop reason."""
        if not isinstance(body, dict) or body.get("type") != "message":
            return None
        from anthropic.types import Message as Reply

        message = Reply.construct(**body)  # the SDK's lenient build, as for stream events
        self.response_id = self.message_id = message.id
        self.model_id = message.model
        updates: list[types.ChatResponseUpdate] = []
        for index, block in enumerate(message.content or ()):
            started = self._block_start(index, block)
            stopped = self._block_stop(index)
            updates.extend(u for u in (started, stopped) if u is not None)
        finish = _wire.finish_reason(message.stop_reason, _FINISH)
        updates.append(self.update([types.UsageContent(_usage(None, message.usage))], finish_reason=finish))
        return updates

    def _block_stop(self, index: int) -> types.ChatResponseUpdate | None:
        """A server-side tool use block is told once whole, its input joined."""
        if index not in self.server_uses:
            return None
        block, parts = self.server_uses.pop(index)
        if parts:
            raw = "".join(parts)
            parsed = types.parse_arguments(raw)
            block["input"] = raw if parsed is None else parsed
        return self.update([types.ServerToolContent(block["type"], block)])

    def _block_start(self, index: int, block: Any) -> types.ChatResponseUpdate | None:
        kind = block.type
        if kind == "text" and block.text:
            return self.update([types.TextContent(block.text)])
        if kind == "tool_use":
            arguments = dict(block.input) if block.input else None
            return self.update([types.FunctionCallContent(block.id, block.name, arguments, index=index)])
        if kind == "thinking":
            return self.update([types.TextReasoningContent(block.thinking, block.signature or None)])
        if kind == "redacted_thinking":
            return self.update([types.TextReasoningContent("", block.data)])
        if kind in _SERVER_TOOL_USES:
            self.server_uses[index] = (_block_json(block), [])
        elif kind.endswith("_tool_result"):  # web_search_tool_result, mcp_tool_result, ...
            return self.update([types.ServerToolContent(kind, _block_json(block))])
        return None

    def _block_delta(self, index: int, delta: Any) -> types.ChatResponseUpdate | None:
        kind = delta.type
        if kind == "text_delta":
            return self.update([types.TextContent(delta.text)])
        if kind == "input_json_delta" and index in self.server_uses:
            self.server_uses[index][1].append(delta.partial_json)
        elif kind == "input_json_delta" and delta.partial_json:
            return self.update(
                [types.FunctionCallContent("", "", raw_arguments=delta.partial_json, index=index)]
            )
        if kind == "thinking_delta":
            return self.update([types.TextReasoningContent(delta.thinking)])
        if kind == "signature_delta":
            return self.update([types.TextReasoningContent("", delta.signature)])
        return None


_SERVER_TOOL_USES = frozenset({"server_tool_use", "mcp_tool_use"})
"""Tool use the provider runs itself: kept as ServerToolContent, never a call for chainform."""


def _block_json(block: Any) -> dict[str, Any]:
    dump = getattr(block, "model_dump", None)
    data = dump(mode="json", exclude_none=True) if dump else block
    return dict(data) if isinstance(data, dict) else {"type": str(getattr(block, "type", ""))}


def _usage(start: Any, final: Any) -> types.UsageDetails:
    """Totals of one message: input as billed (fresh + cache reads + cache writes), cache counts apart."""

    def pick(name: str) -> int:
        for source in (final, start):
            value = getattr(source, name, None) if source is not None else None
            if value is not None:
                return int(value)
        return 0

    read, written = pick("cache_read_input_tokens"), pick("cache_creation_input_tokens")
    billed = pick("input_tokens") + read + written
    return _wire.usage_details(billed, pick("output_tokens"), cache_read=read, cache_written=written)


MediaBlock = Callable[[types.DataContent | types.UriContent], dict[str, Any]]


def _blocks(message: types.Message, role: str, media: MediaBlock) -> list[dict[str, Any]]:
    """One turn's content blocks (tool results ride in user turns)."""
    return [b for c in message.contents if (b := _block(c, role, media)) is not None]


def _block(content: types.Content, role: str, media: MediaBlock) -> dict[str, Any] | None:
    if isinstance(content, types.TextContent):
        return {"type": "text", "text": content.text} if content.text else None
    if isinstance(content, types.FunctionCallContent):
        return {
            "type": "tool_use",
            "id": content.call_id,
            "name": content.name,
            "input": content.arguments or {},
        }
    if isinstance(content, types.FunctionResultContent):
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": content.call_id,
            "content": content.result_text(),
        }
        if content.error is not None:
            block["is_error"] = True
        return block
    if isinstance(content, types.TextReasoningContent):
        return _wire.replay_reasoning(
            content,
            role,
            signed=lambda text, signature: {"type": "thinking", "thinking": text, "signature": signature},
            redacted=lambda data: {"type": "redacted_thinking", "data": data},
        )
    if isinstance(content, types.DataContent | types.UriContent):
        return media(content)
    if isinstance(content, types.ServerToolContent):
        return dict(content.block)  # the provider's own block goes back as it came
    return None  # usage and error parts are bookkeeping, not conversation


def create_client(model: str, **kwargs: Any) -> AnthropicClient:
    """An adapter for `model` (key, base_url, max_retries, timeout, default_max_tokens, profile,
    middleware); other keyword arguments go to `anthropic.AsyncAnthropic`."""
    return PROVIDERS[PROVIDER].connect(
        AnthropicClient, _sdk, model, adapter_options=("default_max_tokens",), **kwargs
    )


_BETAS = {"code_execution": "code-execution-2025-08-25", "url_context": "web-fetch-2025-09-10"}
"""The beta header each hosted tool needs (web search needs none)."""


def _hosted(tool: types.HostedTool) -> dict[str, Any]:
    """A hosted tool as a Messages API server tool: web_search, code_execution, web_fetch."""
    spec: dict[str, Any]
    if isinstance(tool, types.WebSearch):
        spec = {"type": "web_search_20250305", "name": "web_search"}
        if tool.allowed_domains:
            spec["allowed_domains"] = list(tool.allowed_domains)
    elif isinstance(tool, types.CodeExecution):
        return {"type": "code_execution_20250825", "name": "code_execution"}
    elif isinstance(tool, types.URLContext):
        spec = {"type": "web_fetch_20250910", "name": "web_fetch"}
    else:
        raise UnsupportedOptionError(f"Anthropic has no {tool.kind} tool", provider=PROVIDER)
    max_uses = getattr(tool, "max_uses", None)
    if max_uses is not None:
        spec["max_uses"] = max_uses
    return spec
