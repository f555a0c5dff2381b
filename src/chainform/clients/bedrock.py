"""AWS Bedrock Converse adapter (boto3 `bedrock-runtime`: converse / converse_stream).

boto3 is synchronous, so each call runs in a worker thread and a stream is read event by event
from one. Non-streamed calls use `converse` itself: several Bedrock models take tools only there.
Credentials come from the usual AWS chain (environment, profile, role, AWS_BEARER_TOKEN_BEDROCK)
or from explicit `aws_access_key_id`/`aws_secret_access_key` arguments.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

from chainform import types
from chainform.clients import _wire
from chainform.clients._adapter import Endpoint, ProviderClient
from chainform.clients._converse import DOCUMENT_TEXT, boto3_client, media_block
from chainform.clients._errors import StreamGuard
from chainform.clients._timeouts import CALL_PARAM
from chainform.clients._wire import CLAUDE_FINISH, StreamState, bedrock_points
from chainform.clients.profiles import family_stem
from chainform.clients.profiles.bedrock import KNOWN_MODELS, PROVIDER, UNKNOWN
from chainform.clients.registry import PROVIDERS
from chainform.errors import ChainformError, MissingKeyError, UnsupportedOptionError

__all__ = ["KNOWN_MODELS", "BedrockClient", "create_client"]

# Only these families accept `status: "error"` on a tool result.
_ERROR_STATUS_FAMILIES = ("anthropic.", "amazon.nova")
_STREAM_ERROR_STATUS = {
    "throttlingException": 429,
    "internalServerException": 500,
    "serviceUnavailableException": 503,
    "validationException": 400,
    "modelStreamErrorException": 424,
}
_FINISH = {
    **CLAUDE_FINISH,
    "guardrail_intervened": types.FinishReason.CONTENT_FILTER,
    "content_filtered": types.FinishReason.CONTENT_FILTER,
}


class BedrockClient(ProviderClient):
    """A ChatClient for Bedrock's Converse API: the skeleton (`_adapter.py`) composed with
    `ConverseWire`. `kwargs`: profile, middleware, secret, provider, base_url, timeout."""

    def __init__(self, model: str, sdk: Any, **kwargs: Any) -> None:
        middleware = kwargs.pop("middleware", ())
        endpoint = Endpoint.for_model(
            model, kwargs.pop("provider", None) or PROVIDER, KNOWN_MODELS, UNKNOWN, **kwargs
        )
        super().__init__(endpoint, ConverseWire(endpoint), sdk, middleware=middleware)


class ConverseWire:
    """Chainform messages and options as Converse requests, and its responses and events back.
    Unstreamed calls use `converse` itself: several Bedrock models take tools only there."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint

    def build_request(self, messages: Sequence[types.Message], options: types.ChatOptions) -> dict[str, Any]:
        """The keyword arguments of `converse(_stream)` (public so tests can inspect them)."""
        self.endpoint.check_options(options)
        model = options.model_id or self.endpoint.model
        system, rest = _wire.split_system(messages)
        tool_config = self._tool_config(options)
        request: dict[str, Any] = {
            "modelId": model,
            "messages": _messages(
                rest,
                media=self.endpoint.inline_bytes,
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
        bedrock_points(request, options, self.endpoint.profile)
        return request

    def _tool_config(self, options: types.ChatOptions) -> dict[str, Any] | None:
        mode = _wire.tool_mode(options)
        # Converse has no "none" choice: leaving the tools out is how a turn forbids calls.
        if mode is None or mode.mode == "none" or not options.tools:
            return None
        tools = [
            {
                "toolSpec": {
                    "name": t.name,
                    "description": t.description or t.name,
                    "inputSchema": {"json": self.endpoint.dialect_schema(t.parameters)},
                }
            }
            for t in options.tools
        ]
        config: dict[str, Any] = {"tools": tools}
        if mode.mode == "required":
            config["toolChoice"] = (
                {"tool": {"name": mode.function_name}} if mode.function_name else {"any": {}}
            )
        else:
            config["toolChoice"] = {"auto": {}}
        return config

    def _output_config(self, options: types.ChatOptions) -> dict[str, Any] | None:
        fmt = options.response_format
        if fmt is None or fmt.kind == "text":
            return None
        if fmt.kind != "json_schema" or fmt.schema is None or not self.endpoint.profile.supports_json_schema:
            raise UnsupportedOptionError(
                f"{self.endpoint.profile.name!r} has no native JSON output on Bedrock; use the tool strategy",
                provider=PROVIDER,
            )
        definition: dict[str, Any] = {
            "schema": json.dumps(self.endpoint.dialect_schema(fmt.schema)),
            "name": fmt.name,
        }
        if fmt.description:
            definition["description"] = fmt.description
        return {"textFormat": {"type": "json_schema", "structure": {"jsonSchema": definition}}}

    def reader(self, request: dict[str, Any]) -> StreamState:
        return _StreamState(request["modelId"])

    async def open_stream(
        self, sdk: Any, request: dict[str, Any], reader: StreamState, guard: StreamGuard
    ) -> AsyncIterator[dict[str, Any]]:
        result = await asyncio.to_thread(sdk.converse_stream, **request)  # the SDK call, streamed
        reader.response_id = guard.request_id = (result.get("ResponseMetadata") or {}).get("RequestId")
        return _events(result["stream"])

    def send_whole(self, sdk: Any, request: dict[str, Any]) -> Awaitable[Any]:
        return asyncio.to_thread(sdk.converse, **request)  # the SDK call, whole

    def tagged(self, request: dict[str, Any], call: str) -> dict[str, Any]:
        """`request` naming call `call` to the SDK client's hooks (`_timeouts.Clocks.botocore`)."""
        return {**request, CALL_PARAM: call}

    def read_answer(
        self, result: Any, request: dict[str, Any], guard: StreamGuard
    ) -> list[types.ChatResponseUpdate]:
        message = (result.get("output") or {}).get("message") if isinstance(result, dict) else None
        if not isinstance(message, dict):  # a 200 whose body botocore could not read as Converse
            raise guard.error("Converse answered without an output message")
        contents = [c for block in message.get("content") or () for c in _block_contents(block)]
        state = StreamState(request["modelId"])
        state.response_id = (result.get("ResponseMetadata") or {}).get("RequestId")
        usage = types.UsageContent(_usage(result.get("usage") or {}))
        finish = _wire.finish_reason(result.get("stopReason"), _FINISH)
        return [state.update([*contents, usage], finish_reason=finish, raw_representation=result)]

    def error(self, exc: Exception, guard: StreamGuard, opened: bool) -> ChainformError:
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
            text = f"{code}: {message}" if code else message
            return guard.error(text, status=status, request_id=meta.get("RequestId"))
        return guard.error(f"{type(exc).__name__}: {exc}")


async def _events(stream: Any) -> AsyncIterator[dict[str, Any]]:
    """boto3's blocking event stream, read one event at a time in a worker thread."""
    try:
        events = iter(stream)
        while (event := await asyncio.to_thread(next, events, None)) is not None:
            yield event
    finally:
        stream.close()


class _StreamState(StreamState):
    """Turns ConverseStream events into updates."""

    closing_event = "messageStop"

    def __init__(self, model_id: str | None = None) -> None:
        super().__init__(model_id)
        self.server_tools: dict[int, dict[str, Any]] = {}  # index -> a system tool's toolUse so far

    def translate_one(self, event: dict[str, Any]) -> types.ChatResponseUpdate | None:
        if "contentBlockStart" in event:
            body = event["contentBlockStart"]
            tool = body.get("start", {}).get("toolUse")
            if tool and tool.get("type") == _SERVER_TOOL_USE:
                self.server_tools[body["contentBlockIndex"]] = {**tool, "input": ""}
            elif tool:
                call = types.FunctionCallContent(
                    tool["toolUseId"], tool["name"], index=body["contentBlockIndex"]
                )
                return self.update([call])
            elif "toolResult" in body.get("start", {}):
                return self.update(_block_contents(body["start"]))
        elif "contentBlockStop" in event:
            tool = self.server_tools.pop(event["contentBlockStop"].get("contentBlockIndex", -1), None)
            if tool is not None:
                tool["input"] = _json_or_text(tool["input"])
                return self.update(_block_contents({"toolUse": tool}))
        elif "contentBlockDelta" in event:
            body = event["contentBlockDelta"]
            delta, index = body["delta"], body["contentBlockIndex"]
            if index in self.server_tools:
                self.server_tools[index]["input"] += (delta.get("toolUse") or {}).get("input") or ""
                return None
            if "text" in delta:
                return self.update([types.TextContent(delta["text"])])
            if "toolUse" in delta and delta["toolUse"].get("input"):
                return self.update(
                    [types.FunctionCallContent("", "", raw_arguments=delta["toolUse"]["input"], index=index)]
                )
            if "reasoningContent" in delta:
                return self.update([_reasoning(delta["reasoningContent"])])
        elif "messageStop" in event:
            self.finished = True
            return self.update(
                [], finish_reason=_wire.finish_reason(event["messageStop"].get("stopReason"), _FINISH)
            )
        elif "metadata" in event:
            return self.update([types.UsageContent(_usage(event["metadata"].get("usage") or {}))])
        return None


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text) if text else {}
    except ValueError:
        return text


def _top_k_field(model: str, top_k: int) -> dict[str, Any]:
    """top_k is model-specific on Converse: Nova nests it, Claude and Mistral take it flat."""
    if family_stem(model).startswith("amazon.nova"):
        return {"inferenceConfig": {"topK": top_k}}
    return {"top_k": top_k}


def _usage(usage: dict[str, Any]) -> types.UsageDetails:
    """Input as billed (fresh + cache reads + cache writes); the cache counts also kept apart."""
    read, written = int(usage.get("cacheReadInputTokens") or 0), int(usage.get("cacheWriteInputTokens") or 0)
    billed = int(usage.get("inputTokens") or 0) + read + written
    return _wire.usage_details(
        billed, int(usage.get("outputTokens") or 0), cache_read=read, cache_written=written
    )


def _reasoning(block: dict[str, Any]) -> types.TextReasoningContent:
    if "redactedContent" in block:
        return types.TextReasoningContent("", base64.b64encode(block["redactedContent"]).decode("ascii"))
    text = block.get("reasoningText", block)
    return types.TextReasoningContent(text.get("text", ""), text.get("signature"))


def _block_contents(block: dict[str, Any]) -> list[types.Content]:
    if "text" in block:
        return [types.TextContent(block["text"])]
    if "toolUse" in block:
        tool = block["toolUse"]
        if tool.get("type") == _SERVER_TOOL_USE:  # a system tool Bedrock ran (nova_code_interpreter)
            return [types.ServerToolContent(_SERVER_TOOL_USE, block)]
        return [types.FunctionCallContent(tool["toolUseId"], tool["name"], dict(tool.get("input") or {}))]
    if "toolResult" in block:  # in an assistant turn: the result of a system tool Bedrock ran
        return [types.ServerToolContent(str(block["toolResult"].get("type") or "tool_result"), block)]
    if "reasoningContent" in block:
        return [_reasoning(block["reasoningContent"])]
    return []


_SERVER_TOOL_USE = "server_tool_use"
"""A `toolUse` of this type is a system tool Bedrock runs itself: kept as ServerToolContent (with
its `toolResult`), never a call for chainform, and sent back as it came."""


def _messages(
    messages: Sequence[types.Message],
    *,
    media: Callable[[types.DataContent], bytes],
    tools_declared: bool,
    error_status: bool,
) -> list[dict[str, Any]]:
    """Chainform turns as Converse turns. Without a toolConfig Converse rejects tool blocks in the
    history, so then past calls and results are told as text. `media` gives an image's or
    document's bytes (a placeholder spliced as the body is signed)."""
    names: set[str] = set()

    def blocks(message: types.Message, role: str) -> list[dict[str, Any]]:
        encoded = [
            media_block(c, media, names)
            if isinstance(c, types.DataContent)
            else _block(c, role, tools_declared, error_status)
            for c in message.contents
        ]
        out = [b for b in encoded if b is not None]
        if any("document" in b for b in out) and not any("text" in b for b in out):
            out.append({"text": DOCUMENT_TEXT})
        return out

    return _wire.merge_turns(messages, blocks)


def _block(
    content: types.Content, role: str, tools_declared: bool, error_status: bool
) -> dict[str, Any] | None:
    if isinstance(content, types.TextContent):
        return {"text": content.text} if content.text else None
    if isinstance(content, types.FunctionCallContent):
        if not tools_declared:
            return {"text": f"[called tool {content.name} with {content.arguments_json()}]"}
        return {
            "toolUse": {"toolUseId": content.call_id, "name": content.name, "input": content.arguments or {}}
        }
    if isinstance(content, types.FunctionResultContent):
        if not tools_declared:
            return {"text": f"[tool {content.name or content.call_id} returned: {content.result_text()}]"}
        result: dict[str, Any] = {"toolUseId": content.call_id, "content": [{"text": content.result_text()}]}
        if content.error is not None and error_status:
            result["status"] = "error"
        return {"toolResult": result}
    if isinstance(content, types.TextReasoningContent):
        return _wire.replay_reasoning(
            content,
            role,
            signed=lambda text, signature: {
                "reasoningContent": {"reasoningText": {"text": text, "signature": signature}}
            },
            redacted=lambda data: {"reasoningContent": {"redactedContent": base64.b64decode(data)}},
        )
    if isinstance(content, types.ServerToolContent) and role == "assistant" and tools_declared:
        return dict(content.block)  # a system tool's use or result goes back as it came
    if content.type == "uri":
        raise UnsupportedOptionError("Bedrock Converse takes media as bytes, not URLs", provider=PROVIDER)
    return None


def create_client(model: str, **kwargs: Any) -> BedrockClient:
    """An adapter for `model`: key ("ACCESS_KEY_ID:SECRET[:SESSION_TOKEN]"), base_url, max_retries,
    timeout, profile, middleware; other keyword arguments (region, profile_name, ...) go to boto3."""
    return PROVIDERS[PROVIDER].connect(BedrockClient, boto3_client, model, **kwargs)
