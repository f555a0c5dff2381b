"""AWS Bedrock Converse adapter (boto3 `bedrock-runtime`: converse / converse_stream).

boto3 is synchronous, so each call runs in a worker thread and a stream is read event by event
from one. Non-streamed calls use `converse` itself: several Bedrock models take tools only there.
Credentials come from the usual AWS chain (environment, profile, role, AWS_BEARER_TOKEN_BEDROCK)
or from explicit `aws_access_key_id`/`aws_secret_access_key` arguments.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from chainform.clients._support import (
    StreamGuard,
    convert_schema,
    family_stem,
    import_sdk,
    profile_for,
    reject_unsupported,
    split_system,
    tool_mode,
)
from chainform.clients.base import BaseChatClient, Middleware
from chainform.errors import ChainformError, MissingKeyError, UnsupportedOptionError
from chainform.types import (
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    DataContent,
    FinishReason,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    ModelProfile,
    Role,
    TextContent,
    TextReasoningContent,
    UsageContent,
    UsageDetails,
)

PROVIDER = "bedrock"
_NO_SAMPLING = frozenset({"seed", "frequency_penalty", "presence_penalty"})
_IMAGE_FORMATS = {"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}
_DOC_FORMATS = {"application/pdf": "pdf", "text/plain": "txt", "text/csv": "csv", "text/markdown": "md"}
# Only these families accept `status: "error"` on a tool result.
_ERROR_STATUS_FAMILIES = ("anthropic.", "amazon.nova")
_STREAM_ERROR_STATUS = {
    "throttlingException": 429,
    "internalServerException": 500,
    "serviceUnavailableException": 503,
    "validationException": 400,
    "modelStreamErrorException": 424,
}

_CLAUDE = ModelProfile(
    provider=PROVIDER,
    supports_images=True,
    schema_dialect="bedrock",
    context_window=200_000,
    max_output_tokens=8192,
    unsupported_options=_NO_SAMPLING,
)
_CLAUDE_THINKING = _CLAUDE.replace(supports_reasoning=True, max_output_tokens=64_000)
# Converse's outputConfig.textFormat (native JSON schema) is offered for the Claude 4.5 generation on.
_CLAUDE_NATIVE = _CLAUDE_THINKING.replace(
    supports_json_schema=True, supports_tools_with_schema=True, supports_strict_schema=True
)
_NOVA = ModelProfile(
    provider=PROVIDER,
    supports_parallel_tool_calls=False,
    supports_images=True,
    schema_dialect="bedrock",
    context_window=300_000,
    max_output_tokens=10_000,
    unsupported_options=_NO_SAMPLING,
)
_OPEN_WEIGHTS = ModelProfile(
    provider=PROVIDER,
    supports_parallel_tool_calls=False,
    supports_tool_choice_required=False,
    schema_dialect="bedrock",
    context_window=128_000,
    max_output_tokens=8192,
    unsupported_options=_NO_SAMPLING | {"top_k"},
)


def _named(profile: ModelProfile, *model_ids: str) -> dict[str, ModelProfile]:
    return {model_id: profile.replace(name=model_id) for model_id in model_ids}


_MISTRAL = _OPEN_WEIGHTS.replace(unsupported_options=_NO_SAMPLING)
_NOVA_MICRO = "amazon.nova-micro-v1:0"
KNOWN_MODELS: dict[str, ModelProfile] = {
    **_named(
        _CLAUDE, "anthropic.claude-3-5-haiku-20241022-v1:0", "anthropic.claude-3-5-sonnet-20241022-v2:0"
    ),
    **_named(
        _CLAUDE_THINKING,
        "anthropic.claude-3-7-sonnet-20250219-v1:0",
        "anthropic.claude-sonnet-4-20250514-v1:0",
        "anthropic.claude-opus-4-1-20250805-v1:0",
    ),
    **_named(
        _CLAUDE_NATIVE,
        "anthropic.claude-sonnet-4-5-20250929-v1:0",
        "anthropic.claude-haiku-4-5-20251001-v1:0",
        "anthropic.claude-opus-4-5-20251101-v1:0",
    ),
    **_named(_NOVA, "amazon.nova-pro-v1:0", "amazon.nova-lite-v1:0", "amazon.nova-premier-v1:0"),
    _NOVA_MICRO: _NOVA.replace(name=_NOVA_MICRO, supports_images=False, context_window=128_000),
    **_named(
        _OPEN_WEIGHTS,
        "meta.llama3-1-70b-instruct-v1:0",
        "meta.llama3-3-70b-instruct-v1:0",
        "meta.llama4-maverick-17b-instruct-v1:0",
    ),
    **_named(_MISTRAL, "mistral.mistral-large-2407-v1:0", "mistral.mistral-small-2402-v1:0"),
}
_UNKNOWN = ModelProfile(
    provider=PROVIDER,
    supports_parallel_tool_calls=False,
    supports_tool_choice_required=False,
    schema_dialect="bedrock",
    unsupported_options=_NO_SAMPLING | {"top_k"},
)

_FINISH = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "tool_use": FinishReason.TOOL_CALLS,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "guardrail_intervened": FinishReason.CONTENT_FILTER,
    "content_filtered": FinishReason.CONTENT_FILTER,
}


def create_client(
    model: str,
    *,
    key: str | None = None,
    base_url: str | None = None,
    region: str | None = None,
    max_retries: int = 3,
    timeout: float | None = None,
    profile: ModelProfile | None = None,
    middleware: Sequence[Middleware] = (),
    **client_kwargs: Any,
) -> BedrockClient:
    """An adapter for `model`. `key` may be "ACCESS_KEY_ID:SECRET[:SESSION_TOKEN]"; other keyword
    arguments (aws_access_key_id, profile_name, ...) go to boto3."""
    boto3 = import_sdk("boto3", "bedrock")
    from botocore.config import Config

    session_kwargs = {k: client_kwargs.pop(k) for k in ("profile_name",) if k in client_kwargs}
    if key:
        parts = key.split(":")
        if len(parts) not in (2, 3):
            raise MissingKeyError(
                "a Bedrock key is 'ACCESS_KEY_ID:SECRET_ACCESS_KEY[:SESSION_TOKEN]'; for a Bedrock API "
                "key set AWS_BEARER_TOKEN_BEDROCK instead"
            )
        client_kwargs.setdefault("aws_access_key_id", parts[0])
        client_kwargs.setdefault("aws_secret_access_key", parts[1])
        if len(parts) == 3:
            client_kwargs.setdefault("aws_session_token", parts[2])
    session = boto3.Session(**session_kwargs)
    config_kwargs: dict[str, Any] = {"retries": {"total_max_attempts": max_retries + 1, "mode": "standard"}}
    if timeout is not None:
        config_kwargs.update(connect_timeout=timeout, read_timeout=timeout)
    sdk = session.client(
        "bedrock-runtime",
        region_name=region or session.region_name or "us-east-1",
        endpoint_url=base_url,
        config=Config(**config_kwargs),
        **client_kwargs,
    )
    return BedrockClient(
        model, sdk, profile=profile or profile_for(model, KNOWN_MODELS, _UNKNOWN), middleware=middleware
    )


class BedrockClient(BaseChatClient):
    """Translates chainform messages/options to Converse requests and responses/events back."""

    def __init__(
        self, model: str, sdk: Any, *, profile: ModelProfile, middleware: Sequence[Middleware] = ()
    ) -> None:
        super().__init__(profile=profile, middleware=middleware)
        self.model = model
        self.sdk = sdk

    async def aclose(self) -> None:
        """Close boto3's connection pool."""
        self.sdk.close()

    def build_request(self, messages: Sequence[Message], options: ChatOptions) -> dict[str, Any]:
        """The keyword arguments of `converse(_stream)` (public so tests can inspect them)."""
        reject_unsupported(options, self.profile)
        model = options.model_id or self.model
        system, rest = split_system(messages)
        tool_config = self._tool_config(options)
        request: dict[str, Any] = {
            "modelId": model,
            "messages": _messages(
                rest,
                tools_declared=tool_config is not None,
                error_status=family_stem(model).startswith(_ERROR_STATUS_FAMILIES),
            ),
        }
        if system:
            request["system"] = [{"text": system}]
        inference: dict[str, Any] = {}
        for ours, theirs in (
            ("max_output_tokens", "maxTokens"),
            ("temperature", "temperature"),
            ("top_p", "topP"),
        ):
            if getattr(options, ours) is not None:
                inference[theirs] = getattr(options, ours)
        if options.stop_sequences:
            inference["stopSequences"] = list(options.stop_sequences)
        if inference:
            request["inferenceConfig"] = inference
        if tool_config is not None:
            request["toolConfig"] = tool_config
        output = self._output_config(options)
        if output is not None:
            request["outputConfig"] = output
        extra = dict(options.additional_properties.get(PROVIDER) or {})
        if options.top_k is not None:
            extra.update(_top_k_field(model, options.top_k))
        if extra:
            request["additionalModelRequestFields"] = extra
        return request

    def _tool_config(self, options: ChatOptions) -> dict[str, Any] | None:
        mode = tool_mode(options)
        # Converse has no "none" choice: leaving the tools out is how a turn forbids calls.
        if mode is None or mode.mode == "none" or not options.tools:
            return None
        tools = [
            {
                "toolSpec": {
                    "name": t.name,
                    "description": t.description or t.name,
                    "inputSchema": {"json": convert_schema(t.parameters, self.profile.schema_dialect)},
                }
            }
            for t in options.tools
        ]
        config: dict[str, Any] = {"tools": tools}
        if mode.mode == "required":
            if not self.profile.supports_tool_choice_required:
                raise UnsupportedOptionError(
                    f"{self.profile.name!r} cannot be made to call a tool on Bedrock", provider=PROVIDER
                )
            config["toolChoice"] = (
                {"tool": {"name": mode.function_name}} if mode.function_name else {"any": {}}
            )
        else:
            config["toolChoice"] = {"auto": {}}
        return config

    def _output_config(self, options: ChatOptions) -> dict[str, Any] | None:
        fmt = options.response_format
        if fmt is None or fmt.kind == "text":
            return None
        if fmt.kind != "json_schema" or fmt.schema is None or not self.profile.supports_json_schema:
            raise UnsupportedOptionError(
                f"{self.profile.name!r} has no native JSON output on Bedrock; use the tool strategy",
                provider=PROVIDER,
            )
        definition: dict[str, Any] = {
            "schema": json.dumps(convert_schema(fmt.schema, self.profile.schema_dialect)),
            "name": fmt.name,
        }
        if fmt.description:
            definition["description"] = fmt.description
        return {"textFormat": {"type": "json_schema", "structure": {"jsonSchema": definition}}}

    async def _respond(self, messages: list[Message], options: ChatOptions) -> ChatResponse:
        request = self.build_request(messages, options)
        guard = StreamGuard(PROVIDER)
        try:
            result = await asyncio.to_thread(self.sdk.converse, **request)
        except Exception as exc:
            raise _error(guard, exc) from exc
        contents = [c for block in result["output"]["message"]["content"] for c in _block_contents(block)]
        meta = result.get("ResponseMetadata") or {}
        update = ChatResponseUpdate(
            [*contents, UsageContent(_usage(result.get("usage") or {}))],
            role=Role.ASSISTANT,
            response_id=meta.get("RequestId"),
            model_id=request["modelId"],
            finish_reason=_finish(result.get("stopReason")),
            raw_representation=result,
        )
        return ChatResponse.from_updates([update])

    async def _stream(
        self, messages: list[Message], options: ChatOptions
    ) -> AsyncIterator[ChatResponseUpdate]:
        request = self.build_request(messages, options)
        guard = StreamGuard(PROVIDER)
        state = _StreamState(request["modelId"])
        stream: Any = None
        try:
            result = await asyncio.to_thread(self.sdk.converse_stream, **request)
            state.response_id = (result.get("ResponseMetadata") or {}).get("RequestId")
            stream = result["stream"]
            events = iter(stream)
            while (event := await asyncio.to_thread(next, events, None)) is not None:
                update = state.translate(event)
                if update is not None:
                    yield guard.seen(update)
        except Exception as exc:
            raise _error(guard, exc, state.response_id) from exc
        finally:
            if stream is not None:
                stream.close()
        if not state.stopped:
            raise guard.error("stream ended before messageStop", request_id=state.response_id)


class _StreamState:
    """Turns ConverseStream events into updates."""

    def __init__(self, model_id: str) -> None:
        self.model_id = model_id
        self.response_id: str | None = None
        self.stopped = False

    def _update(self, contents: list[Content], **extra: Any) -> ChatResponseUpdate:
        return ChatResponseUpdate(
            contents, role=Role.ASSISTANT, response_id=self.response_id, model_id=self.model_id, **extra
        )

    def translate(self, event: dict[str, Any]) -> ChatResponseUpdate | None:
        if "contentBlockStart" in event:
            body = event["contentBlockStart"]
            tool = body.get("start", {}).get("toolUse")
            if tool:
                call = FunctionCallContent(tool["toolUseId"], tool["name"], index=body["contentBlockIndex"])
                return self._update([call])
        elif "contentBlockDelta" in event:
            body = event["contentBlockDelta"]
            delta, index = body["delta"], body["contentBlockIndex"]
            if "text" in delta:
                return self._update([TextContent(delta["text"])])
            if "toolUse" in delta and delta["toolUse"].get("input"):
                return self._update(
                    [FunctionCallContent("", "", raw_arguments=delta["toolUse"]["input"], index=index)]
                )
            if "reasoningContent" in delta:
                return self._update([_reasoning(delta["reasoningContent"])])
        elif "messageStop" in event:
            self.stopped = True
            return self._update([], finish_reason=_finish(event["messageStop"].get("stopReason")))
        elif "metadata" in event:
            return self._update([UsageContent(_usage(event["metadata"].get("usage") or {}))])
        return None


def _error(guard: StreamGuard, exc: Exception, request_id: str | None = None) -> ChainformError:
    """The typed error for what boto3 raised (after its own retries)."""
    from botocore.exceptions import ClientError, NoCredentialsError, NoRegionError

    if isinstance(exc, NoCredentialsError | NoRegionError):
        return MissingKeyError(f"Bedrock needs AWS credentials and a region: {exc}")
    if isinstance(exc, ClientError):
        error = exc.response.get("Error") or {}
        meta = exc.response.get("ResponseMetadata") or {}
        code = str(error.get("Code") or "")
        status = meta.get("HTTPStatusCode") or _STREAM_ERROR_STATUS.get(code[:1].lower() + code[1:])
        message = str(error.get("Message") or exc)
        return guard.error(
            f"{code}: {message}" if code else message,
            status=status,
            request_id=meta.get("RequestId") or request_id,
        )
    return guard.error(f"{type(exc).__name__}: {exc}", request_id=request_id)


def _top_k_field(model: str, top_k: int) -> dict[str, Any]:
    """top_k is model-specific on Converse: Nova nests it, Claude and Mistral take it flat."""
    if family_stem(model).startswith("amazon.nova"):
        return {"inferenceConfig": {"topK": top_k}}
    return {"top_k": top_k}


def _finish(reason: str | None) -> FinishReason | None:
    return _FINISH.get(reason, FinishReason(reason)) if reason else None


def _usage(usage: dict[str, Any]) -> UsageDetails:
    """Input as billed (fresh + cache reads + cache writes); the cache counts also kept apart."""
    read, written = int(usage.get("cacheReadInputTokens") or 0), int(usage.get("cacheWriteInputTokens") or 0)
    counts = {}
    if read:
        counts["cache_read_input_tokens"] = read
    if written:
        counts["cache_creation_input_tokens"] = written
    return UsageDetails(
        input_tokens=int(usage.get("inputTokens") or 0) + read + written,
        output_tokens=int(usage.get("outputTokens") or 0),
        additional_counts=counts,
    )


def _reasoning(block: dict[str, Any]) -> TextReasoningContent:
    if "redactedContent" in block:
        return TextReasoningContent("", base64.b64encode(block["redactedContent"]).decode("ascii"))
    text = block.get("reasoningText", block)
    return TextReasoningContent(text.get("text", ""), text.get("signature"))


def _block_contents(block: dict[str, Any]) -> list[Content]:
    if "text" in block:
        return [TextContent(block["text"])]
    if "toolUse" in block:
        tool = block["toolUse"]
        return [FunctionCallContent(tool["toolUseId"], tool["name"], dict(tool.get("input") or {}))]
    if "reasoningContent" in block:
        return [_reasoning(block["reasoningContent"])]
    return []


def _messages(
    messages: Sequence[Message], *, tools_declared: bool, error_status: bool
) -> list[dict[str, Any]]:
    """Chainform turns as Converse turns. Without a toolConfig Converse rejects tool blocks in the
    history, so then past calls and results are told as text."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message.role == Role.ASSISTANT else "user"
        blocks = [
            b for c in message.contents if (b := _block(c, role, tools_declared, error_status)) is not None
        ]
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return out


def _block(content: Content, role: str, tools_declared: bool, error_status: bool) -> dict[str, Any] | None:
    if isinstance(content, TextContent):
        return {"text": content.text} if content.text else None
    if isinstance(content, FunctionCallContent):
        if not tools_declared:
            return {"text": f"[called tool {content.name} with {content.arguments_json()}]"}
        return {
            "toolUse": {"toolUseId": content.call_id, "name": content.name, "input": content.arguments or {}}
        }
    if isinstance(content, FunctionResultContent):
        if not tools_declared:
            return {"text": f"[tool {content.name or content.call_id} returned: {content.result_text()}]"}
        result: dict[str, Any] = {"toolUseId": content.call_id, "content": [{"text": content.result_text()}]}
        if content.error is not None and error_status:
            result["status"] = "error"
        return {"toolResult": result}
    if isinstance(content, TextReasoningContent):
        if role != "assistant" or not content.protected_data:
            return None  # reasoning goes back only with the signature that proves it
        if not content.text:
            return {"reasoningContent": {"redactedContent": base64.b64decode(content.protected_data)}}
        return {
            "reasoningContent": {"reasoningText": {"text": content.text, "signature": content.protected_data}}
        }
    if isinstance(content, DataContent):
        if content.media_type in _IMAGE_FORMATS:
            return {
                "image": {"format": _IMAGE_FORMATS[content.media_type], "source": {"bytes": content.data}}
            }
        if content.media_type in _DOC_FORMATS:
            fmt = _DOC_FORMATS[content.media_type]
            name = f"document-{hashlib.sha1(content.data).hexdigest()[:10]}"  # unique per request
            return {"document": {"format": fmt, "name": name, "source": {"bytes": content.data}}}
        raise UnsupportedOptionError(
            f"Bedrock Converse cannot take {content.media_type!r} data", provider=PROVIDER
        )
    if content.type == "uri":
        raise UnsupportedOptionError("Bedrock Converse takes media as bytes, not URLs", provider=PROVIDER)
    return None
