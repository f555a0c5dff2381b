"""The engine's call logger: a chain's model calls become its rows, and those rows one write.

The engine hands each call over as it finishes; the logger only notes it (an id, its place and
time, its lineage). `committed()`, awaited before the chain returns or raises, makes the chain's
rows straight from the engine's objects (`_rows.rows_of`, each message encoded once: no
CallRecord is built and validated on the way, which once cost more than the write itself) and
writes them as ONE transaction (a chain of n calls costs one commit, not n), waiting for it
without blocking the event loop, on the log's writer thread; a sync chain that runs alone on
chainform's private loop commits in place (no other chain can wait on it, and two thread switches
are saved). A chain's rows are in the log when its result is. Calls not yet written when the
process exits (Ctrl-C during a chain) are written by an exit hook. Failures only warn: the log
must never cost the user their answer.

A caller that runs many chains (model.map) names each chain's conversation through `naming`: the
name rides on the chain's own rows, so it is committed in the same transaction as the calls,
with no write (and no wait) of its own.
"""

from __future__ import annotations

import asyncio
import atexit
import time
import warnings
from collections.abc import Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chainform._lineage import Lineage, current_chain
from chainform.store import _compact
from chainform.store._attachments import Attached, url_key
from chainform.store._compact import LoggableCall, Noted
from chainform.store._records import ToolCallRecord, ToolResultRecord, new_id
from chainform.store._rows import Rows, known_schema, rows_of, schema_id
from chainform.store._serialize import dumps, looks_secret, redact, to_jsonable

if TYPE_CHECKING:
    from chainform.store._store import Store
    from chainform.types import ChatOptions, UsageDetails


naming: ContextVar[tuple[str, str] | None] = ContextVar("chainform_conversation_name", default=None)
"""(conversation id, name) for the chain started in this context; a subagent's conversation
(another id) is not named by its parent's entry."""


class ChainLogger:
    """Notes the calls of one chain as they finish; writes their rows when the chain ends."""

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
        attachments: Sequence[tuple[Any, Any]] = (),
        attachments_store: str = "copy",
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
        self._calls: list[tuple[LoggableCall, Any, _Context, float]] = []  # (call, run, context, when)
        self._run: Any = None
        self._context: _Context = (None, None)
        self._attached: list[Attached] = []
        self.attach(attachments, store=attachments_store)

    def attach(self, attachments: Sequence[tuple[Any, Any]], *, store: str = "copy") -> None:
        """The chain's attachments (chainform Attachment, documents Conversion pairs): logged once
        each, linked to every call. `store="ref"` keeps a file's path or URL, not its bytes."""
        for attachment, conversion in attachments:
            if attachment.is_remote:  # a URL the provider fetched: its bytes never came here
                key, data, ref = url_key(attachment.url), None, attachment.url
            elif store == "ref" and attachment.path is not None:
                key, data, ref = attachment.sha256(), None, str(Path(attachment.path).resolve())
            else:
                key, data, ref = attachment.sha256(), attachment.read(), None
            size, how = attachment.size(), (conversion.name, conversion.method, conversion.detail)
            self._attached.append(Attached(key, conversion.media_type, size, *how, data, ref))

    def __call__(self, call: LoggableCall, run: Any) -> None:
        """Note `call` (it has its tool results) and the time; its id and place are given when the
        chain's calls are written (`_take`). What only this context knows, the lineage and the
        conversation name, is read once per run: a chain's calls share them."""
        try:
            if run is not self._run:
                self._run, self._context = run, _context_of(run)
            if not self._calls:
                _unsaved.add(self)
            self._calls.append((call, run, self._context, time.time()))
        except Exception as exc:  # never lose the chain's result because the log failed
            warnings.warn(f"chainform: could not log a model call: {exc}", stacklevel=2)

    def options_of(self, options: ChatOptions) -> tuple[dict[str, Any], str]:
        """The logged summary of a call's options and its JSON, redacted (`_rows`). A chain's
        calls mostly carry the same settings (the same tools, format and key): those are
        summarized and encoded once. Only a mapping (extras, a schema that is not the chain's)
        can hold a secret-looking key: a summary without one is encoded as it is."""
        known = self._summarized(options)
        return known[0], known[2]

    def logged_options(self, options: ChatOptions) -> tuple[dict[str, Any], str]:
        """The summary as the log holds it (redacted) and its JSON."""
        known = self._summarized(options)
        return known[1], known[2]

    def _summarized(self, options: ChatOptions) -> _Summarized:
        """(summary, summary redacted, its JSON), worked out once for equal settings: the last
        ones are kept for the next call and the next chain (`_last`)."""
        fields = options.set_fields()
        fields.pop("cache_key", None)  # the conversation's (or map run's) id: not in the summary
        fmt = fields.get("response_format")
        own = fmt is not None and fmt.schema is self.schema  # named by the chain's schema id
        global _last
        last = _last
        if last is not None:
            (known_fields, sid, known_own), known = last
            try:  # the same schema (its content address) and the same settings
                if sid == self.schema_id and known_own == own and known_fields == fields:
                    return known
            except Exception:  # an extra whose == cannot answer (an array): summarize it afresh
                pass
        summary = _summary(fields, self.schema, self.schema_id)
        plain = "schema" not in summary.get("response_format", ()) and all(
            (k in _FLAT_OPTIONS or not isinstance(v, dict | list | tuple)) and not looks_secret(k)
            for k, v in summary.items()
        )
        safe = summary if plain else redact(summary)
        known = (summary, safe, dumps(safe))
        _last = ((fields, self.schema_id, own), known)
        return known

    def _take(self) -> list[Noted]:
        """The calls noted and not yet written, each given its id (`call.response_id`) and place."""
        pending, self._calls, self._run = self._calls, [], None  # the run holds this logger
        _unsaved.discard(self)
        noted = []
        for call, run, (link, name), at in pending:
            try:
                calls = run.calls
                seq = len(calls) - 1
                while seq > 0 and calls[seq] is not call:  # handed over right after the next one
                    seq -= 1
                call.response_id = rid = new_id()
                created_at = at - call.duration_ms / 1000
                noted.append(Noted(call, rid, seq, created_at, link, name, run.conversation_id, run.chain_id))
            except Exception as exc:  # never lose the chain's result because the log failed
                _warn(exc)
        return noted

    def _rows(self, noted: list[Noted]) -> Rows:
        return rows_of([_Call(self, n) for n in noted], self._attached)

    async def committed(self, in_place: bool = False) -> None:
        """Write this chain's calls in one transaction; return once it is committed, without
        blocking the event loop: the writer thread commits while the loop waits. `in_place`
        (the sync API's private loop, where this chain runs alone) commits on this thread: no
        other chain can wait on it, and two thread switches per chain are saved. If the write
        fails, each call is tried alone: one bad call loses no other."""
        noted = self._take()
        if not noted:
            return
        if in_place and not self._attached and self._staged(noted):
            return
        write = self._write_in_place if in_place else self._write_by_writer
        try:
            await write(self._rows(noted))
            return
        except Exception as exc:
            if len(noted) == 1:
                _warn(exc)
                return
        for one in noted:
            try:
                await write(self._rows([one]))
            except Exception as exc:
                _warn(exc)

    def _staged(self, noted: list[Noted]) -> bool:
        """Whether `noted` went to the spool as one compact record (store/_compact.py); False
        for what only the rows can hold, or where the spool could not take it."""
        try:
            data = _compact.encode(self, noted)
            return data is not None and self.store.stage_record(_compact.FORMAT, data)
        except Exception:  # the rows path writes it, or says why it cannot
            return False

    async def _write_by_writer(self, rows: Rows) -> None:
        await asyncio.wrap_future(self.store.submit_rows(rows))

    async def _write_in_place(self, rows: Rows) -> None:
        self.store.stage_now(rows)


class _Call:
    """A noted call read as the log's rows read a CallRecord (`_rows.LoggedCall`): the rows are
    made straight from the engine's objects, with no record built and validated in between."""

    __slots__ = (
        "agent_name", "chain_id", "conversation_id", "conversation_name", "created_at",
        "duration_ms", "error", "format_context", "format_context_policy", "id", "messages",
        "model", "options", "options_json", "parent_chain_id", "parent_conversation_id", "parent_tool_call_id",
        "parsed", "prompt", "purpose", "schema", "schema_id", "seq", "strategy", "system", "text",
        "tool_calls", "tool_results", "usage",
    )  # fmt: skip

    def __init__(self, logger: ChainLogger, noted: Noted) -> None:
        call = noted.call
        response = call.response
        link = noted.link
        self.id = noted.id
        self.conversation_id = noted.conversation_id
        self.conversation_name = noted.conversation_name
        self.chain_id = noted.chain_id
        self.seq = noted.seq
        self.purpose = call.purpose
        self.strategy = call.strategy
        self.model = call.model or logger.model
        self.prompt = logger.prompt
        self.system = logger.system
        self.messages = call.messages
        self.options, self.options_json = logger.options_of(call.options)
        self.schema = logger.schema
        self.schema_id = logger.schema_id
        self.text = call.text
        self.parsed = call.parsed
        self.usage: UsageDetails | None = call.usage
        self.duration_ms: float | None = call.duration_ms
        self.created_at = noted.created_at
        self.error = call.error
        self.tool_calls = [
            ToolCallRecord(c.call_id, c.name, c.arguments if c.arguments is not None else c.raw_arguments)
            for c in (response.function_calls if response else [])
        ]
        self.tool_results = [
            ToolResultRecord(r.call_id, r.name or "", r.result_text(), r.error) for r in call.tool_results
        ]
        self.format_context = call.format_context
        self.format_context_policy = logger.policy if call.format_context else None
        self.parent_conversation_id = link.parent_conversation_id if link else None
        self.parent_chain_id = link.parent_chain_id if link else None
        self.parent_tool_call_id = link.parent_call_id if link else None
        self.agent_name = link.agent if link else None


_Context = tuple[Lineage | None, str | None]


def _context_of(run: Any) -> _Context:
    """The lineage link (a subagent's chain) and conversation name of the context `run` runs in
    (the engine notes its calls from inside it)."""
    lineage = current_chain.get()
    link = lineage if lineage is not None and lineage.chain_id == run.chain_id and lineage.agent else None
    named = naming.get()
    return link, named[1] if named is not None and named[0] == run.conversation_id else None


_Summarized = tuple[dict[str, Any], dict[str, Any], str]
_last: tuple[tuple[dict[str, Any], str | None, bool], _Summarized] | None = None
"""The last options summarized (set fields, the chain's schema id, whether the format is that
schema) and their summary: a chain's calls, and the chains of one program, mostly repeat the
same settings."""

_FLAT_OPTIONS = frozenset({"tools", "response_format", "tool_mode"})
"""Summary entries whose mappings have only the summary's own keys (a list of names, two fixed
dicts): nothing in them for `redact` to mask."""

_unsaved: set[ChainLogger] = set()  # loggers holding calls not yet written (each chain's
# `committed`, in a finally, takes them; the exit hook writes what a Ctrl-C left)


@atexit.register
def _save_unsaved() -> None:
    """At exit (Ctrl-C while a chain ran): write the calls that finished but were not committed."""
    for logger in list(_unsaved):
        noted = logger._take()
        try:
            if noted:
                logger.store.stage_now(logger._rows(noted))
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
    return _summary(options.set_fields(), schema, sid)


def _summary(fields: dict[str, Any], schema: dict[str, Any] | None, sid: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if key == "cache_key":  # the conversation's (or map run's) id again
            continue
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
