"""A chain's log read back as a journal: what a resumed chain replays instead of doing again.

A resumed chain runs the same engine over the same spec. Each model call it would make is looked
up here by its place in the chain (`seq`): a logged call is served from the log, never sent again
(a call that raised raises the same error again, so a fallback goes the same way); each tool call
of a logged call whose result is logged gets that result, the tool is not run again. The first
call or tool result the log does not hold is where the chain goes on for real. A journal that
does not match the engine's way through it (a log edited by hand, a spec changed) stops the
resume with ResumeError before anything is sent.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chainform.errors import ChainformError, ProviderError
from chainform.types import (
    ChatResponse,
    Content,
    FinishReason,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    Role,
    TextContent,
)

if TYPE_CHECKING:
    from chainform.store import CallRecord


class ResumeError(ChainformError):
    """A chain cannot be resumed: unknown id, running in another process, a tool missing, approvals
    naming no pending call, or a log that does not match the chain. Nothing was sent or changed."""


class ReplayedFailure(ChainformError):
    """A logged call raised something other than a provider error; replayed, it raises this."""


@dataclass
class Journal:
    """The logged calls of one chain (by `seq`), and the tool results logged for each."""

    records: dict[int, CallRecord] = field(default_factory=dict)

    @classmethod
    def of(cls, records: Sequence[CallRecord]) -> Journal:
        return cls({r.seq: r for r in records})

    def __len__(self) -> int:
        return len(self.records)

    def call(self, seq: int, purpose: str) -> CallRecord | None:
        """The logged call at `seq`, checked against the purpose the engine makes it for."""
        record = self.records.get(seq)
        if record is not None and record.purpose != purpose:
            raise ResumeError(
                f"the log does not match the chain: call {seq} was a {record.purpose!r} call, the resumed "
                f"chain makes a {purpose!r} call there (was the log or the spec edited?)"
            )
        return record

    def ended_by(self, seq: int) -> str | None:
        """The tool whose result ended the chain at the call at `seq` (`stop_at_tools`, `cf.Final`)."""
        record = self.records.get(seq)
        return record.ended_by if record is not None else None

    def result(self, seq: int, call_id: str, *, decode: bool = False) -> FunctionResultContent | None:
        """The logged result of tool call `call_id` made by the call at `seq`, if one was logged
        (`decode`: its JSON text as the value it was, for a result that became the chain's value)."""
        record = self.records.get(seq)
        for logged in record.tool_results if record is not None else ():
            if logged.call_id == call_id:
                if logged.error is not None:
                    return FunctionResultContent(call_id, error=logged.error, name=logged.name)
                value: Any = logged.output
                if decode:
                    with contextlib.suppress(ValueError):
                        value = json.loads(logged.output)
                return FunctionResultContent(call_id, result=value, name=logged.name)
        return None


def response_of(record: CallRecord) -> ChatResponse:
    """The response a logged call gave, as the engine reads it (text and tool calls)."""
    contents: list[Content] = []
    if record.text:
        contents.append(TextContent(record.text))
    for call in record.tool_calls:
        arguments = call.arguments if isinstance(call.arguments, dict) else None
        raw = call.arguments if isinstance(call.arguments, str) else None
        contents.append(FunctionCallContent(call.call_id, call.name, arguments, raw))
    finish = FinishReason.TOOL_CALLS if record.tool_calls else FinishReason.STOP
    return ChatResponse([Message(Role.ASSISTANT, contents)], finish_reason=finish, usage_details=record.usage)


def failure_of(exc: BaseException) -> dict[str, Any]:
    """What the log keeps of an error a call raised, so that a replay raises it again."""
    out: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    if isinstance(exc, ProviderError):
        out.update(kind=exc.kind, status=exc.status, provider=exc.provider, message=exc.provider_message)
    return out


def raise_failure(record: CallRecord) -> None:
    """Raise again what a logged call raised (a ProviderError with its kind and status)."""
    failure = record.failure or {}
    if failure.get("kind") is not None:
        raise ProviderError(
            str(failure.get("message") or "replayed failure"),
            status=failure.get("status"),
            provider=failure.get("provider"),
            kind=failure["kind"],
        )
    raise ReplayedFailure(f"{failure.get('type', 'Error')}: {failure.get('message', record.error or '')}")
