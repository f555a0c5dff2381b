"""What OpenAI models and OpenAI-compatible servers can do, as data (no SDK import).

OpenAI profiles are chosen by model family (a name prefix), so a new dated snapshot of a known
family gets the family's profile. Compatible servers get a conservative profile: no strict mode,
and schema-with-tools off, because what they enforce depends on the server and the model; so does
`openai/MODEL` at a base URL that is not OpenAI's (`compatible_profile`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from chainform.clients.profiles import CAPABLE, IMAGES, PDF, TOOLS_ONLY, longest_prefix
from chainform.types import MediaSupport, ModelProfile
from chainform.types._options import IMAGE_TYPES

# Reasoning models reject sampling settings; every OpenAI model rejects top_k.
_SAMPLING = frozenset({"temperature", "top_p", "frequency_penalty", "presence_penalty"})
_NO_TOP_K = frozenset({"top_k"})

_OPENAI_MEDIA = MediaSupport(
    types=IMAGE_TYPES | {PDF}, max_bytes=50_000_000, max_count=500, url_types=IMAGE_TYPES
)
# Azure OpenAI's chat API (2024-10-21) takes images (20 MB, 10 a request), not files: PDFs are converted.
_AZURE_MEDIA = MediaSupport(types=IMAGE_TYPES, max_bytes=20_000_000, max_count=10, url_types=IMAGE_TYPES)

_OPENAI = CAPABLE.replace(
    name="openai",
    provider="openai",
    prompt_cache_key=True,
    # images inline or by URL (fetched by OpenAI), up to 500 a request; PDFs inline as file data
    # (Chat Completions takes no file URL; the Responses API does: responses_profile); OpenAI caps
    # a request's files at 50 MB
    media=_OPENAI_MEDIA,
    schema_dialect="openai-strict",
    unsupported_options=_NO_TOP_K,
)

# (name prefix, profile changes); the longest matching prefix wins.
_FAMILIES: dict[str, dict[str, object]] = {
    "gpt-4.1": {"context_window": 1_047_576, "max_output_tokens": 32_768},
    "gpt-4o": {"context_window": 128_000, "max_output_tokens": 16_384},
    "gpt-5": {
        "context_window": 400_000,
        "max_output_tokens": 128_000,
        "supports_reasoning": True,
        "supports_seed": False,
        "unsupported_options": _NO_TOP_K | _SAMPLING | {"seed"},
    },
    "o": {
        "context_window": 200_000,
        "max_output_tokens": 100_000,
        "supports_reasoning": True,
        "supports_seed": False,
        "unsupported_options": _NO_TOP_K | _SAMPLING | {"seed", "stop_sequences"},
    },
}

# Models listed by `list_models()`; any other name gets its family's profile.
OPENAI_MODELS = (
    "gpt-4.1",
    "gpt-4.1-mini",
    "gpt-4.1-nano",
    "gpt-4o",
    "gpt-4o-mini",
    "gpt-5",
    "gpt-5-mini",
    "gpt-5-nano",
    "o3",
    "o3-mini",
    "o4-mini",
)


def openai_profile(model: str, provider: str = "openai") -> ModelProfile:
    """The profile of an OpenAI model (or Azure deployment of one) by family prefix."""
    family = _family(model)
    changes = dict(_FAMILIES.get(family, {})) if family else {}
    if provider == "azure":
        changes["media"] = _AZURE_MEDIA
    if model.startswith(("o1-mini", "o3-mini")):
        changes["media"] = MediaSupport()
    return _OPENAI.replace(name=model, provider=provider, **changes)


def _family(model: str) -> str | None:
    bare = model.rsplit("/", 1)[-1]
    if len(bare) > 1 and bare[0] == "o" and bare[1].isdigit():
        return "o"
    return longest_prefix(bare, (p for p in _FAMILIES if p != "o"))


def responses_profile(profile: ModelProfile) -> ModelProfile:
    """The Responses API has no seed, stop or penalty parameters; its `input_file` takes PDFs
    inline (Azure's too) and, on OpenAI, by URL (`file_url`)."""
    extra = {"seed", "stop_sequences", "frequency_penalty", "presence_penalty"}
    media = profile.media
    if media.types:  # a model that reads images reads PDFs through input_file
        fetched = media.url_types | ({PDF} if profile.provider == "openai" else set())
        media = dataclasses.replace(
            media, types=media.types | {PDF}, url_types=frozenset(fetched), max_bytes=_OPENAI_MEDIA.max_bytes
        )
    hosted = (
        frozenset({"web_search", "code_execution", "file_search"}) if profile.provider == "openai" else None
    )
    return profile.replace(
        supports_seed=False,
        unsupported_options=profile.unsupported_options | extra,
        media=media,
        # web_search, code_interpreter and file_search, beside function tools and a text format
        **(
            {"hosted_tools": hosted, "hosted_with_functions": True, "hosted_with_schema": True}
            if hosted
            else {}
        ),
    )


@dataclass(frozen=True)
class CompatServer:
    """An OpenAI-compatible server: where it listens by default and how it authenticates."""

    provider: str
    title: str
    base_url: str
    base_url_env: str
    key_env: str
    key_required: bool
    profile: ModelProfile
    example: str

    def profile_for(self, model: str, provider: str | None = None) -> ModelProfile:
        """This server's profile for `model`, under its own provider name or the one given."""
        return self.profile.replace(name=model, provider=provider or self.provider)


# Images go as image_url (a text-only model on the server refuses them); PDFs are converted locally.
_COMPAT_BASE = TOOLS_ONLY.replace(
    supports_json_schema=True, unsupported_options=_NO_TOP_K, media=IMAGES, empty_tool_turn_content=True
)

COMPAT_SERVERS: dict[str, CompatServer] = {
    s.provider: s
    for s in (
        CompatServer(
            "ollama",
            "Ollama",
            "http://localhost:11434/v1",
            "OLLAMA_BASE_URL",
            "OLLAMA_API_KEY",
            False,
            # Ollama's OpenAI endpoint ignores tool_choice.
            _COMPAT_BASE.replace(supports_tool_choice_required=False),
            "llama3.2",
        ),
        # vLLM and llama.cpp accept top_k as an extra body field.
        CompatServer(
            "vllm",
            "vLLM",
            "http://localhost:8000/v1",
            "VLLM_BASE_URL",
            "VLLM_API_KEY",
            False,
            _COMPAT_BASE.replace(unsupported_options=frozenset()),
            "Qwen/Qwen2.5-7B-Instruct",
        ),
        CompatServer(
            "llamacpp",
            "llama.cpp server",
            "http://localhost:8080/v1",
            "LLAMACPP_BASE_URL",
            "LLAMACPP_API_KEY",
            False,
            # llama-cpp-python answers tool_choice "required" in text (the choice is ignored)
            _COMPAT_BASE.replace(unsupported_options=frozenset(), supports_tool_choice_required=False),
            "default",
        ),
        CompatServer(
            "lmstudio",
            "LM Studio",
            "http://localhost:1234/v1",
            "LMSTUDIO_BASE_URL",
            "LMSTUDIO_API_KEY",
            False,
            _COMPAT_BASE,
            "qwen2.5-7b-instruct",
        ),
        CompatServer(
            "nim",
            "NVIDIA NIM",
            "https://integrate.api.nvidia.com/v1",
            "NIM_BASE_URL",
            "NVIDIA_API_KEY",
            True,
            _COMPAT_BASE,
            "meta/llama-3.1-8b-instruct",
        ),
        # HF's router speaks the OpenAI chat format; response_format support depends on the backend.
        CompatServer(
            "hf",
            "Hugging Face inference endpoints",
            "https://router.huggingface.co/v1",
            "HF_BASE_URL",
            "HF_TOKEN",
            True,
            _COMPAT_BASE.replace(supports_json_schema=False),
            "meta-llama/Llama-3.1-8B-Instruct",
        ),
    )
}


PROFILE_NAMES = ("openai", *COMPAT_SERVERS)  # what `profile=` and `--profile` take by name
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "0.0.0.0", "::1"})


def compatible_profile(model: str, base_url: str) -> ModelProfile:
    """The profile of `openai/MODEL` at a server that is not OpenAI's: a known server's when the URL
    is its default address on this machine (llama.cpp on :8080, Ollama on :11434...), otherwise the
    generic compatible one: no strict mode, no schema with tools, and a forced tool choice sent
    when asked but not relied on (`auto` with tools and a schema picks deferred; an explicit `tool`
    goes on as deferred when the model never calls the output tool). The provider stays "openai",
    the prefix the user named."""
    from urllib.parse import urlsplit

    url = urlsplit(base_url)
    for server in COMPAT_SERVERS.values():
        known = urlsplit(server.base_url)
        if known.hostname in _LOCAL_HOSTS and url.hostname in _LOCAL_HOSTS and known.port == url.port:
            return server.profile_for(model, "openai")
    return _COMPAT_BASE.replace(name=model, provider="openai", tool_choice_untrusted=True)


def named_profile(name: str, model: str, provider: str = "openai") -> ModelProfile:
    """A profile by name, for a server its URL does not tell apart: "openai" (OpenAI's family
    profile, e.g. a proxy or gateway in front of OpenAI) or a compatible server's ("vllm",
    "llamacpp", "ollama", ...)."""
    if name == "openai":
        return openai_profile(model, provider)
    if name not in PROFILE_NAMES:
        names = ", ".join(repr(n) for n in PROFILE_NAMES)
        raise ValueError(f"unknown profile {name!r}: name one of {names}, or give a ModelProfile")
    return COMPAT_SERVERS[name].profile_for(model, provider)


def is_foreign_url(base_url: str | None) -> bool:
    """Whether a base URL points at a server other than OpenAI's own (an OpenAI-compatible one,
    whose request model may differ from OpenAI's: e.g. content typed as a string)."""
    if not base_url:
        return False
    from urllib.parse import urlsplit

    return (urlsplit(base_url).hostname or "").lower() != "api.openai.com"
