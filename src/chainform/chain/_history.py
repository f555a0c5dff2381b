"""The one conversation history: model calls (in memory or from the log) back into messages.

`Conversation` and `-c/--cid` (and anything else that resumes) use `history`, so a follow-up
always carries the same thing: each chain's prompt, the tool calls it made with their results
(role "tool"), and its answer (the validated JSON when it had a schema, in place of the prose a
deferred chain formatted it from). Failed attempts, the output tool's plumbing and feedback
messages are left out; a chain that gave no answer is skipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from chainform.errors import AttachmentError
from chainform.store import has_fragments
from chainform.types import (
    Content,
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    Message,
    Role,
    TextContent,
)

if TYPE_CHECKING:
    from chainform.chain._records import ChainResult
    from chainform.store import CallRecord, Store


@dataclass
class Step:
    """One model call as history needs it."""

    purpose: str
    text: str
    calls: list[FunctionCallContent] = field(default_factory=list)
    results: list[FunctionResultContent] = field(default_factory=list)
    parsed: Any = None
    failed: bool = False


@dataclass
class ChainSteps:
    """One chain: its prompt and its calls in order."""

    prompt: Message | None
    steps: list[Step]


def history(chains: Iterable[ChainSteps]) -> list[Message]:
    """The messages a follow-up sends for these chains (oldest first)."""
    messages: list[Message] = []
    for chain in chains:
        if not chain.steps or not _answered(chain.steps[-1]):
            continue
        if chain.prompt is not None:
            messages.append(chain.prompt)
        for step in chain.steps:
            for message in _replay(step):
                if _text_only(message) and messages and _text_only(messages[-1]):
                    messages.pop()  # deferred's JSON answer replaces the prose it was formatted from
                messages.append(message)
    return messages


def _text_only(message: Message) -> bool:
    return message.role == Role.ASSISTANT and not message.function_calls


def _answered(step: Step) -> bool:
    return not step.failed and (step.parsed is not None or not step.calls)


def _replay(step: Step) -> list[Message]:
    results = {r.call_id: r for r in step.results}
    calls = [c for c in step.calls if c.call_id in results]  # the output tool's calls have none
    if step.parsed is not None:
        reply: list[Content] = [TextContent(json.dumps(step.parsed, ensure_ascii=False))]
    elif step.purpose == "format" or step.failed or not step.text:
        reply = []
    else:
        reply = [TextContent(step.text)]
    reply.extend(calls)
    out = [Message(Role.ASSISTANT, reply)] if reply else []
    if calls:
        out.append(Message(Role.TOOL, [results[c.call_id] for c in calls]))
    return out


def of_result(result: ChainResult) -> ChainSteps:
    """A finished chain held in memory."""
    steps = []
    for call in result.calls:
        response = call.response
        steps.append(
            Step(
                call.purpose,
                response.text if response else "",
                response.function_calls if response else [],
                list(call.tool_results),
                call.parsed,
                call.error is not None,
            )
        )
    return ChainSteps(result.prompt, steps)


def history_after(messages: list[Message], result: ChainResult) -> list[Message]:
    """A live `Conversation`'s history grown by a finished chain (tool calls and results included)."""
    return [*messages, *history([of_result(result)])]


def of_conversation(store: Store, conversation_id: str) -> list[Message]:
    """A logged conversation's history, for `-c/--continue` and `--cid`: the rows the store returns
    rebuilt by the same code a live `Conversation` uses (system prompts are the caller's to give again).
    The one read that opens files logged as references: they are sent again."""
    return history(of_log(store.recent(None, conversation_id=conversation_id, read_refs=True)))


def of_log(rows: Sequence[CallRecord]) -> list[ChainSteps]:
    """Logged calls of a conversation (any order) grouped into chains, oldest first."""
    chains: dict[str, list[CallRecord]] = {}
    for row in sorted(rows, key=lambda r: (r.created_at, r.seq)):
        chains.setdefault(row.chain_id, []).append(row)
    out = []
    for calls in chains.values():
        calls.sort(key=lambda c: c.seq)
        asked = next((m for m in reversed(calls[0].messages) if m.role == Role.USER), None)
        if asked is not None and has_fragments(asked):  # its fragments' text (read back from the log) again
            out.append(ChainSteps(asked, _steps(calls)))
            continue
        if calls[0].attachments and asked is not None:  # its files (or their converted text) again
            _check_files(asked, calls[0])
            out.append(ChainSteps(asked, _steps(calls)))
            continue
        prompt = next((c.prompt for c in calls if c.prompt is not None), None)
        if prompt is None and asked is not None:
            prompt = asked.text
        out.append(ChainSteps(Message.user(prompt) if prompt else None, _steps(calls)))
    return out


def _check_files(message: Message, call: CallRecord) -> None:
    """A file logged as a reference (`--attachments-store ref`) whose file is gone or changed has
    no bytes to send again: say so rather than send an empty file."""
    if any(isinstance(c, DataContent) and not c.data for c in message.contents):
        refs = ", ".join(f"{a.name} ({a.ref})" for a in call.attachments if a.stored == "ref") or "a file"
        raise AttachmentError(
            f"the conversation sent {refs}, logged as a reference; the file is gone or changed, "
            "so it cannot be sent again"
        )


def _steps(calls: list[CallRecord]) -> list[Step]:
    return [
        Step(
            c.purpose,
            c.text,
            [_call(t.call_id, t.name, t.arguments) for t in c.tool_calls],
            [FunctionResultContent(r.call_id, r.output, r.error, r.name) for r in c.tool_results],
            c.parsed,
            c.error is not None,
        )
        for c in calls
    ]


def _call(call_id: str, name: str, arguments: Any) -> FunctionCallContent:
    if isinstance(arguments, dict):
        return FunctionCallContent(call_id, name, arguments)
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return FunctionCallContent(call_id, name, None, raw)
