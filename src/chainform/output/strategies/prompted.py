"""prompted: the schema described in the system prompt; the JSON is taken from the reply's text."""

from __future__ import annotations

from chainform.output.strategies._base import TurnStrategy, add_to_system
from chainform.types import Message


class Prompted(TurnStrategy):
    name = "prompted"

    def prepare(self, messages: list[Message]) -> None:
        assert self.output is not None
        add_to_system(messages, self.output.instructions())
