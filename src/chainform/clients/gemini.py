"""Google Gemini adapter (google-genai SDK: `client.aio.models.generate_content_stream`).

Gemini sends whole function calls (no argument fragments) and, on Gemini 3, opaque thought
signatures that must come back on the same part in the next turn. A signature travels in a
`TextReasoningContent` with empty text placed just before the part it belongs to, so a
conversation replayed through chainform keeps it where Gemini expects it.
"""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from chainform import types
from chainform.clients import _wire
from chainform.clients._adapter import Endpoint, ProviderClient, sdk_error
from chainform.clients._errors import StreamGuard
from chainform.clients._hooks import SdkHooks, attach
from chainform.clients._timeouts import CALL_HEADER
from chainform.clients._wire import StreamState
from chainform.clients.profiles import family_stem
from chainform.clients.profiles.gemini import KNOWN_MODELS, LEGACY_SCHEMA_FAMILIES, PROVIDER, UNKNOWN
from chainform.clients.registry import PROVIDERS
from chainform.errors import ChainformError, UnsupportedOptionError

__all__ = ["KNOWN_MODELS", "GeminiClient", "create_client"]

_GENERATED_ID = "gcall_"  # call ids we invent (the Gemini API may send none) are not sent back

_FINISH = {
    "STOP": types.FinishReason.STOP,
    "MAX_TOKENS": types.FinishReason.LENGTH,
    "SAFETY": types.FinishReason.CONTENT_FILTER,
    "RECITATION": types.FinishReason.CONTENT_FILTER,
    "BLOCKLIST": types.FinishReason.CONTENT_FILTER,
    "PROHIBITED_CONTENT": types.FinishReason.CONTENT_FILTER,
    "SPII": types.FinishReason.CONTENT_FILTER,
    "IMAGE_SAFETY": types.FinishReason.CONTENT_FILTER,
    "BLOCKED": types.FinishReason.CONTENT_FILTER,  # the prompt was blocked (prompt_feedback)
    "MODEL_ARMOR": types.FinishReason.CONTENT_FILTER,  # a Model Armor template blocked the answer
    "IMAGE_PROHIBITED_CONTENT": types.FinishReason.CONTENT_FILTER,
    "IMAGE_RECITATION": types.FinishReason.CONTENT_FILTER,
}
_SERVER_PARTS = ("executable_code", "code_execution_result")
"""Parts of code Gemini runs itself: kept as ServerToolContent (kind: the part's field), sent back as they came."""


def _sdk(
    genai: Any,
    key: str | None,
    base_url: str | None,
    max_retries: int,
    timeout: types.Timeout,
    *,
    retry_initial_delay: float = 1.0,
    retry_jitter: float = 1.0,
    **http_options: Any,
) -> Any:
    """`google.genai.Client`; extra keyword arguments become `google.genai.types.HttpOptions` fields.

    Retries (429, 5xx, connection errors) are the SDK's: exponential from `retry_initial_delay`
    seconds plus up to `retry_jitter` seconds of jitter. google-genai does not read Retry-After.
    `timeout` is kept by the adapter skeleton: the SDK's own is a total (and a server-side
    deadline header), which would cut a long answer that is still streaming; its HTTP client
    (unless the caller gave one) tells each attempt and chunk to the call's idle clock.
    """
    genai_types = genai.types
    retry = genai_types.HttpRetryOptions(
        attempts=max_retries + 1, initial_delay=retry_initial_delay, jitter=retry_jitter
    )
    # chainform's own async httpx client, whose request hook splices inline data (clients/_splice.py);
    # a client or transport of the caller's is left as it is
    spliced = not ({"httpx_async_client", "async_client_args"} & set(http_options))
    hooks = SdkHooks()
    if spliced:
        httpx = _wire.import_sdk("httpx", "gemini")
        http_options["httpx_async_client"] = http = httpx.AsyncClient(
            event_hooks=hooks.clocks.http_hooks(request=(hooks.splicer.httpx_hook(httpx),))
        )
        hooks.closers.append(http.aclose)  # google-genai leaves a client it was handed open
    options = genai_types.HttpOptions(base_url=base_url, retry_options=retry, **http_options)
    client = genai.Client(api_key=key, http_options=options)
    return attach(client, hooks) if spliced else client


class GeminiClient(ProviderClient):
    """A ChatClient for the Gemini API: the skeleton (`_adapter.py`) composed with `GeminiWire`.
    `kwargs`: profile, middleware, secret, provider, base_url, timeout."""

    def __init__(self, model: str, sdk: Any, **kwargs: Any) -> None:
        middleware = kwargs.pop("middleware", ())
        endpoint = Endpoint.for_model(
            model, kwargs.pop("provider", None) or PROVIDER, KNOWN_MODELS, UNKNOWN, **kwargs
        )
        super().__init__(endpoint, GeminiWire(endpoint), sdk, middleware=middleware)

    def batch_api(self) -> Any:
        """Gemini's batch mode through this client's SDK (`map(..., batch=True)`)."""
        from chainform.clients._gemini_batch import GeminiBatches

        return GeminiBatches(self)


class GeminiWire:
    """Chainform messages and options as generateContent requests, and its chunks back."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint

    def build_request(self, messages: Sequence[types.Message], options: types.ChatOptions) -> dict[str, Any]:
        """The keyword arguments of `generate_content(_stream)` (public so tests can inspect them)."""
        self.endpoint.check_options(options)
        model = options.model_id or self.endpoint.model
        legacy = family_stem(model).startswith(LEGACY_SCHEMA_FAMILIES)
        system, rest = _wire.split_system(messages)
        config: dict[str, Any] = {"candidate_count": 1}
        if system:
            config["system_instruction"] = system
        for name in ("temperature", "top_p", "top_k", "seed", "presence_penalty", "frequency_penalty"):
            value = getattr(options, name)
            if value is not None:
                config[name] = value
        if options.max_output_tokens is not None:
            config["max_output_tokens"] = options.max_output_tokens
        if options.stop_sequences:
            config["stop_sequences"] = list(options.stop_sequences)
        config.update(self._tools(options, legacy))
        config.update(self._response_format(options, legacy))
        extra = options.additional_properties.get(PROVIDER)
        if isinstance(extra, dict):
            config.update(extra)
        return {"model": model, "contents": _contents(rest, self.media_part), "config": config}

    def _tools(self, options: types.ChatOptions, legacy: bool) -> dict[str, Any]:
        hosted = [_hosted(t) for t in options.hosted_tools or ()]
        mode = _wire.tool_mode(options)
        if mode is None or not options.tools:
            return {"tools": hosted} if hosted else {}
        field = "parameters" if legacy else "parameters_json_schema"
        declarations = [
            {
                "name": t.name,
                "description": t.description,
                field: self.endpoint.dialect_schema(t.parameters),
            }
            for t in options.tools
        ]
        calling: dict[str, Any] = {"mode": {"auto": "AUTO", "none": "NONE", "required": "ANY"}[mode.mode]}
        if mode.mode == "required" and mode.function_name:
            calling["allowed_function_names"] = [mode.function_name]
        return {
            "tools": [{"function_declarations": declarations}, *hosted],
            "tool_config": {"function_calling_config": calling},
        }

    def _response_format(self, options: types.ChatOptions, legacy: bool) -> dict[str, Any]:
        fmt = options.response_format
        if fmt is None or fmt.kind == "text":
            return {}
        if fmt.kind == "json_object" or fmt.schema is None:
            return {"response_mime_type": "application/json"}
        if not self.endpoint.profile.supports_json_schema:
            raise UnsupportedOptionError(
                f"{self.endpoint.profile.name!r} has no native structured output", provider=PROVIDER
            )
        schema = self.endpoint.dialect_schema(fmt.schema)
        field = "response_schema" if legacy else "response_json_schema"
        return {"response_mime_type": "application/json", field: schema}

    def media_part(self, content: types.DataContent | types.UriContent) -> dict[str, Any]:
        """`inline_data` (bytes the SDK encodes URL-safe; spliced as sent) or `file_data` by URL."""
        if isinstance(content, types.UriContent):
            return {"file_data": {"file_uri": content.uri, "mime_type": content.media_type}}
        data = self.endpoint.inline_bytes(content, urlsafe=True)
        return {"inline_data": {"data": data, "mime_type": content.media_type}}

    def reader(self, request: dict[str, Any]) -> StreamState:
        return _StreamState()

    def open_stream(self, sdk: Any, request: dict[str, Any], reader: StreamState, guard: StreamGuard) -> Any:
        return sdk.aio.models.generate_content_stream(**request)  # the one SDK call

    def tagged(self, request: dict[str, Any], call: str) -> dict[str, Any]:
        """`request` naming call `call` to the SDK client's hooks (`_timeouts.Clocks`), in its
        config's per-request HTTP options (left as it is when those are not a plain dict)."""
        config = request.get("config")
        http = config.get("http_options") or {} if isinstance(config, dict) else None
        if not isinstance(config, dict) or not isinstance(http, dict):
            return request
        headers = {**(http.get("headers") or {}), CALL_HEADER: call}
        return {**request, "config": {**config, "http_options": {**http, "headers": headers}}}

    def error(self, exc: Exception, guard: StreamGuard, opened: bool) -> ChainformError:
        from google.genai import errors

        if isinstance(exc, errors.APIError):
            message = exc.message or str(exc)
            return guard.error(message, status=exc.code or None, request_id=_request_id(exc))
        return sdk_error(exc, guard, opened)  # transport errors of the HTTP library, unparsable chunks


def _request_id(exc: Any) -> str | None:
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    for name in ("x-request-id", "x-goog-request-id"):
        value = headers.get(name)
        if value:
            return str(value)
    return None


class _StreamState(StreamState):
    """Turns generateContent chunks into updates; the last usage report wins (Gemini repeats totals)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.usage: Any = None
        self.finish: str | None = None

    def whole(self, body: Any) -> list[types.ChatResponseUpdate] | None:
        """A whole GenerateContentResponse in its REST JSON (a batch's result line) as one chunk."""
        if not isinstance(body, dict) or not ({"candidates", "promptFeedback"} & set(body)):
            return None
        from google.genai.types import GenerateContentResponse

        return self.translate(GenerateContentResponse.model_validate_json(json.dumps(body)))

    def translate(self, chunk: Any) -> list[types.ChatResponseUpdate]:
        self.response_id = chunk.response_id or self.response_id
        self.model_id = chunk.model_version or self.model_id
        if chunk.usage_metadata is not None:
            self.usage = chunk.usage_metadata
        feedback = chunk.prompt_feedback
        if feedback is not None and feedback.block_reason is not None:
            self.finish = "BLOCKED"
        contents: list[types.Content] = []
        for candidate in chunk.candidates or ():
            if candidate.finish_reason is not None:
                self.finish = _enum_name(candidate.finish_reason)
            parts = candidate.content.parts if candidate.content is not None else None
            for part in parts or ():
                contents.extend(self._part(part))
        return [self.update(contents, raw_representation=chunk)] if contents else []

    def _part(self, part: Any) -> list[types.Content]:
        out: list[types.Content] = []
        if part.thought_signature:
            out.append(
                types.TextReasoningContent("", base64.b64encode(part.thought_signature).decode("ascii"))
            )
        if part.function_call is not None:
            call = part.function_call
            call_id = call.id or f"{_GENERATED_ID}{uuid.uuid4().hex[:12]}"
            out.append(
                types.FunctionCallContent(call_id, call.name or "", dict(call.args or {}), index=self.calls)
            )
            self.calls += 1
        elif part.text:
            out.append(
                types.TextReasoningContent(part.text) if part.thought else types.TextContent(part.text)
            )
        elif server := next((k for k in _SERVER_PARTS if getattr(part, k, None) is not None), None):
            block = getattr(part, server).model_dump(mode="json", exclude_none=True)
            out.append(types.ServerToolContent(server, {server: block}))
        elif part.inline_data is not None and part.inline_data.data:
            out.append(
                types.DataContent(
                    part.inline_data.data, part.inline_data.mime_type or "application/octet-stream"
                )
            )
        return out

    def end(self, guard: StreamGuard) -> list[types.ChatResponseUpdate]:
        """The finish reason and the last usage report, once the stream is over."""
        if self.finish is None:
            raise guard.error("stream ended without a finish reason")
        reason = _wire.finish_reason(self.finish, _FINISH)
        if reason == types.FinishReason.STOP and self.calls:
            reason = types.FinishReason.TOOL_CALLS
        contents: list[types.Content] = (
            [types.UsageContent(_usage(self.usage))] if self.usage is not None else []
        )
        return [self.update(contents, finish_reason=reason)]


def _enum_name(value: Any) -> str:
    return str(getattr(value, "value", value))


def _usage(meta: Any) -> types.UsageDetails:
    """Input includes tool-use prompt tokens; output includes thinking tokens (both are billed)."""
    prompt = (meta.prompt_token_count or 0) + (meta.tool_use_prompt_token_count or 0)
    thoughts = meta.thoughts_token_count or 0
    output = (meta.candidates_token_count or 0) + thoughts
    cached = meta.cached_content_token_count
    return _wire.usage_details(prompt, output, meta.total_token_count, cache_read=cached, reasoning=thoughts)


MediaPart = Callable[[types.DataContent | types.UriContent], dict[str, Any]]


def _contents(messages: Sequence[types.Message], media: MediaPart) -> list[dict[str, Any]]:
    """Chainform turns as Gemini contents (roles user/model); same roles merge."""
    names = _wire.call_names(messages)
    return _wire.merge_turns(
        messages, lambda message, _: _parts(message.contents, names, media), assistant="model", key="parts"
    )


def _parts(
    contents: Sequence[types.Content], names: dict[str, str], media: MediaPart
) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    signature: bytes | None = None
    for content in contents:
        if isinstance(content, types.TextReasoningContent):
            # Thought text is not sent back; its signature belongs to the part that follows.
            if content.protected_data:
                signature = _signature(content.protected_data)
            continue
        part = (
            media(content)
            if isinstance(content, types.DataContent | types.UriContent)
            else _part(content, names)
        )
        if part is None:
            continue
        if signature is not None:
            part["thought_signature"] = signature
            signature = None
        parts.append(part)
    return parts


def _signature(text: str) -> bytes:
    """A thought signature's bytes from its base64 text: standard (as chainform keeps it) or
    URL-safe and unpadded (as google-genai writes it into requests, and so histories taken from one)."""
    text = text.strip().replace("-", "+").replace("_", "/")
    return base64.b64decode(text + "=" * (-len(text) % 4))


def _part(content: types.Content, names: dict[str, str]) -> dict[str, Any] | None:
    if isinstance(content, types.TextContent):
        return {"text": content.text} if content.text else None
    if isinstance(content, types.FunctionCallContent):
        call: dict[str, Any] = {"name": content.name, "args": content.arguments or {}}
        if not content.call_id.startswith(_GENERATED_ID):
            call["id"] = content.call_id
        return {"function_call": call}
    if isinstance(content, types.FunctionResultContent):
        name = content.name or names.get(content.call_id)
        if not name:
            raise UnsupportedOptionError(
                f"Gemini needs the tool name of result {content.call_id!r}; set FunctionResultContent.name",
                provider=PROVIDER,
            )
        if content.error is not None:
            payload: dict[str, Any] = {"error": content.error}
        else:  # a JSON-safe copy: the SDK serialises the response as a JSON object
            payload = {"result": json.loads(json.dumps(content.result, default=str))}
        response: dict[str, Any] = {"name": name, "response": payload}
        if not content.call_id.startswith(_GENERATED_ID):
            response["id"] = content.call_id
        return {"function_response": response}
    if isinstance(content, types.ServerToolContent) and content.kind in _SERVER_PARTS:
        return dict(content.block)
    return None


def create_client(model: str, **kwargs: Any) -> GeminiClient:
    """An adapter for `model`; keyword arguments beyond key, base_url, max_retries, timeout, profile
    and middleware go to the SDK (`retry_initial_delay`, `retry_jitter`, `HttpOptions` fields)."""
    return PROVIDERS[PROVIDER].connect(GeminiClient, _sdk, model, **kwargs)


def _hosted(tool: types.HostedTool) -> dict[str, Any]:
    """A hosted tool as a Gemini tool: google_search, code_execution, url_context, file_search."""
    if isinstance(tool, types.FileSearch):
        spec: dict[str, Any] = {"file_search_store_names": list(tool.store_ids)}
        if tool.max_results is not None:
            spec["top_k"] = tool.max_results
        return {"file_search": spec}
    return {{"web_search": "google_search"}.get(tool.kind, tool.kind): {}}
