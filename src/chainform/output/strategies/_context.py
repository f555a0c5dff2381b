"""What the deferred formatting call sees: the chain's transcript, aggregated by a named policy.

`Formatting` is the formatting phase as data: the engine (chain/_engine.py) runs the tool phase,
asks it for the call's messages and wraps the call's failure in the error it makes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from chainform.errors import Attempt, FormattingError, ProviderError
from chainform.types import FunctionCallContent, FunctionResultContent, Message, Role

PolicyName = Literal["full", "compact", "last"]
POLICIES: tuple[str, ...] = ("full", "compact", "last")

FORMAT_SYSTEM = (
    "You convert the outcome of a finished, tool-using conversation into ONE JSON value that matches "
    "the given JSON Schema. Use only facts present in the context. When a final answer is present it "
    "is the preferred source; use the tool results to fill gaps or resolve doubts. Do not call tools "
    "and do not add commentary."
)

DEFAULT_FORMAT_PROMPT = "{context}\n\n## Schema of the JSON to return\n{schema}"


@dataclass(frozen=True)
class ContextPolicy:
    """How much of the transcript the formatting call gets.

    full: everything, clearly delimited. compact: the same with tool results trimmed so that together
    they fit `budget_tokens` (about 4 characters a token). last: the final answer plus the tool
    results it depends on.
    """

    name: PolicyName = "compact"
    budget_tokens: int = 2000

    @classmethod
    def parse(cls, value: str | ContextPolicy) -> ContextPolicy:
        if isinstance(value, ContextPolicy):
            return value
        if value not in POLICIES:
            raise ValueError(f"unknown format context {value!r}; choose one of {', '.join(POLICIES)}")
        return cls(value)  # type: ignore[arg-type]


def _trim(text: str, budget_chars: int) -> str:
    if len(text) <= budget_chars:
        return text
    keep = max(budget_chars // 2, 40)
    dropped = len(text) - 2 * keep
    return f"{text[:keep]}\n…[{dropped} characters trimmed]…\n{text[-keep:]}"


def final_answer(transcript: list[Message]) -> str | None:
    """The last assistant text of a turn that made no tool calls: the chain's natural answer."""
    for message in reversed(transcript):
        if message.role == Role.ASSISTANT:
            if message.function_calls:
                return None
            text = message.text.strip()
            if text:
                return text
        elif message.role == Role.TOOL:
            return None
    return None


def _salient(text: str) -> tuple[set[str], set[str]]:
    """Numbers and longer words of a text: what an answer quotes from a tool result."""
    numbers = {n.rstrip("0").rstrip(".") for n in re.findall(r"\d+(?:\.\d+)?", text)}
    words = {w.lower() for w in re.findall(r"[A-Za-z]{4,}", text)}
    return numbers, words


def _quotes(answer: tuple[set[str], set[str]], result: str) -> bool:
    numbers, words = _salient(result)
    return bool(answer[0] & numbers) or len(answer[1] & words) >= 3


def _relevant_results(transcript: list[Message], answer: str | None) -> set[str]:
    """Call ids of the results the answer depends on: the last tool turn's, plus any it quotes."""
    last_turn: set[str] = set()
    for message in reversed(transcript):
        if message.role == Role.TOOL:
            last_turn = {r.call_id for r in message.function_results}
            break
    if not answer:
        return last_turn
    salient = _salient(answer)
    quoted = {r.call_id for m in transcript for r in m.function_results if _quotes(salient, r.result_text())}
    return last_turn | quoted


def build_context(
    transcript: list[Message], policy: ContextPolicy, *, cut_off: bool = False, chain_limit: int | None = None
) -> str:
    """Render the transcript for the formatting call; the final answer always comes first."""
    answer = final_answer(transcript)
    parts: list[str] = []
    if answer:
        parts.append("## Final answer (PREFERRED SOURCE)\n" + answer)
    else:
        parts.append("## Final answer\n(The conversation ended without a final natural-language answer.)")
    if cut_off:
        parts.append(
            f"## Note\nThe tool phase was cut off by the chain limit ({chain_limit} model calls) before "
            "the model finished; answer from what was gathered."
        )
    keep = _relevant_results(transcript, answer) if policy.name == "last" else None
    results = [r for m in transcript for r in m.function_results]
    per_result = None
    if policy.name == "compact" and results:
        per_result = max(policy.budget_tokens * 4 // len(results), 200)
    lines: list[str] = []
    for message in transcript:
        lines.extend(_render(message, policy, keep, per_result))
    title = (
        "## The question and the tool results the answer relies on"
        if policy.name == "last"
        else "## Conversation"
    )
    parts.append(title + "\n" + ("\n".join(lines) if lines else "(nothing)"))
    return "\n\n".join(parts)


def _render(
    message: Message, policy: ContextPolicy, keep: set[str] | None, per_result: int | None
) -> list[str]:
    out: list[str] = []
    role = str(message.role)
    if policy.name == "last":
        if role == Role.USER and message.text:
            out.append(f"[user] {message.text}")
        for r in message.function_results:
            if keep is not None and r.call_id in keep:
                out.append(f"[tool result {r.name or ''} {r.call_id}] {r.result_text()}")
        return out
    for content in message.contents:
        if isinstance(content, FunctionCallContent):
            args = (
                json.dumps(content.arguments, ensure_ascii=False)
                if content.arguments is not None
                else (content.raw_arguments or "")
            )
            out.append(f"[tool call {content.call_id}] {content.name}({args})")
        elif isinstance(content, FunctionResultContent):
            text = content.result_text()
            if per_result is not None:
                text = _trim(text, per_result)
            out.append(f"[tool result {content.name or ''} {content.call_id}] {text}")
    if message.text and role != Role.TOOL:
        out.insert(0, f"[{role}] {message.text}")
    return out


def render_format_prompt(template: str | None, *, context: str, schema: dict[str, object]) -> str:
    """Fill {context} and {schema} (plain replacement: JSON braces elsewhere are left alone)."""
    text = template or DEFAULT_FORMAT_PROMPT
    return text.replace("{schema}", json.dumps(schema, indent=2)).replace("{context}", context)


@dataclass(frozen=True)
class Formatting:
    """A formatting call follows the tool phase: no tools, the chain's context and the schema.

    Its format is the one the decision table picks for a request without tools, so it falls back
    like any turn; its failure is a `FormattingError` carrying the context.
    """

    schema: dict[str, Any]
    policy: ContextPolicy
    template: str | None
    chain_limit: int

    def messages(self, transcript: list[Message], *, cut_off: bool) -> tuple[str, list[Message]]:
        """The context (logged with the call) and the formatting call's messages."""
        context = build_context(transcript, self.policy, cut_off=cut_off, chain_limit=self.chain_limit)
        prompt = render_format_prompt(self.template, context=context, schema=self.schema)
        return context, [Message.system(FORMAT_SYSTEM), Message.user(prompt)]

    def error(self, exc: Exception, context: str, attempts: list[Attempt]) -> FormattingError:
        if isinstance(exc, ProviderError):
            message = f"the formatting call failed: {exc}"
        else:
            last = attempts[-1].error if attempts else str(exc)
            message = f"the formatting call produced no valid output after {len(attempts)} attempt(s): {last}"
        return FormattingError(message, context=context, attempts=attempts)


def answered(transcript: list[Message]) -> bool:
    """The transcript ends in an answer: an assistant turn without tool calls."""
    last = transcript[-1] if transcript else None
    return last is not None and last.role == Role.ASSISTANT and not last.function_calls
