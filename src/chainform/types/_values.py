"""Extensible string values: well-known constants that still accept what a provider invents."""

from __future__ import annotations

import inspect
from typing import ClassVar


class _OpenStr(str):
    """A str subclass whose known values are class constants; unknown values pass through.

    A subclass declares each constant once, `NAME: ClassVar[Cls]`; its value is "name".
    """

    __slots__ = ()

    def __init_subclass__(cls) -> None:
        for name in inspect.get_annotations(cls):
            setattr(cls, name, cls(name.lower()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str.__repr__(self)})"


class Role(_OpenStr):
    """Who authored a message. `Role("developer")` is as valid as `Role.USER`."""

    SYSTEM: ClassVar[Role]
    USER: ClassVar[Role]
    ASSISTANT: ClassVar[Role]
    TOOL: ClassVar[Role]


class FinishReason(_OpenStr):
    """Why the model stopped. Provider-specific reasons are kept verbatim."""

    STOP: ClassVar[FinishReason]
    LENGTH: ClassVar[FinishReason]
    TOOL_CALLS: ClassVar[FinishReason]
    CONTENT_FILTER: ClassVar[FinishReason]
