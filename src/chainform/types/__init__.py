"""The one vocabulary shared by every layer: messages, content, responses, options, profiles."""

from chainform.types._attachment import Attachment as Attachment
from chainform.types._attachment import ConversionLimits as ConversionLimits
from chainform.types._content import Content as Content
from chainform.types._content import DataContent as DataContent
from chainform.types._content import ErrorContent as ErrorContent
from chainform.types._content import FunctionCallContent as FunctionCallContent
from chainform.types._content import FunctionResultContent as FunctionResultContent
from chainform.types._content import ServerToolContent as ServerToolContent
from chainform.types._content import TextContent as TextContent
from chainform.types._content import TextReasoningContent as TextReasoningContent
from chainform.types._content import UriContent as UriContent
from chainform.types._content import UsageContent as UsageContent
from chainform.types._content import arguments_error as arguments_error
from chainform.types._content import encodable_text as encodable_text
from chainform.types._content import parse_arguments as parse_arguments
from chainform.types._hosted import HOSTED_KINDS as HOSTED_KINDS
from chainform.types._hosted import CodeExecution as CodeExecution
from chainform.types._hosted import FileSearch as FileSearch
from chainform.types._hosted import HostedTool as HostedTool
from chainform.types._hosted import URLContext as URLContext
from chainform.types._hosted import WebSearch as WebSearch
from chainform.types._hosted import hosted_tool as hosted_tool
from chainform.types._messages import ChatResponse as ChatResponse
from chainform.types._messages import ChatResponseUpdate as ChatResponseUpdate
from chainform.types._messages import Message as Message
from chainform.types._messages import encodable_messages as encodable_messages
from chainform.types._options import ChatOptions as ChatOptions
from chainform.types._options import FunctionSpec as FunctionSpec
from chainform.types._options import MediaSupport as MediaSupport
from chainform.types._options import ModelProfile as ModelProfile
from chainform.types._options import ResponseFormat as ResponseFormat
from chainform.types._options import SchemaDialect as SchemaDialect
from chainform.types._options import Timeout as Timeout
from chainform.types._options import TimeoutLike as TimeoutLike
from chainform.types._options import ToolMode as ToolMode
from chainform.types._options import ToolSpec as ToolSpec
from chainform.types._usage import UsageDetails as UsageDetails
from chainform.types._values import FinishReason as FinishReason
from chainform.types._values import Role as Role

__all__ = sorted(name for name in dir() if not name.startswith("_"))  # each name above, once
