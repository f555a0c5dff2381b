"""OpenAI Responses API adapter (`/responses`): input items in, output item events out.

Calls stream and are not stored on OpenAI's side (`store: false`) unless `additional_properties`
says otherwise: chainform always sends the whole conversation. Reasoning summaries come back as
`TextReasoningContent`; they are not sent back on later turns.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chainform import types
from chainform.clients import _openai, _wire
from chainform.clients._adapter import Endpoint, ProviderClient
from chainform.clients._errors import StreamGuard
from chainform.clients._openai import ClientSettings, make_settings, reject_unsupported_content
from chainform.clients._timeouts import with_call_header
from chainform.clients._wire import StreamState, openai_key
from chainform.clients.base import Middleware
from chainform.clients.profiles.openai import responses_profile
from chainform.errors import ChainformError, UnsupportedOptionError

_INCOMPLETE = {
    "max_output_tokens": types.FinishReason.LENGTH,
    "content_filter": types.FinishReason.CONTENT_FILTER,
}


class OpenAIResponsesClient(ProviderClient):
    """A ChatClient speaking the Responses API through the official `openai` SDK: the skeleton
    (`_adapter.py`) composed with the Responses wire (`ResponsesWire`). Its profile is the chat
    API's choice, less what the Responses API has no field for."""

    def __init__(
        self,
        model: str,
        *,
        settings: ClientSettings | None = None,
        profile: types.ModelProfile | str | None = None,
        sdk_client: Any = None,
        middleware: Sequence[Middleware] = (),
    ) -> None:
        self.settings = settings = settings or ClientSettings(provider="openai")
        endpoint = _openai.endpoint(model, settings, profile)
        if not isinstance(profile, types.ModelProfile):
            endpoint.profile = responses_profile(endpoint.profile)
        super().__init__(
            endpoint,
            ResponsesWire(endpoint),
            sdk_client,
            build_sdk=lambda hooks: _openai.build_sdk(settings, hooks),
            middleware=middleware,
        )

    def batch_api(self) -> Any:
        """OpenAI's Batch API for this client (`map(..., batch=True)`)."""
        return _openai.batch_api(self, "/v1/responses")


class ResponsesWire:
    """The Responses wire mapping: input items built, the SDK called, output item events read."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint

    def build_request(self, messages: Sequence[types.Message], options: types.ChatOptions) -> dict[str, Any]:
        """The keyword arguments of `responses.create` (public for tests and debugging)."""
        items = [item for message in messages for item in self._items(message)]
        e = self.endpoint
        body = _openai.request_body(e, options, "input", items, store=False)
        if options.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": schema,
                    "strict": strict,
                }
                for tool, schema, strict in _openai.tool_definitions(e, options.tools)
            ]
            if options.allow_multiple_tool_calls is not None and e.profile.supports_parallel_tool_calls:
                body["parallel_tool_calls"] = options.allow_multiple_tool_calls
        if options.hosted_tools:
            body.setdefault("tools", []).extend(_hosted(t) for t in options.hosted_tools)
        mode = options.tool_mode
        if mode is not None and (options.tools or mode.mode == "none"):
            body["tool_choice"] = (
                {"type": "function", "name": mode.function_name} if mode.function_name else mode.mode
            )
        fmt = options.response_format
        if fmt is not None and fmt.kind == "json_schema":
            schema, strict = _openai.response_schema(e, fmt)
            spec: dict[str, Any] = {
                "type": "json_schema",
                "name": fmt.name,
                "schema": schema,
                "strict": strict,
            }
            if fmt.description:
                spec["description"] = fmt.description
            body["text"] = {"format": spec}
        elif fmt is not None and fmt.kind == "json_object":
            body["text"] = {"format": {"type": "json_object"}}
        for name, value in (
            ("temperature", options.temperature),
            ("top_p", options.top_p),
            ("max_output_tokens", options.max_output_tokens),
        ):
            if value is not None:
                body[name] = value
        extra = dict(options.additional_properties)
        if "store" in extra:
            body["store"] = extra.pop("store")
        if extra:
            body["extra_body"] = extra
        body.update(openai_key(options, e.profile))
        return body

    def _items(self, message: types.Message) -> list[dict[str, Any]]:
        """One chainform message as Responses input items, in content order."""
        role = str(message.role)
        items: list[dict[str, Any]] = []
        parts: list[dict[str, Any]] = []

        def flush() -> None:
            if parts:
                speaker = "user" if role == types.Role.TOOL else role
                items.append({"type": "message", "role": speaker, "content": list(parts)})
                parts.clear()

        for content in message.contents:
            if isinstance(content, types.FunctionResultContent):
                flush()
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": content.call_id,
                        "output": content.result_text(),
                    }
                )
            elif isinstance(content, types.FunctionCallContent):
                flush()
                items.append(
                    {
                        "type": "function_call",
                        "call_id": content.call_id,
                        "name": content.name,
                        "arguments": content.arguments_json(),
                    }
                )
            elif (part := self._part(content, role)) is not None:
                parts.append(part)
        flush()
        return items

    def _part(self, content: types.Content, role: str) -> dict[str, Any] | None:
        provider = self.endpoint.provider
        if isinstance(content, types.TextContent):
            return {
                "type": "output_text" if role == types.Role.ASSISTANT else "input_text",
                "text": content.text,
            }
        if not isinstance(content, types.DataContent | types.UriContent):
            return None  # reasoning, errors and usage are not sent back
        if role not in ("user", "tool"):
            raise reject_unsupported_content(type(content).__name__, provider)
        media = content.media_type or "image/*"
        url = self.endpoint.inline_uri(content) if isinstance(content, types.DataContent) else content.uri
        if media.startswith("image/"):
            return {"type": "input_image", "image_url": url, "detail": "auto"}
        if isinstance(content, types.DataContent):
            return {"type": "input_file", "filename": content.name or "document.pdf", "file_data": url}
        return {"type": "input_file", "file_url": url}

    def reader(self, request: dict[str, Any]) -> StreamState:
        return _StreamState()

    def open_stream(self, sdk: Any, request: dict[str, Any], reader: StreamState, guard: StreamGuard) -> Any:
        return sdk.responses.create(**request)  # the one SDK call

    def tagged(self, request: dict[str, Any], call: str) -> dict[str, Any]:
        """`request` naming call `call` to the SDK client's hooks (`_timeouts.Clocks`)."""
        return with_call_header(request, call)

    def error(self, exc: Exception, guard: StreamGuard, opened: bool) -> ChainformError:
        return _openai.sdk_error(exc, guard, opened)


class _StreamState(StreamState):
    """Per-call translation state: which outputs were function calls, and a failure if one came.
    A whole `Response` (a server that ignored `stream: true`) is read item by item, the same way."""

    def __init__(self) -> None:
        super().__init__()
        self.has_calls = False
        self.failure: str | None = None
        self.unfinished = False  # a background response, queued or in progress: no answer to wait for

    closing_event = "response.completed"

    def end(self, guard: StreamGuard) -> list[types.ChatResponseUpdate]:
        if self.failure is not None and self.unfinished:  # asked again, it is queued again
            raise guard.error(self.failure, kind="bad_request", interrupted=False)
        if self.failure is not None:
            raise guard.error(self.failure, interrupted=True)
        return super().end(guard)

    def translate(self, event: Any) -> list[types.ChatResponseUpdate]:
        if self.failure is not None:
            return []
        kind = getattr(event, "type", "")
        contents: list[types.Content] = []
        reason: types.FinishReason | None = None
        if kind in ("response.created", "response.in_progress"):
            self.response_id, self.model_id = event.response.id, event.response.model
        elif kind == "response.output_text.delta":
            contents.append(types.TextContent(event.delta))
        elif kind == "response.refusal.delta":
            self.refusal.append(event.delta)
        elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            contents.append(types.TextReasoningContent(event.delta))
        elif kind == "response.output_item.added" and event.item.type == "function_call":
            contents.append(self._call(event.item, event.output_index))
        elif kind == "response.output_item.done" and event.item.type in _SERVER_ITEMS:
            contents.append(_server_item(event.item))
        elif kind == "response.function_call_arguments.delta":
            contents.append(
                types.FunctionCallContent("", "", raw_arguments=event.delta, index=event.output_index)
            )
        elif kind in ("response.completed", "response.incomplete"):
            reason = self._completed(event.response, contents)
        elif kind in ("response.failed", "error"):
            self.failure = _failure(getattr(getattr(event, "response", None), "error", None) or event)
            return []
        if not contents and reason is None:
            return []
        return [self.update(contents, finish_reason=reason, raw_representation=event)]

    def whole(self, body: Any) -> list[types.ChatResponseUpdate] | None:
        if not isinstance(body, dict) or not isinstance(body.get("output"), list):
            return None
        from openai.types.responses import Response

        response = Response.construct(**body)  # the SDK's lenient build, as for stream events
        self.response_id, self.model_id = response.id, response.model
        if response.status == "failed":
            self.failure = _failure(response.error)
            return []
        if response.status in ("queued", "in_progress"):  # a background response: no answer yet
            self.unfinished = True
            self.failure = (
                f"the response is {response.status}, not an answer: chainform does not poll "
                "background responses (leave `background` out of the request)"
            )
            return []
        contents: list[types.Content] = []
        for index, item in enumerate(response.output):
            if item.type == "message":
                for part in item.content or ():
                    if part.type == "output_text" and part.text:
                        contents.append(types.TextContent(part.text))
                    elif part.type == "refusal" and part.refusal:
                        self.refusal.append(part.refusal)
            elif item.type == "function_call":
                contents.append(self._call(item, index))
            elif item.type in _SERVER_ITEMS:
                contents.append(_server_item(item))
            elif item.type == "reasoning":
                texts = [*(item.summary or ()), *(getattr(item, "content", None) or ())]
                contents.extend(types.TextReasoningContent(t.text) for t in texts if getattr(t, "text", None))
        reason = self._completed(response, contents)
        return [self.update(contents, finish_reason=reason, raw_representation=body)]

    def _call(self, item: Any, index: int) -> types.FunctionCallContent:
        self.has_calls = True
        return types.FunctionCallContent(
            item.call_id, item.name, raw_arguments=item.arguments or "", index=index
        )

    def _completed(self, response: Any, contents: list[types.Content]) -> types.FinishReason:
        """The finish reason of a completed (or incomplete) response; its usage added to `contents`."""
        self.finished = True
        details = response.incomplete_details
        reason = _INCOMPLETE.get(details.reason if details else "")
        if reason is None:
            reason = types.FinishReason.TOOL_CALLS if self.has_calls else types.FinishReason.STOP
        usage = response.usage
        if usage is not None:
            cached = usage.input_tokens_details.cached_tokens if usage.input_tokens_details else None
            thought = usage.output_tokens_details.reasoning_tokens if usage.output_tokens_details else None
            counts = _wire.usage_details(
                usage.input_tokens,
                usage.output_tokens,
                usage.total_tokens,
                cache_read=cached,
                reasoning=thought,
            )
            contents.append(types.UsageContent(counts))
        return reason


_SERVER_ITEMS = frozenset(
    {
        "web_search_call",
        "file_search_call",
        "code_interpreter_call",
        "image_generation_call",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
    }
)
"""Output items of tools OpenAI runs itself: kept as ServerToolContent in the result and the log
(not sent back: with `store: false` the API would not know their ids), never a call for chainform."""


def _server_item(item: Any) -> types.ServerToolContent:
    dump = getattr(item, "model_dump", None)
    block = dump(mode="json", exclude_none=True) if callable(dump) else dict(item)
    return types.ServerToolContent(str(item.type), block)


def _failure(error: Any) -> str:
    return f"the response failed: {getattr(error, 'message', None) or 'no reason given'}"


def create_client(model: str, *, provider: str = "openai", **kwargs: Any) -> OpenAIResponsesClient:
    """The registry's entry point for "openai-responses/…" and "azure-responses/<deployment>";
    keyword arguments as for `openai_chat.create_client` (key, base_url, profile, settings)."""
    if provider not in ("openai", "azure"):
        raise ValueError(f"the Responses API is served by OpenAI and Azure only, not {provider!r}")
    profile, middleware = kwargs.pop("profile", None), kwargs.pop("middleware", ())
    resolved = make_settings(provider, responses=True, **kwargs)
    return OpenAIResponsesClient(model, settings=resolved, profile=profile, middleware=middleware)


def _hosted(tool: types.HostedTool) -> dict[str, Any]:
    """A hosted tool as a Responses tool: web_search, code_interpreter, file_search."""
    if isinstance(tool, types.WebSearch):
        spec: dict[str, Any] = {"type": "web_search"}
        if tool.allowed_domains:
            spec["filters"] = {"allowed_domains": list(tool.allowed_domains)}
        return spec
    if isinstance(tool, types.CodeExecution):
        return {"type": "code_interpreter", "container": {"type": "auto"}}
    if isinstance(tool, types.FileSearch):
        spec = {"type": "file_search", "vector_store_ids": list(tool.store_ids)}
        if tool.max_results is not None:
            spec["max_num_results"] = tool.max_results
        return spec
    raise UnsupportedOptionError(f"OpenAI's Responses API has no {tool.kind} tool", provider="openai")
