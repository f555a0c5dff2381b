"""Provider adapters. Wire formats live only in this package."""

from chainform.clients.base import (
    BaseChatClient,
    CallContext,
    CallNext,
    ChatClient,
    InputGuardrail,
    Middleware,
    OutputGuardrail,
)

__all__ = [
    "BaseChatClient",
    "CallContext",
    "CallNext",
    "ChatClient",
    "InputGuardrail",
    "Middleware",
    "OutputGuardrail",
]
