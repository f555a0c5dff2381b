"""Extensible string values: well-known constants that still accept what a provider invents."""

from __future__ import annotations

from typing import ClassVar


class _OpenStr(str):
    """A str subclass whose known values are class constants; unknown values pass through."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str.__repr__(self)})"


class Role(_OpenStr):
    """Who authored a message. `Role("developer")` is as valid as `Role.USER`."""

    SYSTEM: ClassVar[Role]
    USER: ClassVar[Role]
    ASSISTANT: ClassVar[Role]
    TOOL: ClassVar[Role]


Role.SYSTEM = Role("system")
Role.USER = Role("user")
Role.ASSISTANT = Role("assistant")
Role.TOOL = Role("tool")


class FinishReason(_OpenStr):
    """Why the model stopped. Provider-specific reasons are kept verbatim."""

    STOP: ClassVar[FinishReason]
    LENGTH: ClassVar[FinishReason]
    TOOL_CALLS: ClassVar[FinishReason]
    CONTENT_FILTER: ClassVar[FinishReason]


FinishReason.STOP = FinishReason("stop")
FinishReason.LENGTH = FinishReason("length")
FinishReason.TOOL_CALLS = FinishReason("tool_calls")
FinishReason.CONTENT_FILTER = FinishReason("content_filter")
