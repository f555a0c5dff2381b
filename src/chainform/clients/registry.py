"""Model names to clients: "provider/model", aliases, and a listing of known models.

Providers are lazy factory strings ("module:function"), so resolving a name imports only the
adapter it needs and listing models imports no provider SDK at all.
"""

from __future__ import annotations

import difflib
import functools
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from chainform.clients.base import ChatClient
from chainform.errors import ModelNotFoundError
from chainform.types import ModelProfile


@dataclass(frozen=True)
class ProviderEntry:
    """How to build clients of one provider.

    `factory` is "module:function" called as `function(model, key=..., base_url=..., **fixed,
    **kwargs)`; with `full_name` it gets the whole name instead (the local provider).
    `known_models` ("module:ATTRIBUTE" naming a dict name -> ModelProfile, or a callable
    returning one) feeds `list_models()`.
    """

    factory: str
    fixed: Mapping[str, Any] = field(default_factory=dict)
    known_models: str | Callable[[], Mapping[str, ModelProfile]] | None = None
    full_name: bool = False
    needs_key: bool = True
    description: str = ""


def _openai_models() -> dict[str, ModelProfile]:
    from chainform.clients.profiles.openai import OPENAI_MODELS, openai_profile

    return {name: openai_profile(name) for name in OPENAI_MODELS}


def _compat_models(server_name: str) -> dict[str, ModelProfile]:
    """The example model of an OpenAI-compatible server, so listings show its profile."""
    from chainform.clients.profiles.openai import COMPAT_SERVERS

    server = COMPAT_SERVERS[server_name]
    return {server.example: server.profile_for(server.example)}


def _local_models() -> dict[str, ModelProfile]:
    from chainform.clients.profiles.local import local_profile

    return {"smollm2": local_profile("smollm2")}


_CHAT = "chainform.clients.openai_chat:create_client"
_RESPONSES = "chainform.clients.openai_responses:create_client"

_PROVIDERS: dict[str, ProviderEntry] = {
    "openai": ProviderEntry(_CHAT, {"provider": "openai"}, "chainform.clients.registry:_openai_models"),
    "openai-responses": ProviderEntry(
        _RESPONSES, {"provider": "openai"}, description="OpenAI models through the Responses API"
    ),
    "azure": ProviderEntry(
        _CHAT, {"provider": "azure"}, description="Azure OpenAI deployment (Chat Completions)"
    ),
    "azure-responses": ProviderEntry(
        _RESPONSES, {"provider": "azure"}, description="Azure OpenAI deployment (Responses API)"
    ),
    "azure-ai": ProviderEntry(
        _CHAT,
        {"provider": "azure-ai"},
        "chainform.clients.profiles.azure_ai:KNOWN_MODELS",
        description="Azure AI Foundry deployment (Llama, Mistral, DeepSeek, Phi, ...; OpenAI-compatible v1)",
    ),
    "anthropic": ProviderEntry(
        "chainform.clients.anthropic:create_client",
        known_models="chainform.clients.profiles.anthropic:KNOWN_MODELS",
    ),
    "gemini": ProviderEntry(
        "chainform.clients.gemini:create_client",
        known_models="chainform.clients.profiles.gemini:KNOWN_MODELS",
    ),
    "bedrock": ProviderEntry(
        "chainform.clients.bedrock:create_client",
        known_models="chainform.clients.profiles.bedrock:KNOWN_MODELS",
    ),
    "local": ProviderEntry(
        "chainform.local:create_client",
        known_models="chainform.clients.registry:_local_models",
        full_name=True,
        needs_key=False,
        description="embedded model, runs offline on the CPU",
    ),
    "onnx": ProviderEntry(
        "chainform.local:create_client",
        full_name=True,
        needs_key=False,
        description="an ONNX Runtime GenAI model folder you bring (onnx/<folder>), offline on the CPU",
    ),
}


def _compat_entries() -> dict[str, ProviderEntry]:
    from chainform.clients.profiles.openai import COMPAT_SERVERS

    return {
        name: ProviderEntry(
            _CHAT,
            {"provider": name},
            functools.partial(_compat_models, name),
            needs_key=server.key_required,
            description=f"{server.title} (OpenAI-compatible, default {server.base_url}; any model it serves)",
        )
        for name, server in COMPAT_SERVERS.items()
    }


_PROVIDERS.update(_compat_entries())

_ALIASES: dict[str, str] = {
    "4.1": "openai/gpt-4.1",
    "4.1-mini": "openai/gpt-4.1-mini",
    "4.1-nano": "openai/gpt-4.1-nano",
    "4o": "openai/gpt-4o",
    "4o-mini": "openai/gpt-4o-mini",
    "claude-sonnet": "anthropic/claude-sonnet-4-5",
    "claude-haiku": "anthropic/claude-haiku-4-5",
    "claude-opus": "anthropic/claude-opus-4-5",
    "gemini-flash": "gemini/gemini-2.5-flash",
    "gemini-flash-lite": "gemini/gemini-2.5-flash-lite",
    "gemini-pro": "gemini/gemini-2.5-pro",
    "local": "local/smollm2",
    "smollm2": "local/smollm2",
}


for _name in _openai_models():  # bare OpenAI model names ("gpt-4o-mini") are aliases too
    _ALIASES.setdefault(_name, f"openai/{_name}")


def register_alias(alias: str, target: str) -> None:
    """Make `alias` resolve to `target` (a "provider/model" name or another alias)."""
    if not alias or not alias.strip() or not target or not target.strip():
        raise ValueError("alias and target must be non-empty names")
    if alias == target:
        raise ValueError(f"alias {alias!r} cannot point to itself")
    _ALIASES[alias.strip()] = target.strip()


def aliases() -> dict[str, str]:
    return dict(_ALIASES)


def providers() -> dict[str, ProviderEntry]:
    return dict(_PROVIDERS)


@dataclass(frozen=True)
class ModelInfo:
    """One listed model: its full name, the aliases that reach it and what it can do."""

    name: str
    provider: str
    aliases: tuple[str, ...]
    profile: ModelProfile
    needs_key: bool = True
    description: str = ""


def resolve_name(name: str) -> tuple[str, str]:
    """(provider, model) for a name or alias; `ModelNotFoundError` with suggestions otherwise."""
    if not isinstance(name, str) or not name.strip():
        raise ModelNotFoundError("a model name is required, e.g. 'openai/gpt-4.1-mini' or 'local'")
    current = name.strip()
    seen: set[str] = set()
    while current in _ALIASES:
        if current in seen:
            raise ModelNotFoundError(f"alias loop while resolving {name!r}: {sorted(seen)}")
        seen.add(current)
        current = _ALIASES[current]
    provider, slash, model = current.partition("/")
    if slash and provider in _PROVIDERS and model.strip():
        return provider, model.strip()
    if not slash and current in _PROVIDERS:
        if _PROVIDERS[current].full_name:
            return current, ""
        raise ModelNotFoundError(f"{name!r} names a provider; add a model, e.g. '{current}/<model>'")
    if not slash:
        found = _find_known(current)
        if found is not None:
            return found, current
    raise ModelNotFoundError(_unknown_message(name, provider if slash else None))


def _find_known(model: str) -> str | None:
    """The provider whose listing has exactly `model` (so "claude-haiku-4-5" needs no prefix)."""
    for provider, entry in _PROVIDERS.items():
        if model in _known(entry):
            return provider
    return None


def _known(entry: ProviderEntry) -> dict[str, ModelProfile]:
    if entry.known_models is None:
        return {}
    try:
        value = _load(entry.known_models) if isinstance(entry.known_models, str) else entry.known_models
    except ImportError:  # an adapter that is not installed lists nothing
        return {}
    table = value() if callable(value) else value
    return dict(table)


def _unknown_message(name: str, provider: str | None) -> str:
    if provider is not None and provider not in _PROVIDERS:
        close = difflib.get_close_matches(provider, list(_PROVIDERS), n=3, cutoff=0.5)
        hint = f" Did you mean: {', '.join(c + '/...' for c in close)}?" if close else ""
        return f"Unknown provider {provider!r} in model name {name!r}.{hint} Providers: {', '.join(sorted(_PROVIDERS))}."
    candidates = list(_ALIASES) + [m.name for m in list_models()]
    close = difflib.get_close_matches(name, candidates, n=5, cutoff=0.5)
    hint = f" Close matches: {', '.join(close)}." if close else ""
    return (
        f"Unknown model {name!r}.{hint} Use 'provider/model' (providers: {', '.join(sorted(_PROVIDERS))}) "
        "or see `chainform models`."
    )


def _load(spec: str) -> Any:
    module, _, attr = spec.partition(":")
    return getattr(importlib.import_module(module), attr)


def get_client(
    name: str, *, base_url: str | None = None, key: str | None = None, **kwargs: Any
) -> ChatClient:
    """A ready ChatClient for a model name, e.g. "openai/gpt-4.1-mini", "ollama/llama3.2", "local".

    `key` and `base_url` override the provider's defaults; other keyword arguments go to the
    provider's factory (max_retries, timeout, api_version, ...).
    """
    from chainform.keys import check_base_url, remember_headers, remember_url, url_has_credentials

    remember_url(base_url)  # a password in the URL is masked like a key in errors and the log
    remember_headers(kwargs)  # so is a key given as a header (default_headers={"api-key": ...})
    check_base_url(base_url)
    if key is not None and url_has_credentials(base_url):
        # the HTTP client sends the URL's user:password as Basic auth in place of the key's header,
        # so a key given beside it would silently not be sent
        raise ValueError(
            "give either a key or user:password in base_url, not both "
            "(the URL's credentials replace the key's Authorization header)"
        )
    provider, model = resolve_name(name)
    entry = _PROVIDERS[provider]
    factory: Callable[..., ChatClient] = _load(entry.factory)
    if entry.full_name:
        if key is not None or base_url is not None or any(kwargs.get(k) is not None for k in ("timeout", "profile")):
            raise ValueError(f"{provider!r} models run in-process and take no key, base_url, timeout or profile")
        return factory(f"{provider}/{model}" if model else provider, **kwargs)
    return factory(model, key=key, base_url=base_url, **entry.fixed, **kwargs)


def list_models() -> list[ModelInfo]:
    """Every model the registry knows by name, with aliases and capabilities; imports no SDK."""
    reverse: dict[str, list[str]] = {}
    for alias in _ALIASES:
        try:
            provider, model = resolve_name(alias)
        except ModelNotFoundError:
            continue
        reverse.setdefault(f"{provider}/{model}", []).append(alias)
    out: list[ModelInfo] = []
    for provider, entry in _PROVIDERS.items():
        for model, profile in _known(entry).items():
            full = f"{provider}/{model}"
            out.append(
                ModelInfo(
                    full,
                    provider,
                    tuple(sorted(reverse.get(full, ()))),
                    profile,
                    entry.needs_key,
                    entry.description,
                )
            )
    return out
