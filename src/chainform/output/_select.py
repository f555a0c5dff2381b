"""Choosing an output strategy from a ModelProfile alone (capabilities are data, not provider checks)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Literal, get_args

from chainform.types import ModelProfile

StrategyName = Literal["native", "tool", "prompted", "deferred"]
RequestedStrategy = Literal["auto", "native", "tool", "prompted", "deferred"]
STRATEGIES: tuple[str, ...] = get_args(RequestedStrategy)


@dataclass(frozen=True)
class StrategyChoice:
    """The strategy a chain used, and why (so `auto` is never a mystery)."""

    name: StrategyName
    reason: str
    requested: RequestedStrategy = "auto"

    def __str__(self) -> str:
        return self.name


_fallbacks: dict[str, str] = {}
_fallback_lock = threading.Lock()


def remember_fallback(model_key: str, reason: str) -> None:
    """Record that a provider rejected tools+schema for this model, for the rest of the process."""
    with _fallback_lock:
        _fallbacks[model_key] = reason


def known_fallback(model_key: str) -> str | None:
    with _fallback_lock:
        return _fallbacks.get(model_key)


def select_strategy(
    profile: ModelProfile,
    *,
    has_tools: bool,
    requested: str = "auto",
    model_key: str | None = None,
) -> StrategyChoice:
    """Resolve `requested` ("auto" or a name) into the strategy a chain will run."""
    if requested not in STRATEGIES:
        raise ValueError(f"unknown strategy {requested!r}; choose one of {', '.join(STRATEGIES)}")
    if requested != "auto":
        return StrategyChoice(requested, "requested explicitly", requested)  # type: ignore[arg-type]
    if has_tools and model_key is not None and (why := known_fallback(model_key)):
        return StrategyChoice("deferred", f"provider rejected tools with a schema earlier: {why}")
    if not has_tools:
        if profile.supports_json_schema:
            return StrategyChoice("native", "model supports native structured output")
        if profile.supports_tools and profile.supports_tool_choice_required:
            return StrategyChoice("tool", "no native structured output; model can be made to call a tool")
        return StrategyChoice("prompted", "model has neither native structured output nor forced tools")
    if profile.supports_tools_with_schema and profile.supports_json_schema:
        return StrategyChoice("native", "model supports tools together with a native schema")
    if profile.supports_tools:
        return StrategyChoice("tool", "model supports tools but not tools together with a schema")
    return StrategyChoice("deferred", "model cannot combine tools and a schema in one turn")
