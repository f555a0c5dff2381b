"""A chain's calls as ONE compact spool record, made in a pass of pydantic_core's serializer.

A sync chain running alone writes its calls before it returns (store/_chainlog.py), so what that
write costs is part of every such chain's time. Made as the log's rows (`_rows.rows_of`: a record
read per call, each message encoded apart, the rows' texts scanned for keys, then the whole as
JSON), a 2-call chain's record cost 70-110 us of a 2.7 ms chain on a fast server; made here, from
the engine's objects, about 45-65 us (bench/bench_chain.py; docs/benchmarks.md). The rows are made
from the record only when a reader drains the spool (`decode`), off the chain's path, by the same
`rows_of`: the log holds the same rows either way (tests/store/test_store_compact.py).

The record (spool format 3), one JSON array:
    [first call id, written at, prompt, system, schema id, schema text, policy, calls, messages]
a call: [id, conversation id, conversation name, chain id, seq, purpose, strategy, model,
    message indexes, options summary, text, parsed, usage, duration ms, created at, error,
    tool calls, tool results, format context, lineage link]
Each message is stored once ({"role", "contents", ...}, as the log stores it) and named by its
index in the calls that sent it. `encode` returns None for what only the rows path handles:
attached files, inline bytes, message extras (redacted), text the serializer cannot encode, and a
record that mentions a loaded key (`_rows` masks it).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from pydantic_core import from_json, to_json

from chainform._lineage import Lineage
from chainform.keys import mentions_secret
from chainform.store._records import ToolCallRecord, ToolResultRecord
from chainform.store._rows import Rows, known_schema, known_schema_text, rows_of
from chainform.store._serialize import PLAIN_PARTS, dumps, message_from_dict
from chainform.types import UsageDetails

if TYPE_CHECKING:
    from chainform.types import ChatOptions, ChatResponse, FunctionResultContent, Message

FORMAT = 3


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
    model: str | None  # the model that made the call (a fallback model's name), None: the chain's

    @property
    def text(self) -> str: ...

    @property
    def usage(self) -> UsageDetails: ...  # with its cost


class Noted(NamedTuple):
    """A finished call and what the logger learned of it when the engine handed it over."""

    call: LoggableCall
    id: str
    seq: int
    created_at: float
    link: Lineage | None
    conversation_name: str | None
    conversation_id: str
    chain_id: str


class Chain(Protocol):
    """What a chain's calls share: the logger's (store/_chainlog.ChainLogger has these)."""

    model: str
    prompt: str | None
    system: str | None
    schema: dict[str, Any] | None
    schema_id: str | None
    policy: str | None

    def logged_options(self, options: ChatOptions) -> tuple[dict[str, Any], str]:
        """A call's options summary as logged (redacted) and its JSON."""
        ...


def encode(chain: Chain, noted: Sequence[Noted]) -> bytes | None:
    """The record of `noted` (a chain's calls, in order), or None where only the rows do (above)."""
    messages: list[dict[str, Any]] = []
    index: dict[int, int] = {}
    calls = []
    for n in noted:
        call = n.call
        sent = []
        for m in call.messages:
            i = index.get(id(m))
            if i is None:
                if m.additional_properties or not all(type(c) in PLAIN_PARTS for c in m.contents):
                    return None
                i = index[id(m)] = len(messages)
                stored = {"role": str(m.role), "contents": m.contents}
                if m.author_name is not None:
                    stored["author_name"] = m.author_name
                if m.message_id is not None:
                    stored["message_id"] = m.message_id
                messages.append(stored)
            sent.append(i)
        response, usage, link = call.response, call.usage, n.link
        calls.append((
            n.id, n.conversation_id, n.conversation_name, n.chain_id, n.seq, call.purpose,
            call.strategy, call.model or chain.model, sent, chain.logged_options(call.options)[0], call.text,
            call.parsed, (usage.input_tokens, usage.output_tokens, usage.total_tokens,
            usage.additional_counts or None, None if usage.cost is None else str(usage.cost)),
            call.duration_ms, n.created_at, call.error,
            [(c.call_id, c.name, c.raw_arguments if c.arguments is None else c.arguments)
             for c in (response.function_calls if response else ())],
            [(r.call_id, r.name or "", r.result_text(), r.error) for r in call.tool_results],
            call.format_context,
            (link.parent_conversation_id, link.parent_chain_id, link.parent_call_id, link.agent)
            if link else None,
        ))  # fmt: skip
    sid = chain.schema_id
    text = known_schema_text(sid, chain.schema) if sid is not None and chain.schema is not None else None
    record = (noted[0].id, time.time(), chain.prompt, chain.system, sid, text, chain.policy, calls, messages)
    try:
        data = to_json(record, fallback=str, bytes_mode="base64")
    except ValueError:  # lone surrogates: the rows path escapes them
        return None
    return None if mentions_secret(data.decode()) else data


def decode(data: bytes | str) -> Rows:
    """The log's rows of a record (`rows_of`, as if the chain had written them)."""
    _, written_at, prompt, system, sid, text, policy, calls, stored = from_json(data)
    schema = None
    if sid is not None and text is not None:
        known_schema(text, sid)
        schema = from_json(text)
    messages = [message_from_dict(m) for m in stored]
    return rows_of([_Stored(c, prompt, system, sid, schema, policy, messages) for c in calls], at=written_at)


class _Stored:
    """A call of a record read as the log's rows read a CallRecord (`_rows.LoggedCall`)."""

    def __init__(
        self,
        c: list[Any],
        prompt: str | None,
        system: str | None,
        sid: str | None,
        schema: dict[str, Any] | None,
        policy: str | None,
        messages: list[Message],
    ) -> None:
        (self.id, self.conversation_id, self.conversation_name, self.chain_id, self.seq, self.purpose,
         self.strategy, self.model, sent, self.options, self.text, self.parsed, usage, self.duration_ms,
         self.created_at, self.error, tool_calls, tool_results, self.format_context, link) = c  # fmt: skip
        self.prompt, self.system, self.schema_id, self.schema = prompt, system, sid, schema
        self.messages = [messages[i] for i in sent]
        self.options_json = dumps(self.options)
        tokens_in, tokens_out, total, counts, cost = usage
        self.usage: UsageDetails | None = UsageDetails(tokens_in, tokens_out, total, counts or {}, None if cost is None else Decimal(cost))
        self.tool_calls = [ToolCallRecord(*t) for t in tool_calls]
        self.tool_results = [ToolResultRecord(*t) for t in tool_results]
        self.format_context_policy = policy if self.format_context else None
        parents: list[str | None] = link or [None, None, None, None]
        self.parent_conversation_id, self.parent_chain_id, self.parent_tool_call_id, self.agent_name = parents
