"""Shared CLI test helper: a ScriptedClient installed behind the CLI's model resolver."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from chainform.cli import _prompt
from chainform.models import Model
from chainform.testing import ScriptedClient


class Scripted:
    """Installs a ScriptedClient as the model every `chainform` prompt gets; records the names asked."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.client: ScriptedClient | None = None
        self.asked: list[tuple[str, str | None, str | None]] = []
        monkeypatch.setattr(_prompt, "resolve_model", self._resolve)

    def script(self, items: Sequence[Any], **kwargs: Any) -> ScriptedClient:
        self.client = ScriptedClient(items, **kwargs)
        return self.client

    def _resolve(self, name: str, *, key: str | None, base_url: str | None) -> Model:
        self.asked.append((name, key, base_url))
        assert self.client is not None, "call scripted.script([...]) first"
        return Model(self.client, name=name)
