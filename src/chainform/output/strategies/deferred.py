"""deferred: the tool chain without a schema, then the "+1 formatting call" with no tools.

The formatting call is the same turn loop again, with the strategy the decision table picks for a
request without tools (`select_strategy(profile, has_tools=False)`), so it falls back like any turn.
"""

from __future__ import annotations

from typing import Any

from chainform.errors import FormattingError, ProviderError, StructuredOutputError
from chainform.output.strategies._base import Engine, Outcome, TurnStrategy
from chainform.output.strategies._context import FORMAT_SYSTEM, build_context, render_format_prompt
from chainform.output.strategies.plain import Plain
from chainform.types import Message, Role


class Deferred(TurnStrategy):
    name = "deferred"

    async def run(self, engine: Engine, transcript: list[Message], *, purpose: str, tools: bool) -> Outcome:
        assert self.output is not None
        last = transcript[-1] if transcript else None
        cut_off = not (last is not None and last.role == Role.ASSISTANT and not last.function_calls)
        if cut_off and engine.turns_left() > 0:  # not answered yet (e.g. after a run-time fallback)
            gather = Plain(self.profile, self.settings, gather=True)
            cut_off = (await engine.loop(transcript, gather, tools=True, purpose="chain")).cut_off
        limit = self.settings.chain_limit
        context = build_context(transcript, self.settings.policy, cut_off=cut_off, chain_limit=limit)
        engine.format_context = context
        prompt = render_format_prompt(self.settings.template, context=context, schema=self.output.schema)
        messages = [Message.system(FORMAT_SYSTEM), Message.user(prompt)]
        first_attempt = len(engine.attempts)
        try:
            outcome = await engine.answer(messages, has_tools=False, requested="auto", purpose="format")
        except (ProviderError, StructuredOutputError) as exc:
            raise _formatting_error(exc, context, engine.attempts[first_attempt:]) from exc
        return Outcome(outcome.value, cut_off)


def _formatting_error(exc: Exception, context: str, attempts: list[Any]) -> FormattingError:
    if isinstance(exc, ProviderError):
        message = f"the formatting call failed: {exc}"
    else:
        last = attempts[-1].error if attempts else str(exc)
        message = f"the formatting call produced no valid output after {len(attempts)} attempt(s): {last}"
    return FormattingError(message, context=context, attempts=attempts)
