"""What the prompt command shows beside the answer: tool activity and attachments (`--td`),
approvals (`--ta`), usage (`-u`) and the `--json` summary. All of it but `--json` goes to stderr."""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

import click

from chainform.cli._money import cost_text
from chainform.cli._output import console, shorten, untrusted

if TYPE_CHECKING:
    from chainform.response import ChainResponse
    from chainform.types import FunctionCallContent, FunctionResultContent, UsageDetails


class Approver:
    """`--ta`: ask before each tool call. Parallel calls ask one at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def __call__(self, tool: Any, call: FunctionCallContent) -> bool:
        with self._lock:
            args = json.dumps(call.arguments, ensure_ascii=False)  # the model's words: made inert
            question = untrusted(f"Run tool {call.name}({shorten(args, 300)})?", err=True)
            return click.confirm(question, default=False, err=True)


def show_tool_event(kind: str, value: Any) -> None:
    """One `--td` line on stderr; what the model or the tool wrote is made inert on a terminal."""
    from rich.text import Text

    err = console(err=True)
    if kind == "attachment":
        err.print(Text.assemble(("Attachment: ", "bold magenta"), untrusted(str(value.summary()), err=True)))
    elif kind == "tool_call":
        call: FunctionCallContent = value
        args = (
            json.dumps(call.arguments, ensure_ascii=False)
            if call.arguments is not None
            else call.raw_arguments
        )
        shown = untrusted(f"{call.name}({args}) ", err=True)
        call_id = untrusted(f"[{call.call_id}]", err=True)
        err.print(Text.assemble(("Tool call: ", "bold cyan"), shown, (call_id, "dim")))
    else:
        result: FunctionResultContent = value
        if result.error is not None:
            body = Text(untrusted(f"error: {shorten(result.error, 500)}", err=True), style="red")
        else:
            body = Text(untrusted(shorten(result.result_text(), 500), err=True))
        name, call_id = untrusted(f"{result.name} ", err=True), untrusted(f"[{result.call_id}] ", err=True)
        err.print(Text.assemble(("  result: ", "bold green"), name, (call_id, "dim"), body))


def usage_text(usage: UsageDetails, by_purpose: dict[str, UsageDetails]) -> str:
    """The `-u` lines: tokens and cost, split by purpose; an unknown cost says why, once."""

    def one(u: UsageDetails) -> str:
        tokens = f"{u.input_tokens or 0} input, {u.output_tokens or 0} output, {u.total_tokens or 0} total"
        return f"{tokens}, {cost_text(u.cost)}"

    text = f"Token usage: {one(usage)}"
    if len(by_purpose) > 1:
        text += " (" + "; ".join(f"{p}: {one(u)}" for p, u in by_purpose.items()) + ")"
    if usage.cost is None and usage.cost_reason:
        text += f"\nCost unknown: {usage.cost_reason}"
    return text


def summary(response: ChainResponse, has_schema: bool) -> dict[str, Any]:
    strategy = response.strategy
    return {
        "conversation_id": response.conversation_id,
        "strategy": {"name": strategy.name, "requested": strategy.requested, "reason": strategy.reason}
        if strategy
        else None,
        "text": response.text(),
        "value": response.json() if has_schema else None,
        "cut_off": response.cut_off,
        "ended_by": response.ended_by,
        "usage": response.usage.to_dict(),
        "format_context": response.format_context,
        "attachments": [vars(c) for c in response.attachments],
        "responses": [
            {
                "purpose": call.purpose,
                "model": call.model,
                "strategy": call.strategy,
                "response_id": call.response_id,
                "text": call.text,
                "error": call.error,
                "finish_reason": call.finish_reason,
                "duration_ms": call.duration_ms,
                "usage": call.usage.to_dict(),
            }
            for call in response.responses
        ],
    }
