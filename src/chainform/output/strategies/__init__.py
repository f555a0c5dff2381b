"""Output strategies as objects: one module per strategy, one protocol (`_base.Strategy`).

Adding a strategy is adding a module and listing its class in `_TYPES`; the engine builds what a
`StrategyChoice` names with `build` and never branches on a strategy's name.
"""

from __future__ import annotations

from chainform.output._select import StrategyChoice
from chainform.output._spec import OutputSpec
from chainform.output.strategies._base import (
    NOT_FINAL,
    Feedback,
    Outcome,
    Settings,
    Strategy,
    TurnStrategy,
)
from chainform.output.strategies.deferred import Deferred
from chainform.output.strategies.native import Native
from chainform.output.strategies.plain import Plain
from chainform.output.strategies.prompted import Prompted
from chainform.output.strategies.tool import Tool
from chainform.types import ModelProfile

__all__ = [
    "NOT_FINAL",
    "Deferred",
    "Feedback",
    "Native",
    "Outcome",
    "Plain",
    "Prompted",
    "Settings",
    "Strategy",
    "Tool",
    "build",
]

_TYPES: dict[str, type[TurnStrategy]] = {cls.name: cls for cls in (Native, Tool, Prompted, Deferred)}


def build(choice: StrategyChoice, out: OutputSpec, profile: ModelProfile, settings: Settings) -> Strategy:
    """The strategy object a choice names."""
    return _TYPES[choice.name](out, profile, settings)
