"""chainform: tool chains that end in schema-valid data, on any provider.

import chainform as cf
model = cf.get_model("local")
chain = model.chain("Weather in Paris?", tools=[get_weather], schema=Answer)
chain.value  # a validated Answer
"""

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
    JSONLimitError,
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
from chainform.models import AsyncConversation, AsyncModel, Conversation, Model, get_async_model, get_model
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

__version__ = "0.1.0"

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
    "JSONLimitError",
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
