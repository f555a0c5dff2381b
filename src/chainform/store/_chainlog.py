"""The engine's call logger: each model call becomes a CallRecord, a chain's records one write.

The engine calls the logger synchronously as calls finish; the logger only builds the record.
`committed()`, awaited before the chain returns or raises, writes the chain's records as ONE
transaction (a chain of n calls costs one commit, not n: the commit is most of a write's cost)
and waits for it without blocking the event loop, on the log's writer thread; a sync chain that
runs alone on chainform's private loop commits in place (no other chain can wait on it, and two
thread switches are saved). A chain's rows are in the log when its result is. Records not yet
written when the process exits (Ctrl-C during a chain) are written by an exit hook. Failures only
warn: the log must never cost the user their answer.

A caller that runs many chains (model.map) names each chain's conversation through `naming`: the
name rides on the chain's own records, so it is committed in the same transaction as the calls,
with no write (and no wait) of its own.
"""

from __future__ import annotations

import asyncio
import atexit
import warnings
import weakref
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

from chainform._lineage import current_chain
from chainform.store._records import CallRecord, ToolCallRecord, ToolResultRecord
from chainform.store._rows import known_schema, schema_id
from chainform.store._serialize import to_jsonable

if TYPE_CHECKING:
    from chainform.store._store import Store
    from chainform.types import ChatOptions, ChatResponse, FunctionResultContent, Message


class LoggableCall(Protocol):
    """What the logger reads from a chain's call (chain/_records.ModelCall has these fields); the
    store describes it here rather than import the chain layer above it."""

    purpose: str
    strategy: str | None
    messages: list[Message]
    options: ChatOptions
    response: ChatResponse | None
    parsed: Any
    duration_ms: float
    error: str | None
    tool_results: list[FunctionResultContent]
    format_context: str | None
    response_id: str | None  # set to the record's id once logged

    @property
    def text(self) -> str: ...


naming: ContextVar[tuple[str, str] | None] = ContextVar("chainform_conversation_name", default=None)
"""(conversation id, name) for the chain started in this context; a subagent's conversation
(another id) is not named by its parent's entry."""


class ChainLogger:
    """Turns one chain's ModelCalls into CallRecords and queues them on the store's writer."""

    def __init__(
        self,
        store: Store,
        model: str,
        *,
        prompt: str | None,
        system: str | None,
        schema: dict[str, Any] | None,
        format_context_policy: str | None,
        schema_content: tuple[str, str] | None = None,
    ) -> None:
        self.store = store
        self.model = model
        self.prompt = prompt
        self.system = system
        self.schema = schema
        self.policy = format_context_policy
        if schema is None:
            self.schema_id: str | None = None
        elif schema_content is not None:  # hashed once for its Python type (OutputSpec.content)
            self.schema_id = known_schema(*schema_content)
        else:
            self.schema_id = schema_id(schema)
        self._records: list[CallRecord] = []

    def record(self, call: LoggableCall, run: Any) -> CallRecord:
        """The one record of `call` (what the log stores and `chainform logs --json` prints)."""
        response = call.response
        # the engine logs from inside the chain's context: its Lineage says whether it is a subagent
        lineage = current_chain.get()
        link = lineage if lineage is not None and lineage.chain_id == run.chain_id and lineage.agent else None
        named = naming.get()
        return CallRecord(
            conversation_id=run.conversation_id,
            conversation_name=named[1] if named is not None and named[0] == run.conversation_id else None,
            chain_id=run.chain_id,
            seq=run.calls.index(call),
            purpose=call.purpose,
            strategy=call.strategy,
            model=self.model,
            prompt=self.prompt,
            system=self.system,
            messages=call.messages,
            options=options_summary(call.options, self.schema, self.schema_id),
            schema=self.schema,
            schema_id=self.schema_id,
            text=call.text,
            parsed=call.parsed,
            usage=response.usage_details if response else None,
            duration_ms=call.duration_ms,
            created_at=_now() - call.duration_ms / 1000,
            error=call.error,
            tool_calls=[
                ToolCallRecord(c.call_id, c.name, c.arguments if c.arguments is not None else c.raw_arguments)
                for c in (response.function_calls if response else [])
            ],
            tool_results=[
                ToolResultRecord(r.call_id, r.name or "", r.result_text(), r.error) for r in call.tool_results
            ],
            format_context=call.format_context,
            format_context_policy=self.policy if call.format_context else None,
            parent_conversation_id=link.parent_conversation_id if link else None,
            parent_chain_id=link.parent_chain_id if link else None,
            parent_tool_call_id=link.parent_call_id if link else None,
            agent_name=link.agent if link else None,
        )

    def __call__(self, call: LoggableCall, run: Any) -> None:
        try:
            record = self.record(call, run)
            call.response_id = record.id
            self._records.append(record)
            _unsaved.add(self)
        except Exception as exc:  # never lose the chain's result because the log failed
            warnings.warn(f"chainform: could not log a model call: {exc}", stacklevel=2)

    def _take(self) -> list[CallRecord]:
        records, self._records = self._records, []
        _unsaved.discard(self)
        return records

    async def committed(self, in_place: bool = False) -> None:
        """Write this chain's records in one transaction; return once it is committed, without
        blocking the event loop: the writer thread commits while the loop waits. `in_place`
        (the sync API's private loop, where this chain runs alone) commits on this thread: no
        other chain can wait on it, and two thread switches per chain are saved. If the write
        fails, each record is tried alone: one bad record loses no other."""
        records = self._take()
        if not records:
            return
        write = self._write_in_place if in_place else self._write_by_writer
        try:
            await write(records)
            return
        except Exception as exc:
            if len(records) == 1:
                _warn(exc)
                return
        for record in records:
            try:
                await write([record])
            except Exception as exc:
                _warn(exc)

    async def _write_by_writer(self, records: list[CallRecord]) -> None:
        await asyncio.wrap_future(self.store.submit_all(records))

    async def _write_in_place(self, records: list[CallRecord]) -> None:
        self.store.write_now(records)


_unsaved: weakref.WeakSet[ChainLogger] = weakref.WeakSet()


@atexit.register
def _save_unsaved() -> None:
    """At exit (Ctrl-C while a chain ran): write the calls that finished but were not committed."""
    for logger in list(_unsaved):
        records = logger._take()
        try:
            logger.store.write_now(records)
        except Exception as exc:
            _warn(exc)


def _warn(exc: Exception) -> None:
    warnings.warn(f"chainform: could not log a model call: {exc}", stacklevel=3)


def options_summary(
    options: ChatOptions, schema: dict[str, Any] | None = None, sid: str | None = None
) -> dict[str, Any]:
    """The options of a call as logged: tool names instead of tools; a response format names the
    chain's schema (`schema`, stored once under `sid`) by its id instead of repeating it in every
    row. Secrets are redacted when the row is written (`_rows`)."""
    out: dict[str, Any] = {}
    for key, value in options.set_fields().items():
        if key == "tools":
            out[key] = [t.name for t in value]
        elif key == "response_format":
            fmt = {
                "kind": value.kind,
                "name": value.name,
                "description": value.description,
                "strict": value.strict,
            }
            if value.schema is not None and value.schema is schema:
                fmt["schema_id"] = sid
            elif value.schema is not None:
                fmt["schema"] = to_jsonable(value.schema)
            out[key] = fmt
        elif key == "tool_mode":
            out[key] = {"mode": value.mode, "function_name": value.function_name}
        else:
            out[key] = to_jsonable(value)
    return out


def _now() -> float:
    import time

    return time.time()
