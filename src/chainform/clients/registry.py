"""Model names to clients: "provider/model", aliases, and a listing of known models.

Resolving a name imports only the adapter it needs, and listing models imports no provider SDK.

`Provider` is the one descriptor of a provider prefix, read by the registry and by every adapter:
how "prefix/model" becomes a client (its factory, imported on first use, so listing models
imports no SDK), which SDK that needs and the extra that installs it, where the key is found, and
what `chainform models` lists. `PROVIDERS` is the table of them. An adapter's `create_client`
finds its own entry there; `Provider.connect` does the steps the SDK-backed ones share: import
the SDK (naming the extra when it is missing), resolve the key (argument, environment, keys file)
and build the SDK client with the provider's retry and timeout spelling.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from chainform.clients._hooks import hooks_of
from chainform.clients._wire import import_sdk, resolve_key
from chainform.clients.base import ChatClient, Middleware
from chainform.clients.profiles.openai import OPENAI_MODELS
from chainform.errors import ModelNotFoundError
from chainform.types import ModelProfile, Timeout, TimeoutLike

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


for _name in OPENAI_MODELS:  # bare OpenAI model names ("gpt-4o-mini") are aliases too
    _ALIASES.setdefault(_name, f"openai/{_name}")


def register_alias(alias: str, target: str) -> None:
    """Make `alias` resolve to `target` (a "provider/model" name or another alias)."""
    if not alias or not alias.strip() or not target or not target.strip():
        raise ValueError("alias and target must be non-empty names")
    if alias == target:
        raise ValueError(f"alias {alias!r} cannot point to itself")
    _ALIASES[alias.strip()] = target.strip()


def aliases() -> dict[str, str]:
    """Every alias: the built-in and registered ones, then the user's (`chainform aliases set`)."""
    return {**_ALIASES, **user_aliases()}


MAX_ALIASES_BYTES = 1_000_000
"""An aliases file larger than this is refused (it is names, not data)."""


def user_aliases_path() -> Path:
    """`<chainform home>/aliases.json`: the aliases `chainform aliases set` saved."""
    from chainform._paths import home_path

    return home_path() / "aliases.json"


def user_aliases() -> dict[str, str]:
    """The user's saved aliases (alias -> model name); none when the file does not exist."""
    from chainform.errors import AttachmentError
    from chainform.types._attachment import read_regular

    path = user_aliases_path()
    if not path.exists() and not path.is_symlink():
        return {}
    try:  # a file edited by hand: a FIFO or a link to a device is refused, never waited on
        text = read_regular(path, MAX_ALIASES_BYTES, f"the aliases file {path}").decode("utf-8")
    except AttachmentError as exc:
        raise ModelNotFoundError(f"{str(exc).split('; give', 1)[0]}; fix or delete it") from None
    except UnicodeDecodeError:
        text = ""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        data = None
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ModelNotFoundError(
            f"the aliases file {path} is not a JSON object of alias -> model; fix or delete it"
        )
    return {str(k): v for k, v in data.items()}


def shadowed_name(alias: str) -> str | None:
    """What `alias` would hide if it became a user alias: a built-in alias, a provider or a model
    name that already resolves; None when the name is free (or is already a user alias)."""
    name = alias.strip()
    if name in _ALIASES:
        return f"the built-in alias {name!r} (of {_ALIASES[name]})"
    if name in PROVIDERS:
        return f"the provider {name!r}"
    provider, slash, _ = name.partition("/")
    if slash and provider in PROVIDERS:
        return f"a model name of the provider {provider!r}"
    if _find_known(name) is not None:
        return f"the model {name!r}"
    return None


def save_user_alias(alias: str, target: str) -> str:
    """Save `alias` for `target` (which must resolve); returns the "provider/model" it reaches.
    `ValueError` for a name that would shadow a model, provider or built-in alias, or that is blank."""
    from chainform._paths import home, write_private_json

    name, target = alias.strip(), target.strip()
    if not name or not target:
        raise ValueError("an alias and its model must be non-empty names")
    if any(ch.isspace() for ch in name):
        raise ValueError(f"the alias {alias!r} holds whitespace")
    hidden = shadowed_name(name)
    if hidden is not None:
        raise ValueError(f"the alias {name!r} would shadow {hidden}; choose another name")
    saved = user_aliases()
    saved[name] = target
    provider, model = _resolve(target, saved)  # a loop back through the alias itself is refused too
    home()
    write_private_json(user_aliases_path(), saved)
    return f"{provider}/{model}" if model else provider


def remove_user_alias(alias: str) -> bool:
    """Forget a saved alias; True when there was one."""
    from chainform._paths import write_private_json

    saved = user_aliases()
    if saved.pop(alias.strip(), None) is None:
        return False
    write_private_json(user_aliases_path(), saved)
    return True


def providers() -> dict[str, Provider]:
    return dict(PROVIDERS)


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
    """(provider, model) for a name or alias (the user's saved aliases included);
    `ModelNotFoundError` with suggestions otherwise."""
    if not isinstance(name, str) or not name.strip():
        raise ModelNotFoundError("a model name is required, e.g. 'openai/gpt-4.1-mini' or 'local'")
    return _resolve(name, user_aliases())


def _resolve(name: str, saved: Mapping[str, str]) -> tuple[str, str]:
    """`resolve_name` with the user's aliases given (read once per resolution)."""
    current = name.strip()
    seen: set[str] = set()
    while current in _ALIASES or current in saved:
        if current in seen:
            raise ModelNotFoundError(f"alias loop while resolving {name!r}: {sorted(seen)}")
        seen.add(current)
        current = _ALIASES.get(current) or saved[current]
    provider, slash, model = current.partition("/")
    if slash and provider in PROVIDERS and model.strip():
        return provider, model.strip()
    if not slash and current in PROVIDERS:
        if PROVIDERS[current].full_name:
            return current, ""
        raise ModelNotFoundError(f"{name!r} names a provider; add a model, e.g. '{current}/<model>'")
    if not slash:
        found = _find_known(current)
        if found is not None:
            return found, current
    raise ModelNotFoundError(_unknown_message(name, provider if slash else None))


def _find_known(model: str) -> str | None:
    """The provider whose listing has exactly `model` (so "claude-haiku-4-5" needs no prefix)."""
    for provider, entry in PROVIDERS.items():
        if model in entry.known():
            return provider
    return None


def _unknown_message(name: str, provider: str | None) -> str:
    if provider is not None and provider not in PROVIDERS:
        close = difflib.get_close_matches(provider, list(PROVIDERS), n=3, cutoff=0.5)
        hint = f" Did you mean: {', '.join(c + '/...' for c in close)}?" if close else ""
        return f"Unknown provider {provider!r} in model name {name!r}.{hint} Providers: {', '.join(sorted(PROVIDERS))}."
    candidates = list(aliases()) + [m.name for m in list_models()]
    close = difflib.get_close_matches(name, candidates, n=5, cutoff=0.5)
    hint = f" Close matches: {', '.join(close)}." if close else ""
    return (
        f"Unknown model {name!r}.{hint} Use 'provider/model' (providers: {', '.join(sorted(PROVIDERS))}) "
        "or see `chainform models`."
    )


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
    entry = PROVIDERS[provider]
    client: ChatClient
    if entry.full_name:
        if (
            key is not None
            or base_url is not None
            or any(kwargs.get(k) is not None for k in ("timeout", "profile"))
        ):
            raise ValueError(
                f"{provider!r} models run in-process and take no key, base_url, timeout or profile"
            )
        client = entry.create_client(f"{provider}/{model}" if model else provider, **kwargs)
    else:
        client = entry.create_client(model, key=key, base_url=base_url, **kwargs)
    return client


def list_models() -> list[ModelInfo]:
    """Every model the registry knows by name, with aliases and capabilities; imports no SDK."""
    reverse: dict[str, list[str]] = {}
    saved = user_aliases()
    for alias in {**_ALIASES, **saved}:
        try:
            provider, model = _resolve(alias, saved)
        except ModelNotFoundError:
            continue
        reverse.setdefault(f"{provider}/{model}", []).append(alias)
    out: list[ModelInfo] = []
    for provider, entry in PROVIDERS.items():
        for model, profile in entry.known().items():
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


C = TypeVar("C", bound=ChatClient)

SdkFactory = Callable[..., Any]
"""`(sdk_module, key, base_url, max_retries, timeout: Timeout, **kwargs) -> SDK client`."""


@dataclass(frozen=True)
class Provider:
    """How the clients of one provider prefix are made and listed.

    `factory`: "module:function" making a client, `function(model, **fixed, **kwargs)`;
    `fixed`: keyword arguments it always gets (the OpenAI wire format's servers share one adapter);
    `sdk_module`, `extra`: the SDK it imports and the pip extra that installs it;
    `key_env`: the environment variable holding the key, None when the SDK finds its own
    credentials (Bedrock: the AWS chain; the raw `key` argument then goes to the SDK factory);
    `known_models`: "module:ATTRIBUTE" naming a dict name -> ModelProfile, or a callable returning
    one, for `list_models()`; `full_name`: the adapter gets "prefix/model" whole (local models).
    """

    name: str
    factory: str
    fixed: Mapping[str, Any] = field(default_factory=dict)
    sdk_module: str | None = None
    extra: str = ""
    key_env: str | None = None
    max_retries: int = 2
    known_models: str | Callable[[], Mapping[str, ModelProfile]] | None = None
    full_name: bool = False
    needs_key: bool = True
    description: str = ""

    def create_client(self, model: str, **kwargs: Any) -> Any:
        """A client for `model` from this provider's adapter: `factory` ("module:function", imported
        now) called as `function(model, **fixed, **kwargs)`."""
        module, _, function = self.factory.partition(":")
        make: Callable[..., Any] = getattr(importlib.import_module(module), function)
        return make(model, **self.fixed, **kwargs)

    def connect(
        self,
        adapter: Callable[..., C],
        sdk: SdkFactory,
        model: str,
        *,
        key: str | None = None,
        base_url: str | None = None,
        max_retries: int | None = None,
        timeout: TimeoutLike = None,
        profile: ModelProfile | None = None,
        middleware: Sequence[Middleware] = (),
        adapter_options: tuple[str, ...] = (),
        **kwargs: Any,
    ) -> C:
        """`adapter(model, sdk_client, ...)` on the SDK client `sdk` builds: the steps an SDK-backed
        adapter's `create_client` shares. Keyword arguments named in `adapter_options` go to the
        adapter, the others to the SDK factory; the key is handed over to be masked in errors."""
        if self.sdk_module is None:
            raise ValueError(f"{self.name!r} names no SDK")
        module = import_sdk(self.sdk_module, self.extra)
        secret = resolve_key(self.name, key, self.key_env) if self.key_env else None
        options = {name: kwargs.pop(name) for name in adapter_options if name in kwargs}
        retries = self.max_retries if max_retries is None else max_retries
        limits = Timeout.of(timeout)

        def build() -> Any:  # an SDK client chainform built is its adapter's to close and build again
            built = sdk(module, secret if self.key_env else key, base_url, retries, limits, **kwargs)
            hooks = hooks_of(built)
            if hooks is not None:
                hooks.rebuild = build
            return built

        client = build()
        if secret is not None:
            options["secret"] = secret
        return adapter(model, client, profile=profile, middleware=middleware, timeout=limits, **options)

    def known(self) -> dict[str, ModelProfile]:
        """The models `list_models()` shows for this provider; none when its adapter is not installed."""
        if self.known_models is None:
            return {}
        try:
            value: Any = self.known_models
            if isinstance(value, str):
                module, _, attr = value.partition(":")
                value = getattr(importlib.import_module(module), attr)
        except ImportError:
            return {}
        return dict(value() if callable(value) else value)


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


def _openai_wire(name: str, factory: str, server: str, key_env: str, **listing: Any) -> Provider:
    """A provider speaking OpenAI's wire format (`server`: whose settings and keys it uses)."""
    return Provider(name, factory, {"provider": server}, "openai", "openai", key_env, **listing)


def _table() -> dict[str, Provider]:
    from chainform.clients.profiles.openai import COMPAT_SERVERS

    entries = [
        _openai_wire("openai", _CHAT, "openai", "OPENAI_API_KEY", known_models=_openai_models),
        _openai_wire(
            "openai-responses",
            _RESPONSES,
            "openai",
            "OPENAI_API_KEY",
            description="OpenAI models through the Responses API",
        ),
        _openai_wire(
            "azure",
            _CHAT,
            "azure",
            "AZURE_OPENAI_API_KEY",
            description="Azure OpenAI deployment (Chat Completions)",
        ),
        _openai_wire(
            "azure-responses",
            _RESPONSES,
            "azure",
            "AZURE_OPENAI_API_KEY",
            description="Azure OpenAI deployment (Responses API)",
        ),
        _openai_wire(
            "azure-ai",
            _CHAT,
            "azure-ai",
            "AZURE_AI_API_KEY",
            known_models="chainform.clients.profiles.azure_ai:KNOWN_MODELS",
            description="Azure AI Foundry deployment (Llama, Mistral, DeepSeek, Phi, ...; OpenAI-compatible v1)",
        ),
        Provider(
            "anthropic",
            "chainform.clients.anthropic:create_client",
            sdk_module="anthropic",
            extra="anthropic",
            key_env="ANTHROPIC_API_KEY",
            known_models="chainform.clients.profiles.anthropic:KNOWN_MODELS",
        ),
        Provider(
            "gemini",
            "chainform.clients.gemini:create_client",
            sdk_module="google.genai",
            extra="gemini",
            key_env="GEMINI_API_KEY",
            max_retries=4,
            known_models="chainform.clients.profiles.gemini:KNOWN_MODELS",
        ),
        Provider(
            "bedrock",
            "chainform.clients.bedrock:create_client",
            sdk_module="boto3",
            extra="bedrock",
            max_retries=3,
            known_models="chainform.clients.profiles.bedrock:KNOWN_MODELS",
        ),
        Provider(
            "local",
            "chainform.local:create_client",
            known_models=_local_models,
            full_name=True,
            needs_key=False,
            description="embedded model, runs offline on the CPU",
        ),
        Provider(
            "onnx",
            "chainform.local:create_client",
            full_name=True,
            needs_key=False,
            description="an ONNX Runtime GenAI model folder you bring (onnx/<folder>), offline on the CPU",
        ),
    ]
    entries += [
        _openai_wire(
            name,
            _CHAT,
            name,
            server.key_env,
            known_models=functools.partial(_compat_models, name),
            needs_key=server.key_required,
            description=f"{server.title} (OpenAI-compatible, default {server.base_url}; any model it serves)",
        )
        for name, server in COMPAT_SERVERS.items()
    ]
    return {entry.name: entry for entry in entries}


PROVIDERS: dict[str, Provider] = _table()
"""Every provider prefix chainform knows, by name."""
