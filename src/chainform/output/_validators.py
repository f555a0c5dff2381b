"""Per-strategy checks of a finished response, run inside the client's middleware chain.

A validator returns the validated value, returns `NOT_FINAL` when the turn legitimately continues the
chain (it only called tools), or raises `StructuredOutputGenerationError` to have the failure fed back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chainform.errors import StructuredOutputGenerationError
from chainform.output._spec import OUTPUT_TOOL_NAME, OutputSpec
from chainform.types import ChatResponse

NOT_FINAL: Any = object()

Validator = Callable[[ChatResponse], Any]


def text_validator(out: OutputSpec, dialect: str) -> Validator:
    """native / prompted: a turn without tool calls is the answer, as JSON text."""

    def check(response: ChatResponse) -> Any:
        if response.function_calls:
            return NOT_FINAL
        return out.check_text(response.text, dialect=dialect)

    return check


def output_tool_validator(out: OutputSpec, dialect: str, *, tools_may_continue: bool) -> Validator:
    """tool: the answer is the arguments of exactly one `final_result` call.

    With `tools_may_continue`, a turn calling only other tools continues the chain; otherwise (the
    formatting call) anything but one `final_result` call is a failure.
    """

    def check(response: ChatResponse) -> Any:
        outs = [c for c in response.function_calls if c.name == OUTPUT_TOOL_NAME]
        if len(outs) > 1:
            raise StructuredOutputGenerationError(
                f"{OUTPUT_TOOL_NAME} was called {len(outs)} times in one turn; call it exactly once.",
                raw_text=outs[-1].raw_arguments or outs[-1].arguments_json(),
            )
        if outs:
            raw = outs[0].raw_arguments or outs[0].arguments_json()
            return out.check_tool_arguments(outs[0].arguments, raw, dialect=dialect)
        if tools_may_continue and response.function_calls:
            return NOT_FINAL
        raise StructuredOutputGenerationError(
            f"Do not answer in text: call the {OUTPUT_TOOL_NAME} tool, once, with the answer.",
            raw_text=response.text,
        )

    return check
