"""One model call of a chain: streamed into the event log, validated in the middleware, logged.

A call is logged the moment it returns (or raises), before its tools run: the engine builds its
CallRecord (`log_record`) and the chain's `ChainLogger` commits it before the chain goes on (at
once when the log is free; on a worker thread, the event loop going on meanwhile, when another
writer holds it); each tool result is added when it returns (`log_results`). A chain killed
midway keeps every call it paid for and every tool result it got, and a chain returns once all
of them are in the log's tables. A resumed chain (`journal`, chain/_journal.py) is served the
calls its log holds instead of sending them again. A failed write only warns: the log must never cost the user their answer. The conversation's
name (a map row's) and the link to a parent chain come from the run's state (chain/_state.py) and
ride on the chain's own rows.

Kept apart from the turn loop (chain/_engine.py) so the loop reads top to bottom; this is the
plumbing every turn shares, whatever the strategy. The `Caller` is a collaborator of the engine:
what it learns (the calls, their records) it writes into the RunState it is handed.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chainform import _trace
from chainform.chain._events import CallTap, ChainEvent, EventLog
from chainform.chain._journal import Journal, failure_of, raise_failure, response_of
from chainform.chain._state import ModelCall, RunState
from chainform.clients.base import BaseChatClient, CallContext, validate
from chainform.errors import ProviderError, StructuredOutputGenerationError
from chainform.output.strategies import NOT_FINAL, Strategy
from chainform.store import (
    CallRecord,
    ChainRow,
    ChainStatus,
    LogBusy,
    ToolCallRecord,
    ToolResultRecord,
    schema_id,
)
from chainform.store._attachments import Attached, Blobs, url_key
from chainform.store._serialize import to_jsonable
from chainform.types import (
    ChatOptions,
    ChatResponse,
    FunctionResultContent,
    Message,
    ServerToolContent,
    UsageDetails,
)

if TYPE_CHECKING:
    from chainform.chain._spec import ChainSpec
    from chainform.store import Store


class Caller:
    """Makes the model calls of one chain: each kept in `state.calls` in order, and committed to
    the log (`logger`) as it returns; a resumed chain's logged calls (`journal`) are replayed."""

    def __init__(
        self, events: EventLog, *, stream: bool, logger: ChainLogger | None, journal: Journal | None = None
    ) -> None:
        self.events = events
        self.stream = stream
        self.logger = logger
        self.journal = journal  # a resumed chain's logged calls, replayed instead of sent
        self._unlogged: list[tuple[ModelCall, int, float]] = []  # (call, its place, when it started)

    async def call(
        self, state: RunState, messages: list[Message], options: ChatOptions, strategy: Strategy, purpose: str
    ) -> tuple[ChatResponse, Any, StructuredOutputGenerationError | None]:
        """One model call on the model answering now (`state.candidate`); returns (response, value
        or NOT_FINAL, validation error). The call is in the log when this returns or raises."""
        state.meter.check(state.calls)  # a capped chain ends between calls
        refusals = state.refusals
        stream = self.stream and self.events.streamed
        stream = stream and not (options.tools and "streamed_tools" in refusals)
        try:
            return await self._call(state, messages, options, strategy, purpose, stream)
        except ProviderError as exc:
            if not (stream and options.tools and exc.kind == "streaming_rejected"):
                raise
            refusals.remember("streamed_tools", exc.provider_message[:200])
            return await self._call(state, messages, options, strategy, purpose, False)
        finally:
            await self.log_finished(state)  # committed before its tools run

    async def _call(
        self,
        state: RunState,
        messages: list[Message],
        options: ChatOptions,
        strategy: Strategy,
        purpose: str,
        stream: bool,
    ) -> tuple[ChatResponse, Any, StructuredOutputGenerationError | None]:
        tap = CallTap(self.events, purpose, strategy.output)
        ctx = CallContext(
            list(messages),
            options,
            stream=stream,
            validator=strategy.check if strategy.validates else None,
            value=NOT_FINAL,
            on_update=tap.on_update if stream else None,
        )
        client = state.candidate.client
        started = time.perf_counter()
        error: StructuredOutputGenerationError | None = None
        logged = self.journal.call(len(state.calls), purpose) if self.journal is not None else None
        try:
            if logged is not None:  # a resumed chain: the log's answer, not a new request
                if logged.failure is not None or (logged.error and not logged.text and not logged.tool_calls):
                    raise_failure(logged)
                response = ctx.response = response_of(logged)
                validate(ctx, response)
            elif isinstance(client, BaseChatClient):
                response = await client.call(ctx)
            else:  # a bare ChatClient: no middleware, the same validation
                response = ctx.response = await client.get_response(ctx.messages, options)
                validate(ctx, response)
            value = ctx.value if strategy.validates else strategy.check(response)
            if value is NOT_FINAL and ctx.failure is not None:  # a middleware accepted a failed output
                value = ctx.failure.value
        except StructuredOutputGenerationError as exc:
            error, value = exc, NOT_FINAL
            response = ctx.response or ChatResponse([Message.assistant(exc.raw_text)])
        except Exception as exc:  # a broken stream's partial response keeps the text that arrived
            partial = getattr(exc, "partial_response", None)
            kind = type(exc).__name__
            self._record(
                state, purpose, ctx.messages, options, partial, started, f"{kind}: {exc}", failed=kind,
                failure=failure_of(exc), logged=logged,
            )  # fmt: skip
            # the call's streamed text (if any) is not the answer: readers close it (a fallback
            # model's answer starts afresh, its JSON never glued to this one's)
            failed = f"{state.model_name} failed: {kind}"
            self.events.append(ChainEvent("call_end", text=failed, value=False, purpose=purpose))
            raise
        if not stream or logged is not None:
            tap.whole(response)
        count_hosted_calls(response)
        parsed = None if value is NOT_FINAL or not strategy.validates else plain_data(value)
        text = str(error) if error else None
        self._record(state, purpose, ctx.messages, options, response, started, text, parsed, logged=logged)
        final = value is not NOT_FINAL and strategy.answers
        self.events.append(ChainEvent("call_end", value=final, purpose=purpose))
        return response, value, error

    def _record(
        self,
        state: RunState,
        purpose: str,
        messages: list[Message],
        options: ChatOptions,
        response: ChatResponse | None,
        started: float,
        error: str | None,
        parsed: Any = None,
        failed: str | None = None,
        failure: dict[str, Any] | None = None,
        logged: CallRecord | None = None,
    ) -> None:
        """Keep the call (`state.calls`) and queue it for the log; a replayed call (`logged`) is
        kept with its logged id, usage and cost, and is not logged again."""
        call = ModelCall(
            purpose,
            messages,
            options,
            response,
            (time.perf_counter() - started) * 1000,
            error,
            state.choice.name if state.choice else None,
            parsed=parsed,
            format_context=state.format_context if purpose in ("format", "retry") else None,
            model=state.model_name,
            failed=failed,
            failure=failure,
        )
        if logged is not None:
            call.response_id, call.model, call.duration_ms = (
                logged.id,
                logged.model,
                logged.duration_ms or 0.0,
            )
            call.priced = logged.usage
            state.calls.append(call)
            return
        call.priced = state.meter.priced(response, call.model)
        if _trace.hooks is not None:
            _trace.hooks.call(call)
        started_at = time.time() - call.duration_ms / 1000
        self._unlogged.append((call, len(state.calls), started_at))
        state.calls.append(call)

    async def log_finished(self, state: RunState) -> None:
        """Commit the calls not logged yet: as each call returns, and when the chain ends. Each
        call's `response_id` becomes its record's id."""
        unlogged, self._unlogged = self._unlogged, []
        if self.logger is None:
            return
        for call, seq, started_at in unlogged:
            record = log_record(self.logger, state, call, seq, started_at)
            call.response_id = record.id
            await self.logger.log(record)


HOSTED_CALLS = frozenset(
    {"server_tool_use", "web_search_call", "file_search_call", "code_interpreter_call", "executable_code"}
)
"""The ServerToolContent kinds that are a hosted tool's call (the others are results)."""


def count_hosted_calls(response: ChatResponse) -> None:
    """Count the hosted tools' calls of a response in its usage (`hosted_tool_calls`), so that
    they are summed per chain and model like tokens and kept in the log's `additional_counts`."""
    calls = sum(
        1
        for message in response.messages
        for content in message.contents
        if isinstance(content, ServerToolContent) and content.kind in HOSTED_CALLS
    )
    if calls:
        counted = UsageDetails(additional_counts={"hosted_tool_calls": calls})
        response.usage_details = counted + response.usage_details


def log_record(log: ChainLogger, state: RunState, call: ModelCall, seq: int, created_at: float) -> CallRecord:
    """The log's record of `call`, the `seq`-th of the chain `log` logs: named as the state names
    its conversation, and (a subagent's chain) linked to the chain and tool call that started it."""
    lineage = state.lineage
    link = lineage if lineage.agent else None
    calls = call.response.function_calls if call.response else []
    return CallRecord(
        conversation_id=log.conversation_id,
        conversation_name=state.conversation_name,
        chain_id=log.chain_id,
        seq=seq,
        purpose=call.purpose,
        strategy=call.strategy,
        model=call.model or log.model,
        prompt=log.prompt,
        system=log.system,
        messages=call.messages,
        options=log.options(call.options),
        schema=log.schema,
        schema_id=log.schema_id,
        text=call.text,
        parsed=call.parsed,
        usage=call.usage,
        duration_ms=call.duration_ms,
        created_at=created_at,
        error=call.error,
        finish_reason=call.finish_reason,
        ended_by=call.ended_by,
        tool_calls=[
            ToolCallRecord(c.call_id, c.name, c.arguments if c.arguments is not None else c.raw_arguments)
            for c in calls
        ],
        tool_results=[
            ToolResultRecord(r.call_id, r.name or "", r.result_text(), r.error) for r in call.tool_results
        ],
        format_context=call.format_context,
        format_context_policy=log.policy if call.format_context else None,
        failure=call.failure,
        parent_conversation_id=link.parent_conversation_id if link else None,
        parent_chain_id=link.parent_chain_id if link else None,
        parent_tool_call_id=link.parent_call_id if link else None,
        agent_name=link.agent if link else None,
    )


def plain_data(value: Any) -> Any:
    """JSON-able form of a validated value (pydantic instances dumped in JSON mode)."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    try:
        from pydantic import TypeAdapter

        return TypeAdapter(type(value)).dump_python(value, mode="json")
    except Exception:  # plain JSON values need no conversion
        return value


class ChainLogger:
    """Where one chain's calls are logged, and the fields every one of its records shares."""

    def __init__(
        self,
        store: Store,
        *,
        conversation_id: str,
        chain_id: str,
        model: str,
        prompt: str | None,
        system: str | None,
        schema: dict[str, Any] | None,
        format_context_policy: str | None,
        attachments: Sequence[tuple[Any, Any]] = (),
        attachments_store: str = "copy",
    ) -> None:
        self.store = store
        self.conversation_id = conversation_id
        self.chain_id = chain_id
        self.model = model
        self.prompt = prompt
        self.system = system
        self.schema = schema
        self.schema_id = schema_id(schema) if schema is not None else None
        self.policy = format_context_policy
        self.attached = [_attached(a, c, attachments_store) for a, c in attachments]

    def options(self, options: ChatOptions) -> dict[str, Any]:
        """The options of a call as logged: tool names instead of tools; a response format names the
        chain's schema by its id (stored once) instead of repeating it in every row. Secrets are
        redacted when the row is written (`_rows`)."""
        out: dict[str, Any] = {}
        for key, value in options.set_fields().items():
            if key == "cache_key":  # the conversation's (or map run's) id again
                continue
            if key == "tools":
                out[key] = [t.name for t in value]
            elif key == "response_format":
                fmt = {name: getattr(value, name) for name in ("kind", "name", "description", "strict")}
                if value.schema is not None and value.schema == self.schema:
                    fmt["schema_id"] = self.schema_id
                elif value.schema is not None:
                    fmt["schema"] = to_jsonable(value.schema)
                out[key] = fmt
            elif key == "tool_mode":
                out[key] = {"mode": value.mode, "function_name": value.function_name}
            else:
                out[key] = to_jsonable(value)
        return out

    async def begin(self, spec: ChainSpec, name: str | None = None) -> None:
        """Record the chain in the `chains` table (status "running") before its first call, its
        messages' files by sha256 in the attachments table (stored as the chain's files are); with
        `name`, its conversation too, so named (a map row's chain is found by it before its first call)."""
        blobs: Blobs = {}
        row = ChainRow(self.chain_id, self.conversation_id, self.model, spec.to_json(blobs))
        write = functools.partial(self.store.begin_chain, name=name)
        await self._write("the chain", write, row, self.attached, blobs)

    async def end(self, status: ChainStatus, *, error: str | None, pending: list[dict[str, Any]]) -> None:
        """Record how the chain ended (done, failed, interrupted, waiting with its pending calls)."""
        write = functools.partial(self.store.set_chain_status, error=error, pending=pending)
        await self._write("the chain's status", write, self.chain_id, status)

    async def mark_ended(self, response_id: str, tool: str, parsed: Any) -> None:
        """Record on a logged call that its tool's result ended the chain (and the value)."""
        await self._write("the chain's end", self.store.mark_ended, response_id, tool, parsed)

    async def log(self, record: CallRecord) -> None:
        """Commit `record` (with the chain's attached files); return once it is committed."""
        await self._write("a model call", self.store.write_calls, [record], self.attached)

    async def log_results(self, response_id: str | None, results: Sequence[FunctionResultContent]) -> None:
        """Add tool results to their logged call, as they return."""
        if response_id is None:  # the call itself could not be logged
            return
        rows = [(r.call_id, r.name or "", r.result_text(), r.error) for r in results]
        await self._write("a tool result", self.store.write_tool_results, response_id, rows)

    async def _write(self, what: str, write: Any, *args: Any) -> None:
        """Run a store write at once on the event loop's thread when the log is free, else on a
        worker thread that waits for the lock while the loop goes on. A write that fails is dropped
        and counted: the store tells how many writes it lost, and why, in one warning (on close, or
        at exit); the log must never cost the user their answer."""
        try:
            try:
                write(*args, wait=False)
            except LogBusy:
                await asyncio.to_thread(functools.partial(write, *args))
        except Exception as exc:  # never lose the chain's result because the log failed
            self.store.unlogged.add(exc, calls=1 if what == "a model call" else 0)


def _attached(attachment: Any, conversion: Any, store: str) -> Attached:
    """How the log keeps one attachment (chainform Attachment, documents Conversion):
    `store="ref"` keeps a file's path or URL, not its bytes."""
    if attachment.is_remote:  # a URL the provider fetched: its bytes never came here
        key, data, ref = url_key(attachment.url), None, attachment.url
    elif store == "ref" and attachment.path is not None:
        key, data, ref = attachment.sha256(), None, str(Path(attachment.path).resolve())
    else:
        key, data, ref = attachment.sha256(), attachment.read(), None
    how = (conversion.name, conversion.method, conversion.detail)
    return Attached(key, conversion.media_type, attachment.size(), *how, data, ref)
