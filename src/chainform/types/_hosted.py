"""Tools the provider runs itself (web search, code execution, URL context, file search): given in
`tools=` beside Python tools, offered in each provider's own shape by its adapter, their calls and
results kept as `ServerToolContent` and counted in the call's usage (`hosted_tool_calls`).

Which provider and model family has which, and what each combines with (function tools, a native
schema), is data on the `ModelProfile` (`hosted_tools`, `hosted_with_functions`,
`hosted_with_schema`); docs/providers.md shows the table. A chain checks it before any call.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

HostedKind = Literal["web_search", "code_execution", "url_context", "file_search"]
HOSTED_KINDS: tuple[HostedKind, ...] = ("web_search", "code_execution", "url_context", "file_search")


@dataclass(frozen=True)
class HostedTool:
    """A tool the provider runs itself; `kind` says which (one of `HOSTED_KINDS`)."""

    kind: ClassVar[HostedKind]

    @property
    def name(self) -> str:
        return self.kind

    def to_dict(self) -> dict[str, Any]:
        """The tool as JSON-able data (what a chain's spec keeps): its kind and its settings."""
        out: dict[str, Any] = {"kind": self.kind}
        for spec in dataclasses.fields(self):
            value = getattr(self, spec.name)
            out[spec.name] = list(value) if isinstance(value, tuple) else value
        return out

    @staticmethod
    def from_dict(data: Any) -> HostedTool:
        """A hosted tool back from `to_dict`'s form; ValueError or TypeError when it is not one."""
        if not isinstance(data, dict):
            raise ValueError("a hosted tool must be an object")
        kind = data.get("kind")
        made = HOSTED_TYPES.get(kind) if isinstance(kind, str) else None
        if made is None:
            raise ValueError(f"{kind!r} is not a hosted tool kind ({', '.join(HOSTED_KINDS)})")
        return made(**{k: v for k, v in data.items() if k != "kind"})


@dataclass(frozen=True)
class WebSearch(HostedTool):
    """The provider searches the web (OpenAI web_search, Anthropic web_search, Gemini google_search).
    `max_uses` caps the searches of one call where the provider can (Anthropic);
    `allowed_domains` keeps them to those domains where it can (OpenAI, Anthropic)."""

    kind: ClassVar[HostedKind] = "web_search"
    max_uses: int | None = None
    allowed_domains: Sequence[str] = ()

    def __post_init__(self) -> None:
        _check_count("max_uses", self.max_uses)
        object.__setattr__(self, "allowed_domains", _names("allowed_domains", self.allowed_domains))


@dataclass(frozen=True)
class CodeExecution(HostedTool):
    """The provider runs code in its own sandbox (OpenAI code_interpreter, Anthropic code_execution,
    Gemini code_execution)."""

    kind: ClassVar[HostedKind] = "code_execution"


@dataclass(frozen=True)
class URLContext(HostedTool):
    """The provider fetches the URLs named in the prompt (Gemini url_context, Anthropic web_fetch)."""

    kind: ClassVar[HostedKind] = "url_context"
    max_uses: int | None = None

    def __post_init__(self) -> None:
        _check_count("max_uses", self.max_uses)


@dataclass(frozen=True)
class FileSearch(HostedTool):
    """The provider searches your stores of documents (OpenAI vector stores, Gemini file search
    stores), named by their ids."""

    kind: ClassVar[HostedKind] = "file_search"
    store_ids: Sequence[str] = field(default_factory=tuple)
    max_results: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "store_ids", _names("store_ids", self.store_ids))
        if not self.store_ids:
            raise ValueError("FileSearch needs the ids of the stores to search (store_ids=[...])")
        _check_count("max_results", self.max_results)


HOSTED_TYPES: dict[str, type[HostedTool]] = {
    t.kind: t for t in (WebSearch, CodeExecution, URLContext, FileSearch)
}
"""Each hosted tool's class by its kind."""


def _names(field_name: str, value: str | Sequence[str]) -> tuple[str, ...]:
    """One name or several as a tuple: a lone string is one name, never its characters (the
    adapters send `list(value)`); each must be a non-empty string."""
    names = (value,) if isinstance(value, str) else tuple(value)
    if not all(isinstance(name, str) and name.strip() for name in names):
        raise ValueError(f"{field_name} must be non-empty strings, got {value!r}")
    return names


def _check_count(field_name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{field_name} must be a whole number of at least 1 (or None), got {value!r}")


def hosted_tool(spec: str) -> HostedTool:
    """A hosted tool from its CLI spelling: KIND (web_search, code_execution, url_context) or
    file_search:STORE_ID[,STORE_ID...]; dashes may stand for underscores."""
    kind, _, arg = spec.partition(":")
    kind = kind.strip().replace("-", "_")
    if kind == "file_search":
        return FileSearch(tuple(s for s in arg.split(",") if s.strip()))
    made = HOSTED_TYPES.get(kind)
    if made is None or arg:
        raise ValueError(
            f"{spec!r} is not a hosted tool: give web_search, code_execution, url_context or "
            "file_search:STORE_ID"
        )
    return made()
