"""No schema: the answer is the text of the first turn without tool calls.

`gather=True` is deferred's tool phase: its text is not the chain's answer, tools keep being offered
up to and on the last allowed turn, and being cut off by chain_limit is an outcome, not an error.

An empty answer (no text, no tool call) to a turn that offered tools is not the answer: the model
is asked once more with tools off (llama-cpp-python's chatml-function-calling, under "auto",
ends every text reply before its first token).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chainform.errors import ChainError, StructuredOutputGenerationError
from chainform.output.strategies._base import NOT_FINAL, Feedback, Settings, TurnStrategy
from chainform.types import ChatOptions, ChatResponse, ModelProfile, ToolSpec

_EMPTY = "Your answer was empty: answer the question in text."


class Plain(TurnStrategy):
    name = "plain"
    validates = False

    def __init__(self, profile: ModelProfile, settings: Settings, *, gather: bool = False) -> None:
        super().__init__(None, profile, settings)
        self.answers = not gather
        self.runs_last_tools = gather
        self.offered = self.tools_off = False

    def options(
        self, base: ChatOptions, tools: Sequence[ToolSpec], *, last: bool, force: bool
    ) -> ChatOptions:
        self.offered = bool(tools) and not self.tools_off
        last = (last and not self.runs_last_tools) or self.tools_off
        return super().options(base, tools, last=last, force=force)

    def check(self, response: ChatResponse) -> Any:
        if response.function_calls:
            return NOT_FINAL
        if self.answers and self.offered and not response.text.strip():
            self.tools_off = True
            raise StructuredOutputGenerationError(_EMPTY, raw_text="")
        return response.text

    def feedback(self, error: StructuredOutputGenerationError, response: ChatResponse) -> Feedback:
        if str(error) == _EMPTY:
            return Feedback(message=_EMPTY)
        raise ChainError(
            f"the model was still calling tools after chain_limit={self.settings.chain_limit} model calls; "
            "raise chain_limit or simplify the task"
        )
