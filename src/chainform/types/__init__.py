"""The one vocabulary shared by every layer: messages, content, responses, options, profiles."""

from chainform.types._attachment import Attachment
from chainform.types._content import (
    Content,
    DataContent,
    ErrorContent,
    FunctionCallContent,
    FunctionResultContent,
    ServerToolContent,
    TextContent,
    TextReasoningContent,
    UriContent,
    UsageContent,
    arguments_error,
    encodable_text,
    parse_arguments,
)
from chainform.types._messages import ChatResponse, ChatResponseUpdate, Message, encodable_messages
from chainform.types._options import (
    ChatOptions,
    FunctionSpec,
    MediaSupport,
    ModelProfile,
    ResponseFormat,
    SchemaDialect,
    ToolMode,
    ToolSpec,
)
from chainform.types._usage import UsageDetails
from chainform.types._values import FinishReason, Role

__all__ = [
    "Attachment",
    "ChatOptions",
    "ChatResponse",
    "ChatResponseUpdate",
    "Content",
    "DataContent",
    "ErrorContent",
    "FinishReason",
    "FunctionCallContent",
    "FunctionResultContent",
    "FunctionSpec",
    "MediaSupport",
    "Message",
    "ModelProfile",
    "ResponseFormat",
    "Role",
    "SchemaDialect",
    "ServerToolContent",
    "TextContent",
    "TextReasoningContent",
    "ToolMode",
    "ToolSpec",
    "UriContent",
    "UsageContent",
    "UsageDetails",
    "arguments_error",
    "encodable_messages",
    "encodable_text",
    "parse_arguments",
]
