"""What one row of a map run ends as: a `MapResult` with its value, or a typed `RowError`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chainform._map._inputs import MapInputError
from chainform.chain._approval import ChainWaitingError
from chainform.chain._journal import ResumeError
from chainform.chain._records import ChainUsage
from chainform.errors import (
    AttachmentError,
    ChainError,
    FormattingError,
    GuardrailError,
    ProviderError,
    StructuredOutputError,
    ToolError,
    TruncatedOutputError,
)

_PHASES: tuple[tuple[type[BaseException], str], ...] = (
    (ChainWaitingError, "waiting"),  # not a failure: `chainform resume` goes on with the row's chain
    (MapInputError, "input"),
    (AttachmentError, "input"),  # the row's file: missing, empty, too large, of a type nothing reads
    (ResumeError, "resume"),  # a resumed run's row whose logged chain cannot go on (a tool missing, ...)
    (ProviderError, "provider"),
    (TruncatedOutputError, "truncated"),
    (StructuredOutputError, "output"),
    (FormattingError, "format"),
    (ToolError, "tool"),
    (GuardrailError, "guardrail"),
    (ChainError, "chain"),
)


@dataclass
class RowError:
    """Why a row has no value: the `phase` (input, resume, provider, truncated, output, format, tool,
    guardrail, chain, internal; or "waiting": its chain waits for approval, the message names the
    chain and how to resume it), the error's type name and message, and the exception itself."""

    phase: str
    type: str
    message: str
    exception: BaseException | None = field(default=None, repr=False, compare=False)

    @classmethod
    def of(cls, exc: BaseException) -> RowError:
        phase = next((name for kind, name in _PHASES if isinstance(exc, kind)), "internal")
        return cls(phase, type(exc).__name__, " ".join(str(exc).split()) or type(exc).__name__, exc)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"phase": self.phase, "type": self.type, "message": self.message}
        status = getattr(self.exception, "status", None)
        if status is not None:
            out["status"] = status
        return out


@dataclass
class MapResult:
    """One finished row: `value` (with a schema) and `text`, or `error`; never both."""

    index: int
    key: str
    input: str | dict[str, Any]
    value: Any = None
    data: Any = None
    text: str | None = None
    error: RowError | None = None
    usage: ChainUsage = field(default_factory=lambda: ChainUsage.of([]))
    conversation_id: str | None = None
    model: str | None = None  # the model that made the row's last call (a fallback's, when one answered)
    retried: int = 0  # calls of the row sent again after a transient failure (429, 5xx, timeout)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def status(self) -> str:
        """ "done", "waiting" (its chain waits for approval: `chainform resume`) or "failed"."""
        if self.error is None:
            return "done"
        return "waiting" if self.error.phase == "waiting" else "failed"


__all__ = ["MapResult", "RowError"]
