"""Azure AI Foundry model deployments (`azure-ai/<deployment>`), by model family.

Foundry serves many vendors' models through one OpenAI-compatible v1 endpoint; what a model can do
depends on its family, not on the endpoint. Names are matched case-insensitively by prefix
("Meta-Llama-3.1-8B-Instruct" and "Llama-3.3-70B-Instruct" are both llama).
"""

from __future__ import annotations

import dataclasses

from chainform.clients.profiles import CAPABLE, IMAGES, TOOLS_ONLY, longest_prefix
from chainform.types import ModelProfile

_NO_TOP_K = frozenset({"top_k"})

# Images go inline as image_url data URLs (10 a request, 20 MB each, as Azure OpenAI); Foundry
# fetching a URL is not relied on. Other attachments are converted.
_IMAGES = dataclasses.replace(IMAGES, max_count=10)
# GPT deployments on Foundry can do everything OpenAI models can; other families start from _BASE.
_GPT = CAPABLE.replace(
    provider="azure-ai", schema_dialect="openai-strict", unsupported_options=_NO_TOP_K, media=_IMAGES
)
_BASE = TOOLS_ONLY.replace(
    provider="azure-ai",
    supports_parallel_tool_calls=False,
    supports_tool_choice_required=False,
    unsupported_options=_NO_TOP_K,
)

# Longest prefix wins. Llama answers tool calls but only json_object (no schema) as a format;
# Mistral takes json_schema and tool_choice "any"; DeepSeek-R1 reasons and has neither tools nor
# schemas (prompted); DeepSeek-V3 calls tools; Phi-4 models are best prompted.
FAMILIES: dict[str, ModelProfile] = {
    "llama": _BASE,
    "mistral": _BASE.replace(
        supports_parallel_tool_calls=True, supports_json_schema=True, supports_tool_choice_required=True
    ),
    "ministral": _BASE.replace(supports_json_schema=True, supports_tool_choice_required=True),
    "codestral": _BASE.replace(supports_json_schema=True),
    "deepseek-v3": _BASE,
    "deepseek-r1": _BASE.replace(supports_tools=False, supports_reasoning=True, supports_seed=False),
    "phi-4": _BASE.replace(supports_tools=False),
    "phi-4-mini": _BASE,  # Phi-4-mini-instruct has function calling
    "gpt-": _GPT,
    # the vision families read images
    "llama-4": _BASE.replace(media=_IMAGES),
    "phi-4-multimodal": _BASE.replace(supports_tools=False, media=_IMAGES),
}

EXAMPLES = ("Llama-3.3-70B-Instruct", "Mistral-Large-2411", "DeepSeek-R1", "DeepSeek-V3-0324", "Phi-4")


def azure_ai_profile(model: str) -> ModelProfile:
    """The profile of a Foundry deployment by its model family (conservative when unknown)."""
    name = model.lower().removeprefix("meta-")
    family = longest_prefix(name, FAMILIES)
    return (FAMILIES[family] if family is not None else _BASE).replace(name=model)


KNOWN_MODELS = {name: azure_ai_profile(name) for name in EXAMPLES}
