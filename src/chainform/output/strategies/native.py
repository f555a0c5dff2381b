"""native: the provider's own structured output (json_schema; json_object + schema as a fallback).

The schema rides on every turn together with the tools; a turn without tool calls is the answer.
"""

from __future__ import annotations

from collections.abc import Sequence

from chainform.output._select import Feature, native_format
from chainform.output._spec import OutputSpec
from chainform.output.strategies._base import Settings, TurnStrategy
from chainform.types import ChatOptions, ModelProfile, ResponseFormat, ToolSpec


class Native(TurnStrategy):
    name = "native"

    def __init__(self, out: OutputSpec | None, profile: ModelProfile, settings: Settings) -> None:
        super().__init__(out, profile, settings)
        assert out is not None
        fmt = out.response_format()
        if native_format(profile, settings.refusals) == "json_object":
            fmt = ResponseFormat("json_object", fmt.schema, fmt.name, fmt.description, strict=False)
        self.format = fmt
        self.feature: Feature | None = "json_schema" if fmt.kind == "json_schema" else "json_object_schema"

    def options(
        self, base: ChatOptions, tools: Sequence[ToolSpec], *, last: bool, force: bool
    ) -> ChatOptions:
        return super().options(base, tools, last=last, force=force).replace(response_format=self.format)
