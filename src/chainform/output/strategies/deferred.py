"""deferred: the tool chain without a schema, then the "+1 formatting call" with no tools.

This object is the tool phase: plain text, tools offered up to and on the last allowed turn, its
text not the chain's answer. `formatting` says that a formatting call follows and what it carries
(`_context.Formatting`); the engine runs it with the strategy the decision table picks for a
request without tools (`select_strategy(profile, has_tools=False)`), so it falls back like any turn.
"""

from __future__ import annotations

from chainform.output._spec import OutputSpec
from chainform.output.strategies._base import Settings
from chainform.output.strategies._context import Formatting
from chainform.output.strategies.plain import Plain
from chainform.types import ModelProfile


class Deferred(Plain):
    name = "deferred"

    def __init__(self, out: OutputSpec | None, profile: ModelProfile, settings: Settings) -> None:
        super().__init__(profile, settings, gather=True)
        assert out is not None
        self.formatting = Formatting(out.schema, settings.policy, settings.template, settings.chain_limit)
