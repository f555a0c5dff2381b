"""What a provider refused at run time, remembered per model object (`model.refusals`).

A refusal is learnt once (e.g. "json_schema response formats are rejected") and every later chain
and conversation of the same model object goes straight to what works. It lives on the model object,
not in the module, so two models (or two tests) never see each other's memory; `clear()` forgets.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from typing import Literal

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
