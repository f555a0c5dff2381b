"""OpenAI Chat Completions adapter (OpenAI, Azure OpenAI and OpenAI-compatible servers).

A streamed call asks for usage in the stream (`stream_options.include_usage`); a call nobody
streams is sent whole and its completion read as one chunk, so both give the same response.
Both are read as the JSON's own dicts, never as the SDK's pydantic models (building those costs
more than the rest of reading an answer; docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any, cast

from chainform import types
from chainform.clients import _openai
from chainform.clients._adapter import Endpoint, ProviderClient, whole_answer
from chainform.clients._errors import StreamGuard
from chainform.clients._openai import ClientSettings, make_settings, reject_unsupported_content
from chainform.clients._openai_chat_read import read_whole, translate_chunk
from chainform.clients._timeouts import with_call_header
from chainform.clients._wire import StreamState, import_sdk, openai_key
from chainform.clients.base import Middleware
from chainform.clients.profiles.openai import COMPAT_SERVERS
from chainform.errors import ChainformError


class OpenAIChatClient(ProviderClient):
    """A ChatClient speaking `/chat/completions` through the official `openai` SDK: the skeleton
    (`_adapter.py`) composed with the Chat Completions wire (`ChatWire`).

    `max_tokens_param` names the length limit field: OpenAI wants `max_completion_tokens`, most
    compatible servers `max_tokens`.
    """

    def __init__(
        self,
        model: str,
        *,
        settings: ClientSettings | None = None,
        profile: types.ModelProfile | str | None = None,
        max_tokens_param: str = "max_completion_tokens",
        sdk_client: Any = None,
        middleware: Sequence[Middleware] = (),
    ) -> None:
        self.settings = settings = settings or ClientSettings(provider="openai")
        endpoint = _openai.endpoint(model, settings, profile)
        wire = ChatWire(endpoint, max_tokens_param)
        super().__init__(
            endpoint,
            wire,
            sdk_client,
            build_sdk=lambda hooks: _openai.build_sdk(settings, hooks),
            middleware=middleware,
        )

    def batch_api(self) -> Any:
        """OpenAI's Batch API for this client (`map(..., batch=True)`)."""
        return _openai.batch_api(self, "/v1/chat/completions")


class ChatWire:
    """The Chat Completions wire mapping: requests built, the SDK called, chunks read.

    A streamed call asks for usage in the stream (`stream_options.include_usage`); a call nobody
    streams is sent whole (`send_whole`) and its completion read as one chunk (`read_answer`).
    """

    streams_anyway = False
    """Set once the server answered a whole request with a stream: its calls stream from then on."""

    def __init__(self, endpoint: Endpoint, max_tokens_param: str = "max_completion_tokens") -> None:
        self.endpoint = endpoint
        self.max_tokens_param = max_tokens_param
        self._tool_turn_text = "" if endpoint.profile.empty_tool_turn_content else None

    def build_request(self, messages: Sequence[types.Message], options: types.ChatOptions) -> dict[str, Any]:
        """The keyword arguments of `chat.completions.create` (public for tests and debugging)."""
        turns = [m for message in messages for m in self._message(message)]
        e = self.endpoint
        body = _openai.request_body(e, options, "messages", turns, stream_options={"include_usage": True})
        extra: dict[str, Any] = {}
        if options.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": schema,
                        **({"strict": True} if strict else {}),
                    },
                }
                for tool, schema, strict in _openai.tool_definitions(e, options.tools)
            ]
            if options.allow_multiple_tool_calls is not None and e.profile.supports_parallel_tool_calls:
                body["parallel_tool_calls"] = options.allow_multiple_tool_calls
        if options.tool_mode is not None and (options.tools or options.tool_mode.mode == "none"):
            mode = options.tool_mode
            body["tool_choice"] = (
                {"type": "function", "function": {"name": mode.function_name}}
                if mode.function_name
                else mode.mode
            )
        elif options.tools:  # explicit: some compatible servers (llama-cpp-python) ignore tools otherwise
            body["tool_choice"] = "auto"
        fmt = options.response_format
        if fmt is not None and fmt.kind == "json_schema":
            schema, strict = _openai.response_schema(e, fmt)
            spec: dict[str, Any] = {"name": fmt.name, "schema": schema, "strict": strict}
            if fmt.description:
                spec["description"] = fmt.description
            body["response_format"] = {"type": "json_schema", "json_schema": spec}
        elif fmt is not None and fmt.kind == "json_object":  # with a schema: llama-cpp-python's form
            body["response_format"] = {"type": "json_object"}
            if fmt.schema is not None:
                body["response_format"]["schema"] = _openai.response_schema(e, fmt)[0]
        for name, value in (
            ("seed", options.seed),
            ("stop", options.stop_sequences),
            ("temperature", options.temperature),
            ("top_p", options.top_p),
            ("frequency_penalty", options.frequency_penalty),
            ("presence_penalty", options.presence_penalty),
        ):
            if value is not None:
                body[name] = value
        if options.max_output_tokens is not None:
            extra[self.max_tokens_param] = options.max_output_tokens
        if options.top_k is not None:  # only reached when the profile allows it (vLLM, llama.cpp)
            extra["top_k"] = options.top_k
        extra.update(options.additional_properties)
        if extra:
            body["extra_body"] = extra
        body.update(openai_key(options, e.profile))
        return body

    def _message(self, message: types.Message) -> list[dict[str, Any]]:
        """One chainform message as Chat Completions messages (tool results become `tool` messages)."""
        out: list[dict[str, Any]] = [
            {"role": "tool", "tool_call_id": r.call_id, "content": r.result_text()}
            for r in message.function_results
        ]
        rest = [c for c in message.contents if not isinstance(c, types.FunctionResultContent)]
        role = str(message.role)
        if role == types.Role.ASSISTANT:
            calls = [c for c in rest if isinstance(c, types.FunctionCallContent)]
            text = "".join(c.text for c in rest if isinstance(c, types.TextContent))
            if not calls and not text:
                return out
            entry: dict[str, Any] = {"role": "assistant", "content": text or self._tool_turn_text}
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": c.call_id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments_json()},
                    }
                    for c in calls
                ]
            return [*out, entry]
        parts = [p for c in rest if (p := self._part(c, role)) is not None]
        if not parts:
            return out
        if role == types.Role.TOOL:  # plain text addressed to no call: send it as user text
            role = "user"
        if all(p["type"] == "text" for p in parts) or role != "user":
            content: Any = "".join(p.get("text", "") for p in parts)
        else:
            content = parts
        entry = {"role": role, "content": content}
        if message.author_name:
            entry["name"] = message.author_name
        return [*out, entry]

    def _part(self, content: types.Content, role: str) -> dict[str, Any] | None:
        provider = self.endpoint.provider
        if isinstance(content, types.TextContent):
            return {"type": "text", "text": content.text}
        if isinstance(
            content,
            types.TextReasoningContent | types.ErrorContent | types.UsageContent | types.ServerToolContent,
        ):
            return None  # not sent back to Chat Completions
        if role != "user":
            raise reject_unsupported_content(type(content).__name__, provider)
        if isinstance(content, types.DataContent):
            if content.media_type.startswith("image/"):
                return {"type": "image_url", "image_url": {"url": self.endpoint.inline_uri(content)}}
            if content.media_type == "application/pdf":
                name = content.name or "document.pdf"
                return {
                    "type": "file",
                    "file": {"filename": name, "file_data": self.endpoint.inline_uri(content)},
                }
            raise reject_unsupported_content(content.media_type, provider)
        if isinstance(
            content, types.UriContent
        ):  # the profile fetches only images by URL (clients/_media.py)
            if content.media_type is None or content.media_type.startswith("image/"):
                return {"type": "image_url", "image_url": {"url": content.uri}}
            raise reject_unsupported_content(content.media_type, provider)
        raise reject_unsupported_content(type(content).__name__, provider)

    def reader(self, request: dict[str, Any]) -> StreamState:
        return _StreamState()

    def open_stream(self, sdk: Any, request: dict[str, Any], reader: StreamState, guard: StreamGuard) -> Any:
        return self.send(sdk, request)

    def tagged(self, request: dict[str, Any], call: str) -> dict[str, Any]:
        """`request` naming call `call` to the SDK client's hooks (`_timeouts.Clocks`)."""
        return with_call_header(request, call)

    def send(self, sdk: Any, request: dict[str, Any]) -> Awaitable[Any]:
        """The one SDK call: `chat.completions.create(**request)` through the SDK's documented
        `post`, without its parameter transform: that walks the whole request (history, tool
        schemas) against the params' TypedDicts and changes nothing in a request of plain JSON
        (Chat Completions params have no aliases or formats). Same route, auth, retries, Azure
        deployment URLs and status errors. What comes back is plain: a whole call's raw HTTP
        response (`cast_to=httpx2.Response`, the SDK's documented raw route; `read_answer` parses
        it), a stream's events as the dicts the SDK decoded (`AsyncStream[object]`: no
        `ChatCompletionChunk` per event, and its error events still raise)."""
        openai = import_sdk("openai", "openai")
        body = dict(request)
        options: dict[str, Any] = {"security": {"bearer_auth": True}}
        extra = body.pop("extra_body", None)
        if extra:
            options["extra_json"] = extra
        headers = body.pop("extra_headers", None)
        if headers:
            options["headers"] = headers
        stream = bool(body.get("stream"))
        return cast(
            Awaitable[Any],
            sdk.post(
                "/chat/completions",
                body=body,
                options=options,
                cast_to=object if stream else import_sdk("httpx2", "openai").Response,
                stream=stream,
                stream_cls=openai.AsyncStream[object],
            ),
        )

    def send_whole(self, sdk: Any, request: dict[str, Any]) -> Awaitable[Any] | None:
        """Unstreamed, a request is sent whole: when nobody reads the stream (cheaper for the SDK
        and the loop than SSE), or when a server cannot stream tool calls (llama-cpp-python under
        "auto"); streamed after all at a server that streamed a whole request before."""
        if self.streams_anyway:
            return None
        whole = {k: v for k, v in request.items() if k != "stream_options"}
        return self.send(sdk, {**whole, "stream": False})

    def read_answer(
        self, raw: Any, request: dict[str, Any], guard: StreamGuard
    ) -> list[types.ChatResponseUpdate] | None:
        """The completion's body as plain dicts, read as one chunk of a stream (one translation);
        None when the server streamed anyway (some proxies and mock servers ignore "stream":
        false): it is asked the way it answers, now and from now on."""
        completion = read_whole(raw, guard)
        if completion is None:
            self.streams_anyway = True
            return None
        return whole_answer(self.reader(request), completion, guard)

    def error(self, exc: Exception, guard: StreamGuard, opened: bool) -> ChainformError:
        return _openai.sdk_error(exc, guard, opened)


class _StreamState(StreamState):
    """Chat Completions chunks carry their own ids; a refusal is gathered and told at the end.
    A stream is complete once a finish reason came: one that stops before is interrupted. A
    whole completion reads as one chunk and is the whole answer, finish reason or not."""

    closing_event = "a finish reason"

    def translate(self, event: Any) -> list[types.ChatResponseUpdate]:
        updates = translate_chunk(event, self.refusal)
        if any(u.finish_reason is not None for u in updates):
            self.finished = True
        return updates

    def whole(self, body: Any) -> list[types.ChatResponseUpdate] | None:
        if not isinstance(body, dict) or not isinstance(body.get("choices"), list):
            return None
        return translate_chunk(body, self.refusal)


def create_client(
    model: str,
    *,
    key: str | None = None,
    base_url: str | None = None,
    provider: str = "openai",
    profile: types.ModelProfile | str | None = None,
    middleware: Sequence[Middleware] = (),
    **settings: Any,
) -> OpenAIChatClient:
    """The registry's entry point for "openai/…", "azure/<deployment>", "azure-ai/<deployment>"
    and compatible servers.

    `profile`: a ModelProfile, or a name: "openai" (OpenAI's own profile, e.g. for a proxy in front
    of OpenAI) or a compatible server's ("vllm", "llamacpp"...); by default OpenAI's at OpenAI and
    a compatible server's elsewhere (`profiles.openai.compatible_profile`).
    `settings`: max_retries, timeout, default_headers, and for Azure api_version and
    azure_ad_token_provider (an Entra ID token callable, used instead of a key; "azure-ai" too).
    """
    resolved = make_settings(provider, key=key, base_url=base_url, **settings)
    server = COMPAT_SERVERS.get(provider)
    if profile is None and provider == "azure-ai":
        from chainform.clients.profiles.azure_ai import azure_ai_profile

        profile = azure_ai_profile(model)
    elif profile is None and server is not None:
        profile = server.profile_for(model)
    return OpenAIChatClient(
        model,
        settings=resolved,
        profile=profile,
        max_tokens_param="max_tokens" if server or provider == "azure-ai" else "max_completion_tokens",
        middleware=middleware,
    )
