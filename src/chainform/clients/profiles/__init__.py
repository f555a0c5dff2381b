"""Capability profiles as data, one module per model family's provider (see docs/providers.md).

Strategy selection reads only a `ModelProfile`; these modules say what each family supports and
import no SDK, so `list_models()` and `chainform models` stay cheap. This package holds the lookup
every family shares: a model name to its family's profile by the longest matching prefix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from chainform.types import MediaSupport, ModelProfile
from chainform.types._options import IMAGE_TYPES

PDF = "application/pdf"
# Vision models behind OpenAI's API shape (the OpenAI-compatible servers' image_url included).
IMAGES = MediaSupport(types=IMAGE_TYPES, max_bytes=20_000_000, max_count=500)

# Every capability a profile can claim: families derive from it by switching off what they lack.
CAPABLE = ModelProfile(
    supports_tools=True,
    supports_parallel_tool_calls=True,
    supports_json_schema=True,
    supports_tools_with_schema=True,
    supports_tool_choice_required=True,
    supports_strict_schema=True,
    supports_seed=True,
)
# Tools, but no native structured output: the usual start of a family that calls tools only.
TOOLS_ONLY = CAPABLE.replace(
    supports_json_schema=False, supports_tools_with_schema=False, supports_strict_schema=False
)

# Dated snapshots, version tags and "-latest"/"-0" aliases all belong to one family.
_VERSION_SUFFIX = re.compile(r"(-\d{8})?(-v\d+(:\d+)?)?(-latest|-0)?$")
# Cross-region inference profiles on Bedrock ("us.anthropic.claude-...") name the same model.
_REGION_PREFIX = re.compile(r"^(us|eu|apac|global|jp|au|ca|us-gov)\.")


def family_stem(model: str) -> str:
    """`model` without region prefix, snapshot date or version tag."""
    return _VERSION_SUFFIX.sub("", _REGION_PREFIX.sub("", model))


def longest_prefix(name: str, prefixes: Iterable[str]) -> str | None:
    """The longest of `prefixes` that `name` starts with (None when none does)."""
    matches = [p for p in prefixes if name.startswith(p)]
    return max(matches, key=len) if matches else None


def profile_for(model: str, known: Mapping[str, ModelProfile], fallback: ModelProfile) -> ModelProfile:
    """The profile of `model`: an exact entry, else the longest family that prefixes it, else fallback."""
    if model in known:
        return known[model]
    stems: dict[str, ModelProfile] = {}
    for key, profile in known.items():
        stems.setdefault(family_stem(key), profile)  # the first listed wins a tie
    stem = longest_prefix(_REGION_PREFIX.sub("", model), stems)
    return (stems[stem] if stem is not None else fallback).replace(name=model)


def named(profile: ModelProfile, *model_ids: str) -> dict[str, ModelProfile]:
    """One table entry per model id, each a copy of `profile` under its own name."""
    return {model_id: profile.replace(name=model_id) for model_id in model_ids}
