"""Output strategies: how a chain turns a model's reply into a validated value."""

from chainform.output._select import (
    STRATEGIES,
    RequestedStrategy,
    StrategyChoice,
    StrategyName,
    select_strategy,
)
from chainform.output._spec import OUTPUT_TOOL_NAME, OutputSpec, extract_json

__all__ = [
    "OUTPUT_TOOL_NAME",
    "STRATEGIES",
    "OutputSpec",
    "RequestedStrategy",
    "StrategyChoice",
    "StrategyName",
    "extract_json",
    "select_strategy",
]
