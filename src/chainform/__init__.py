"""chainform: tool chains that end in schema-valid data, on any provider.

    import chainform as cf
    model = cf.get_model("local")
    chain = model.chain("Weather in Paris?", tools=[get_weather], schema=Answer)
    chain.value  # a validated Answer

Every public name is imported on first use (PEP 562 `__getattr__`): `import chainform` and the
CLI's `--help` stay fast, and `chainform.Model` still works as written.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "Agent": "chainform.agents",
    "ContextPolicy": "chainform.chain._context",
    "ChainEvent": "chainform.chain._events",
    "ChainUsage": "chainform.chain._records",
    "ModelCall": "chainform.chain._records",
    "CancelToolCall": "chainform.chain._tools",
    "BaseChatClient": "chainform.clients.base",
    "CallContext": "chainform.clients.base",
    "ChatClient": "chainform.clients.base",
    "ModelInfo": "chainform.clients.registry",
    "list_models": "chainform.clients.registry",
    "register_alias": "chainform.clients.registry",
    "Attempt": "chainform.errors",
    "ChainError": "chainform.errors",
    "ChainformError": "chainform.errors",
    "FormattingError": "chainform.errors",
    "GuardrailError": "chainform.errors",
    "JSONLimitError": "chainform.errors",
    "MissingKeyError": "chainform.errors",
    "ModelNotFoundError": "chainform.errors",
    "ProviderError": "chainform.errors",
    "SandboxUnavailableError": "chainform.errors",
    "SchemaError": "chainform.errors",
    "StreamInterruptedError": "chainform.errors",
    "StructuredOutputError": "chainform.errors",
    "StructuredOutputGenerationError": "chainform.errors",
    "ToolArgumentError": "chainform.errors",
    "HomeError": "chainform.errors",
    "MCPServerError": "chainform.errors",
    "ToolDefinitionError": "chainform.errors",
    "ToolError": "chainform.errors",
    "UnknownToolError": "chainform.errors",
    "UnsupportedOptionError": "chainform.errors",
    "AsyncConversation": "chainform.models",
    "AsyncModel": "chainform.models",
    "Conversation": "chainform.models",
    "Model": "chainform.models",
    "get_async_model": "chainform.models",
    "get_model": "chainform.models",
    "OutputSpec": "chainform.output",
    "StrategyChoice": "chainform.output",
    "AsyncChainResponse": "chainform.response",
    "ChainResponse": "chainform.response",
    "resolve_schema": "chainform.schema.dsl",
    "schema_dsl": "chainform.schema.dsl",
    "Tool": "chainform.tools",
    "Toolbox": "chainform.tools",
    "get_schema": "chainform.tools",
    "ChatOptions": "chainform.types",
    "ChatResponse": "chainform.types",
    "ChatResponseUpdate": "chainform.types",
    "Content": "chainform.types",
    "DataContent": "chainform.types",
    "ErrorContent": "chainform.types",
    "FinishReason": "chainform.types",
    "FunctionCallContent": "chainform.types",
    "FunctionResultContent": "chainform.types",
    "FunctionSpec": "chainform.types",
    "Message": "chainform.types",
    "ModelProfile": "chainform.types",
    "ResponseFormat": "chainform.types",
    "Role": "chainform.types",
    "TextContent": "chainform.types",
    "TextReasoningContent": "chainform.types",
    "ToolMode": "chainform.types",
    "ToolSpec": "chainform.types",
    "UriContent": "chainform.types",
    "UsageContent": "chainform.types",
    "UsageDetails": "chainform.types",
    "Response": "chainform.response:ChainResponse",
    "AsyncResponse": "chainform.response:AsyncChainResponse",
}
_SUBMODULES = ("keys", "tools")


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"chainform.{name}")
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'chainform' has no attribute {name!r}")
    module, _, attr = target.partition(":")
    value = getattr(importlib.import_module(module), attr or name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:
    from chainform import keys, tools
    from chainform.agents import Agent
    from chainform.chain._context import ContextPolicy
    from chainform.chain._events import ChainEvent
    from chainform.chain._records import ChainUsage, ModelCall
    from chainform.chain._tools import CancelToolCall
    from chainform.clients.base import BaseChatClient, CallContext, ChatClient
    from chainform.clients.registry import ModelInfo, list_models, register_alias
    from chainform.errors import (
        Attempt,
        ChainError,
        ChainformError,
        FormattingError,
        GuardrailError,
        HomeError,
        JSONLimitError,
        MCPServerError,
        MissingKeyError,
        ModelNotFoundError,
        ProviderError,
        SandboxUnavailableError,
        SchemaError,
        StreamInterruptedError,
        StructuredOutputError,
        StructuredOutputGenerationError,
        ToolArgumentError,
        ToolDefinitionError,
        ToolError,
        UnknownToolError,
        UnsupportedOptionError,
    )
    from chainform.models import (
        AsyncConversation,
        AsyncModel,
        Conversation,
        Model,
        get_async_model,
        get_model,
    )
    from chainform.output import OutputSpec, StrategyChoice
    from chainform.response import AsyncChainResponse, ChainResponse
    from chainform.schema.dsl import resolve_schema, schema_dsl
    from chainform.tools import Tool, Toolbox, get_schema
    from chainform.types import (
        ChatOptions,
        ChatResponse,
        ChatResponseUpdate,
        Content,
        DataContent,
        ErrorContent,
        FinishReason,
        FunctionCallContent,
        FunctionResultContent,
        FunctionSpec,
        Message,
        ModelProfile,
        ResponseFormat,
        Role,
        TextContent,
        TextReasoningContent,
        ToolMode,
        ToolSpec,
        UriContent,
        UsageContent,
        UsageDetails,
    )

    Response = ChainResponse
    AsyncResponse = AsyncChainResponse

__all__ = [
    "Agent",
    "AsyncChainResponse",
    "AsyncConversation",
    "AsyncModel",
    "AsyncResponse",
    "Attempt",
    "BaseChatClient",
    "CallContext",
    "CancelToolCall",
    "ChainError",
    "ChainEvent",
    "ChainResponse",
    "ChainUsage",
    "ChainformError",
    "ChatClient",
    "ChatOptions",
    "ChatResponse",
    "ChatResponseUpdate",
    "Content",
    "ContextPolicy",
    "Conversation",
    "DataContent",
    "ErrorContent",
    "FinishReason",
    "FormattingError",
    "FunctionCallContent",
    "FunctionResultContent",
    "FunctionSpec",
    "GuardrailError",
    "HomeError",
    "JSONLimitError",
    "MCPServerError",
    "Message",
    "MissingKeyError",
    "Model",
    "ModelCall",
    "ModelInfo",
    "ModelNotFoundError",
    "ModelProfile",
    "OutputSpec",
    "ProviderError",
    "Response",
    "ResponseFormat",
    "Role",
    "SandboxUnavailableError",
    "SchemaError",
    "StrategyChoice",
    "StreamInterruptedError",
    "StructuredOutputError",
    "StructuredOutputGenerationError",
    "TextContent",
    "TextReasoningContent",
    "Tool",
    "ToolArgumentError",
    "ToolDefinitionError",
    "ToolError",
    "ToolMode",
    "ToolSpec",
    "Toolbox",
    "UnknownToolError",
    "UnsupportedOptionError",
    "UriContent",
    "UsageContent",
    "UsageDetails",
    "get_async_model",
    "get_model",
    "get_schema",
    "keys",
    "list_models",
    "register_alias",
    "resolve_schema",
    "schema_dsl",
    "tools",
]
