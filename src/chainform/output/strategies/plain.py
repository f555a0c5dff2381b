"""No schema: the answer is the text of the first turn without tool calls.

`gather=True` is deferred's tool phase: its text is not the chain's answer, tools keep being offered
up to and on the last allowed turn, and being cut off by chain_limit is an outcome, not an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chainform.errors import ChainError, StructuredOutputGenerationError
from chainform.output.strategies._base import NOT_FINAL, Feedback, Settings, TurnStrategy
from chainform.types import ChatOptions, ChatResponse, ModelProfile, ToolSpec


class Plain(TurnStrategy):
    name = "plain"
    validates = False

    def __init__(self, profile: ModelProfile, settings: Settings, *, gather: bool = False) -> None:
        super().__init__(None, profile, settings)
        self.answers = not gather
        self.runs_last_tools = gather

    def options(
        self, base: ChatOptions, tools: Sequence[ToolSpec], *, last: bool, force: bool
    ) -> ChatOptions:
        return super().options(base, tools, last=last and not self.runs_last_tools, force=force)

    def check(self, response: ChatResponse) -> Any:
        return NOT_FINAL if response.function_calls else response.text

    def feedback(self, error: StructuredOutputGenerationError, response: ChatResponse) -> Feedback:
        raise ChainError(
            f"the model was still calling tools after chain_limit={self.settings.chain_limit} model calls; "
            "raise chain_limit or simplify the task"
        )
