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

from chainform._version import __version__ as __version__

_PUBLIC: dict[str, tuple[str, ...]] = {
    # module: the names `chainform` gives from it (the one list; __all__ and the lookup derive from it)
    "chainform.agents": ("Agent",),
    "chainform.output.strategies._context": ("ContextPolicy",),
    "chainform.chain._events": ("ChainEvent", "FellBack"),
    "chainform.chain._records": ("ChainUsage",),
    "chainform.chain._state": ("ModelCall", "RunState"),
    "chainform._lineage": ("RunContext",),
    "chainform.chain._tools": ("CancelToolCall", "Final"),
    "chainform.chain._approval": ("ChainWaitingError", "PendingCall"),
    "chainform.chain._spec": ("ChainSpec", "SpecError"),
    "chainform.durable": ("Approved", "Denied", "ResumeError", "aresume", "resume"),
    "chainform.clients.base": ("BaseChatClient", "CallContext", "ChatClient"),
    "chainform.clients.registry": ("ModelInfo", "list_models", "register_alias"),
    "chainform.errors": (
        "AllModelsFailedError",
        "ArgumentRangeError",
        "AttachmentError",
        "Attempt",
        "BudgetExceededError",
        "ChainError",
        "ChainInterruptedError",
        "ChainformError",
        "FormattingError",
        "GuardrailError",
        "HomeError",
        "HostedToolError",
        "JSONLimitError",
        "MCPServerError",
        "MissingKeyError",
        "ModelNotFoundError",
        "PricingError",
        "ProviderError",
        "SandboxUnavailableError",
        "SchemaError",
        "StreamInterruptedError",
        "StructuredOutputError",
        "StructuredOutputGenerationError",
        "ToolArgumentError",
        "ToolDefinitionError",
        "ToolError",
        "TracingSetupError",
        "TruncatedOutputError",
        "UnknownToolError",
        "UnsupportedOptionError",
    ),
    "chainform.evals": ("EvalInputError", "EvalReport", "evaluate"),
    "chainform.models": (
        "AsyncConversation",
        "AsyncModel",
        "Conversation",
        "Model",
        "get_async_model",
        "get_model",
    ),
    "chainform.otel": ("instrument", "uninstrument"),
    "chainform.output": ("OutputSpec", "StrategyChoice"),
    "chainform.pricing": ("Budget", "set_price"),
    "chainform.response": ("AsyncChainResponse", "ChainResponse"),
    "chainform.schema.dsl": ("resolve_schema", "schema_dsl"),
    "chainform.tools": ("Tool", "Toolbox", "get_schema"),
    "chainform.types": (
        "Attachment",
        "ChatOptions",
        "ChatResponse",
        "ChatResponseUpdate",
        "CodeExecution",
        "Content",
        "ConversionLimits",
        "DataContent",
        "ErrorContent",
        "FileSearch",
        "FinishReason",
        "FunctionCallContent",
        "FunctionResultContent",
        "FunctionSpec",
        "HostedTool",
        "Message",
        "ModelProfile",
        "ResponseFormat",
        "Role",
        "TextContent",
        "TextReasoningContent",
        "Timeout",
        "ToolMode",
        "ToolSpec",
        "URLContext",
        "UriContent",
        "UsageContent",
        "UsageDetails",
        "WebSearch",
    ),
}
_ALIASES: dict[str, tuple[str, str]] = {
    "Response": ("chainform.response", "ChainResponse"),
    "AsyncResponse": ("chainform.response", "AsyncChainResponse"),
}
_SUBMODULES = ("keys", "pricing", "tools")
_WHERE: dict[str, str] = {name: module for module, names in _PUBLIC.items() for name in names}


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"chainform.{name}")
    module, attr = _ALIASES.get(name) or (_WHERE.get(name), name)
    if module is None:
        raise AttributeError(f"module 'chainform' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # what type checkers and editors see: the same names, imported eagerly
    from chainform import keys as keys
    from chainform import pricing as pricing
    from chainform import tools as tools
    from chainform._lineage import RunContext as RunContext
    from chainform.agents import Agent as Agent
    from chainform.chain._approval import ChainWaitingError as ChainWaitingError
    from chainform.chain._approval import PendingCall as PendingCall
    from chainform.chain._events import ChainEvent as ChainEvent
    from chainform.chain._events import FellBack as FellBack
    from chainform.chain._records import ChainUsage as ChainUsage
    from chainform.chain._spec import ChainSpec as ChainSpec
    from chainform.chain._spec import SpecError as SpecError
    from chainform.chain._state import ModelCall as ModelCall
    from chainform.chain._state import RunState as RunState
    from chainform.chain._tools import CancelToolCall as CancelToolCall
    from chainform.chain._tools import Final as Final
    from chainform.clients.base import BaseChatClient as BaseChatClient
    from chainform.clients.base import CallContext as CallContext
    from chainform.clients.base import ChatClient as ChatClient
    from chainform.clients.registry import ModelInfo as ModelInfo
    from chainform.clients.registry import list_models as list_models
    from chainform.clients.registry import register_alias as register_alias
    from chainform.durable import Approved as Approved
    from chainform.durable import Denied as Denied
    from chainform.durable import ResumeError as ResumeError
    from chainform.durable import aresume as aresume
    from chainform.durable import resume as resume
    from chainform.errors import AllModelsFailedError as AllModelsFailedError
    from chainform.errors import ArgumentRangeError as ArgumentRangeError
    from chainform.errors import AttachmentError as AttachmentError
    from chainform.errors import Attempt as Attempt
    from chainform.errors import BudgetExceededError as BudgetExceededError
    from chainform.errors import ChainError as ChainError
    from chainform.errors import ChainformError as ChainformError
    from chainform.errors import ChainInterruptedError as ChainInterruptedError
    from chainform.errors import FormattingError as FormattingError
    from chainform.errors import GuardrailError as GuardrailError
    from chainform.errors import HomeError as HomeError
    from chainform.errors import HostedToolError as HostedToolError
    from chainform.errors import JSONLimitError as JSONLimitError
    from chainform.errors import MCPServerError as MCPServerError
    from chainform.errors import MissingKeyError as MissingKeyError
    from chainform.errors import ModelNotFoundError as ModelNotFoundError
    from chainform.errors import PricingError as PricingError
    from chainform.errors import ProviderError as ProviderError
    from chainform.errors import SandboxUnavailableError as SandboxUnavailableError
    from chainform.errors import SchemaError as SchemaError
    from chainform.errors import StreamInterruptedError as StreamInterruptedError
    from chainform.errors import StructuredOutputError as StructuredOutputError
    from chainform.errors import StructuredOutputGenerationError as StructuredOutputGenerationError
    from chainform.errors import ToolArgumentError as ToolArgumentError
    from chainform.errors import ToolDefinitionError as ToolDefinitionError
    from chainform.errors import ToolError as ToolError
    from chainform.errors import TracingSetupError as TracingSetupError
    from chainform.errors import TruncatedOutputError as TruncatedOutputError
    from chainform.errors import UnknownToolError as UnknownToolError
    from chainform.errors import UnsupportedOptionError as UnsupportedOptionError
    from chainform.evals import EvalInputError as EvalInputError
    from chainform.evals import EvalReport as EvalReport
    from chainform.evals import evaluate as evaluate
    from chainform.models import AsyncConversation as AsyncConversation
    from chainform.models import AsyncModel as AsyncModel
    from chainform.models import Conversation as Conversation
    from chainform.models import Model as Model
    from chainform.models import get_async_model as get_async_model
    from chainform.models import get_model as get_model
    from chainform.otel import instrument as instrument
    from chainform.otel import uninstrument as uninstrument
    from chainform.output import OutputSpec as OutputSpec
    from chainform.output import StrategyChoice as StrategyChoice
    from chainform.output.strategies._context import ContextPolicy as ContextPolicy
    from chainform.pricing import Budget as Budget
    from chainform.pricing import set_price as set_price
    from chainform.response import AsyncChainResponse as AsyncChainResponse
    from chainform.response import ChainResponse as ChainResponse
    from chainform.schema.dsl import resolve_schema as resolve_schema
    from chainform.schema.dsl import schema_dsl as schema_dsl
    from chainform.tools import Tool as Tool
    from chainform.tools import Toolbox as Toolbox
    from chainform.tools import get_schema as get_schema
    from chainform.types import Attachment as Attachment
    from chainform.types import ChatOptions as ChatOptions
    from chainform.types import ChatResponse as ChatResponse
    from chainform.types import ChatResponseUpdate as ChatResponseUpdate
    from chainform.types import CodeExecution as CodeExecution
    from chainform.types import Content as Content
    from chainform.types import ConversionLimits as ConversionLimits
    from chainform.types import DataContent as DataContent
    from chainform.types import ErrorContent as ErrorContent
    from chainform.types import FileSearch as FileSearch
    from chainform.types import FinishReason as FinishReason
    from chainform.types import FunctionCallContent as FunctionCallContent
    from chainform.types import FunctionResultContent as FunctionResultContent
    from chainform.types import FunctionSpec as FunctionSpec
    from chainform.types import HostedTool as HostedTool
    from chainform.types import Message as Message
    from chainform.types import ModelProfile as ModelProfile
    from chainform.types import ResponseFormat as ResponseFormat
    from chainform.types import Role as Role
    from chainform.types import TextContent as TextContent
    from chainform.types import TextReasoningContent as TextReasoningContent
    from chainform.types import Timeout as Timeout
    from chainform.types import ToolMode as ToolMode
    from chainform.types import ToolSpec as ToolSpec
    from chainform.types import UriContent as UriContent
    from chainform.types import URLContext as URLContext
    from chainform.types import UsageContent as UsageContent
    from chainform.types import UsageDetails as UsageDetails
    from chainform.types import WebSearch as WebSearch

    Response = ChainResponse
    AsyncResponse = AsyncChainResponse

__all__ = sorted([*_WHERE, *_ALIASES, *_SUBMODULES])
