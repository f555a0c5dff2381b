"""The decision table: an output strategy from a ModelProfile (and what the provider refused) alone.

docs/strategies.md shows the same table; every phase of a chain, the deferred formatting call
included, asks this one function.

What a provider refused at run time is remembered per model object (`Refusals`, `model.refusals`):
a refusal is learnt once (e.g. "json_schema response formats are rejected") and every later chain
and conversation of the same model object goes straight to what works. It lives on the model
object, not in the module, so two models (or two tests) never see each other's memory; `clear()`
forgets.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Literal, get_args

from chainform.errors import HostedToolError
from chainform.types import ModelProfile

StrategyName = Literal["native", "tool", "prompted", "deferred"]
RequestedStrategy = Literal["auto", "native", "tool", "prompted", "deferred"]
STRATEGIES: tuple[str, ...] = get_args(RequestedStrategy)


class StrategyChoice(str):
    """The strategy a chain used, and why. Equal to its name: `ch.strategy == "native"` holds.

    `reason` says why it was picked; `requested` is what the caller asked for; `fallback` is the
    provider's refusal that moved the choice away from the profile's first pick (None otherwise).
    """

    name: StrategyName
    reason: str
    requested: RequestedStrategy
    fallback: str | None

    def __new__(
        cls,
        name: StrategyName,
        reason: str,
        requested: RequestedStrategy = "auto",
        fallback: str | None = None,
    ) -> StrategyChoice:
        choice = super().__new__(cls, name)
        choice.name, choice.reason, choice.requested, choice.fallback = name, reason, requested, fallback
        return choice

    def __repr__(self) -> str:
        return f"StrategyChoice({self.name!r}, reason={self.reason!r})"


def native_format(profile: ModelProfile, refusals: Mapping[str, str]) -> str | None:
    """The response format the native strategy sends: json_schema, else json_object + schema."""
    if not profile.supports_json_schema:
        return None
    if "json_schema" not in refusals:
        return "json_schema"
    return None if "json_object_schema" in refusals else "json_object"


def can_force_tools(profile: ModelProfile, refusals: Mapping[str, str]) -> bool:
    """Whether a call can be made to call a tool (the output tool): the profile says the server
    honours a forced tool choice, and the server has not refused one at run time."""
    trusted = profile.supports_tool_choice_required and not profile.tool_choice_untrusted
    return profile.supports_tools and trusted and "tool_choice" not in refusals


def select_strategy(
    profile: ModelProfile,
    *,
    has_tools: bool,
    requested: str = "auto",
    refusals: Mapping[str, str] | None = None,
) -> StrategyChoice:
    """Resolve `requested` ("auto" or a name) into the strategy a chain (or a formatting call) runs."""
    if requested not in STRATEGIES:
        raise ValueError(f"unknown strategy {requested!r}; choose one of {', '.join(STRATEGIES)}")
    if requested != "auto":
        return StrategyChoice(requested, "requested explicitly", requested)  # type: ignore[arg-type]
    refused = refusals or {}
    name, reason = _pick(profile, has_tools, refused)
    if not refused or name == _pick(profile, has_tools, {})[0]:
        return StrategyChoice(name, reason)
    why = refused.get("tools_with_schema") or refused.get("tool_choice") if name == "deferred" else None
    why = why or "; ".join(refused.values())
    return StrategyChoice(name, f"{reason} (provider refused: {why})", fallback=why)


def around_hosted(
    profile: ModelProfile,
    kinds: Sequence[str],
    *,
    has_functions: bool,
    has_schema: bool,
    requested: str,
) -> str:
    """The strategy to request for a chain offering hosted tools (`kinds`): `requested`, or
    "deferred" where the model cannot send them with a schema (its formatting call goes without
    tools). HostedToolError, before any call, for a tool the model does not have or a combination
    it cannot send (function tools, or an explicit native/tool strategy)."""
    if not kinds:
        return requested
    missing = sorted(set(kinds) - profile.hosted_tools)
    if missing:
        has = ", ".join(sorted(profile.hosted_tools)) or "none"
        raise HostedToolError(
            f"{profile.name!r} has no hosted {' or '.join(missing)} tool (its hosted tools: {has}); "
            "see the support table in docs/providers.md"
        )
    if has_functions and not profile.hosted_with_functions:
        raise HostedToolError(
            f"{profile.name!r} cannot send hosted tools together with function tools in one request; "
            "give one or the other (a Gemini 3 model can combine them)"
        )
    if not has_schema or profile.hosted_with_schema:
        if requested == "tool" and not profile.hosted_with_functions:
            raise HostedToolError(f"{profile.name!r} cannot send the output tool beside hosted tools")
        return requested
    if requested in ("native", "tool"):
        raise HostedToolError(
            f"{profile.name!r} cannot send a schema ({requested}) together with hosted tools; use "
            "strategy auto or deferred (the schema then goes to a formatting call without tools)"
        )
    return "deferred" if requested == "auto" else requested


def _pick(profile: ModelProfile, has_tools: bool, refused: Mapping[str, str]) -> tuple[StrategyName, str]:
    native = native_format(profile, refused)
    if not has_tools:
        if native is not None:
            return "native", "model supports native structured output"
        if can_force_tools(profile, refused):
            return "tool", "no native structured output; model can be made to call a tool"
        return "prompted", "model has neither native structured output nor forced tools"
    if "tools_with_schema" in refused:
        return "deferred", "provider rejected tools with a schema"
    if profile.supports_tools_with_schema and native == "json_schema":
        return "native", "model supports tools together with a native schema"
    if can_force_tools(profile, refused):
        return "tool", "model supports tools but not tools together with a schema"
    if profile.supports_tools and profile.tool_choice_untrusted and "tool_choice" not in refused:
        return "deferred", "a forced tool call is not relied on at this server, nor tools with a schema"
    if profile.supports_tools:
        return "deferred", "model cannot be made to call the output tool, nor combine tools and a schema"
    return "deferred", "model cannot combine tools and a schema in one turn"


Feature = Literal["tools_with_schema", "json_schema", "json_object_schema", "streamed_tools", "tool_choice"]
"""tools_with_schema: tools and a schema in one request; json_schema / json_object_schema: those
response formats; streamed_tools: streaming a request that offers tools; tool_choice: forcing a
tool call ("required" or a named function)."""


class Refusals(Mapping[str, str]):
    """Rejected feature -> the reason (the provider's refusal), safe to share across threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rejected: dict[str, str] = {}

    def remember(self, feature: Feature, reason: str) -> None:
        with self._lock:
            self._rejected.setdefault(feature, reason)

    def clear(self) -> None:
        """Forget every refusal (e.g. after the server was upgraded)."""
        with self._lock:
            self._rejected.clear()

    def __getitem__(self, feature: str) -> str:
        with self._lock:
            return self._rejected[feature]

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            return iter(list(self._rejected))

    def __len__(self) -> int:
        return len(self._rejected)

    def __repr__(self) -> str:
        return f"Refusals({dict(self)!r})"
