"""What the Chat Completions and Responses wires share: where and how to connect (`ClientSettings`,
keys through the provider's descriptor), the SDK client, the profile, schemas in the model's
dialect, and the SDK's errors typed.

The SDK is imported on first use only. Retries (429 with Retry-After, 5xx, timeouts, dropped
connections before a response) are the SDK's own; we translate what is left after its last try.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chainform._json import copy_json
from chainform.clients._adapter import Endpoint
from chainform.clients._errors import StreamGuard, is_rejection, refuses_forced_choice, retry_after
from chainform.clients._hooks import SdkHooks
from chainform.clients._wire import import_sdk
from chainform.clients.profiles.openai import (
    COMPAT_SERVERS,
    compatible_profile,
    is_foreign_url,
    named_profile,
    openai_profile,
)
from chainform.clients.registry import PROVIDERS
from chainform.errors import ProviderError, SchemaError, UnsupportedOptionError
from chainform.keys import get_key, remember_url, require_key
from chainform.types import (
    ChatOptions,
    FinishReason,
    ModelProfile,
    ResponseFormat,
    Timeout,
    TimeoutLike,
    ToolSpec,
)


@dataclass(frozen=True)
class AzureSettings:
    """Azure OpenAI routing: the deployment is the model name; auth by key or Entra token provider."""

    endpoint: str
    api_version: str
    token_provider: Callable[[], Any] | None = None


@dataclass
class ClientSettings:
    """Everything needed to build the SDK client. `key` is kept out of every repr."""

    provider: str
    base_url: str | None = None
    key: str | None = field(default=None, repr=False)
    max_retries: int = 2
    timeout: Timeout = field(default_factory=Timeout)
    default_headers: dict[str, str] = field(default_factory=dict)
    azure: AzureSettings | None = None
    token_provider: Callable[[], Any] | None = None  # Entra ID bearer tokens instead of a key


AZURE_API_VERSION = "2024-10-21"
AZURE_RESPONSES_API_VERSION = "2025-04-01-preview"
_PLACEHOLDER_KEY = "not-needed"  # the SDK insists on a key; keyless local servers ignore it


def make_settings(
    provider: str,
    *,
    key: str | None = None,
    base_url: str | None = None,
    api_version: str | None = None,
    azure_ad_token_provider: Callable[[], Any] | None = None,
    max_retries: int = 2,
    timeout: TimeoutLike = None,
    default_headers: dict[str, str] | None = None,
    responses: bool = False,
) -> ClientSettings:
    """Where and how to connect for `provider` ("openai", "azure" or a compatible server's name).

    Keys: explicit > environment variable > keys file. A missing required key raises
    `MissingKeyError` naming the variable to set.
    """
    common: dict[str, Any] = {
        "max_retries": max_retries,
        "timeout": Timeout.of(timeout),
        "default_headers": dict(default_headers or {}),
    }
    if provider == "azure":
        endpoint = _endpoint(base_url, "AZURE_OPENAI_ENDPOINT", "Azure OpenAI", "<resource>.openai.azure.com")
        default_version = AZURE_RESPONSES_API_VERSION if responses else AZURE_API_VERSION
        version = api_version or os.environ.get("OPENAI_API_VERSION") or default_version
        azure = AzureSettings(endpoint, version, azure_ad_token_provider)
        if azure_ad_token_provider is None:
            key = require_key("azure", explicit=key, env_var=_key_env("azure"))
        return ClientSettings("azure", base_url=endpoint, key=key, azure=azure, **common)
    if provider == "azure-ai":
        return _foundry_settings(key, base_url, azure_ad_token_provider, api_version, common)
    if api_version is not None or azure_ad_token_provider is not None:
        raise ValueError("api_version and azure_ad_token_provider apply to 'azure/<deployment>' models only")
    server = COMPAT_SERVERS.get(provider)
    if server is not None:
        url = base_url or os.environ.get(server.base_url_env) or server.base_url
        remember_url(url)
        if PROVIDERS[provider].needs_key:
            key = require_key(provider, explicit=key, env_var=_key_env(provider))
        else:
            key = get_key(provider, explicit=key, env_var=_key_env(provider)) or _PLACEHOLDER_KEY
        return ClientSettings(provider, base_url=url, key=key, **common)
    if provider != "openai":
        raise ValueError(f"unknown OpenAI-compatible provider {provider!r}")
    if base_url is None:
        key = require_key("openai", explicit=key, env_var=_key_env("openai"))
    else:  # a custom endpoint (proxy, gateway, local server) may need no key
        key = get_key("openai", explicit=key, env_var=_key_env("openai")) or _PLACEHOLDER_KEY
    return ClientSettings("openai", base_url=base_url, key=key, **common)


def _key_env(provider: str) -> str:
    """The environment variable of `provider`'s key, from its descriptor (`registry.PROVIDERS`)."""
    return PROVIDERS[provider].key_env or ""


def _foundry_settings(
    key: str | None,
    base_url: str | None,
    token_provider: Callable[[], Any] | None,
    api_version: str | None,
    common: dict[str, Any],
) -> ClientSettings:
    """Azure AI Foundry's OpenAI-compatible v1 endpoint (`<resource>/openai/v1`, no api-version)."""
    if api_version is not None:
        raise ValueError("Azure AI Foundry's v1 endpoint takes no api_version")
    endpoint = _endpoint(
        base_url, "AZURE_AI_ENDPOINT", "Azure AI Foundry", "<resource>.services.ai.azure.com"
    )
    url = endpoint.rstrip("/")
    if not url.endswith("/openai/v1"):
        url += "/openai/v1"
    if token_provider is None:
        key = require_key("azure-ai", explicit=key, env_var=_key_env("azure-ai"))
    return ClientSettings("azure-ai", base_url=url, key=key, token_provider=token_provider, **common)


def endpoint(model: str, settings: ClientSettings, profile: ModelProfile | str | None) -> Endpoint:
    """An OpenAI adapter's endpoint: `profile` as given, by name ("openai" or a compatible
    server's: at a base URL not OpenAI's the tool-call turn then carries content "", as compatible
    servers and proxies may type content as a string), else the model's OpenAI family's at OpenAI
    (and Azure); `openai/MODEL` at any other base URL gets a compatible server's."""
    s, url = settings, _base_url(settings)
    if isinstance(profile, str):
        profile = named_profile(profile, model, s.provider)
        if is_foreign_url(url):
            profile = profile.replace(empty_tool_turn_content=True)
    elif profile is None and s.provider == "openai" and url is not None and is_foreign_url(url):
        profile = compatible_profile(model, url)
    elif profile is None:
        profile = openai_profile(model, s.provider)
    return Endpoint(model, s.provider, profile, s.timeout, s.base_url, s.key)


def _base_url(settings: ClientSettings) -> str | None:
    """Where requests go: the base URL given, else (for `openai/`) $OPENAI_BASE_URL, which the SDK
    reads itself, so a foreign server named there is profiled like one given as base_url."""
    if settings.base_url is None and settings.provider == "openai":
        return os.environ.get("OPENAI_BASE_URL") or None
    return settings.base_url


def build_sdk(settings: ClientSettings, hooks: SdkHooks) -> Any:
    """The `openai.AsyncOpenAI` (or `AsyncAzureOpenAI`) client, with chainform's `hooks` installed."""
    spec = PROVIDERS["openai"]
    openai = import_sdk(spec.sdk_module or "openai", spec.extra)
    s = settings
    common: dict[str, Any] = {
        "max_retries": s.max_retries,
        "default_headers": s.default_headers or None,
        "http_client": openai.DefaultAsyncHttpxClient(
            event_hooks=hooks.clocks.http_hooks(
                request=(hooks.splicer.httpx_hook(import_sdk("httpx2", spec.extra)),),
                response=(_no_retry_on_rejection,),
            )
        ),
        "timeout": openai.Timeout(s.timeout.read, connect=s.timeout.connect),
    }
    if s.azure is not None:
        auth: dict[str, Any] = (
            {"azure_ad_token_provider": s.azure.token_provider}
            if s.azure.token_provider is not None
            else {"api_key": s.key}
        )
        return openai.AsyncAzureOpenAI(
            azure_endpoint=s.azure.endpoint, api_version=s.azure.api_version, **auth, **common
        )
    if s.token_provider is not None:
        provider = s.token_provider

        async def bearer() -> str:  # asked per request: Entra tokens expire
            return str(provider())

        return openai.AsyncOpenAI(api_key=bearer, base_url=s.base_url, **common)
    return openai.AsyncOpenAI(api_key=s.key, base_url=s.base_url, **common)


def batch_api(client: Any, path: str) -> Any:
    """OpenAI's Files + Batches API through `client`'s SDK (`map(..., batch=True)`) for the API at
    `path`; None for the servers that only speak OpenAI's wire format (Azure's batches take
    deployments)."""
    if client.provider != "openai":
        return None
    from chainform.clients._openai_batch import OpenAIBatches

    return OpenAIBatches(client, path)


def request_body(
    endpoint: Endpoint, options: ChatOptions, turns_key: str, turns: list[Any], **extra: Any
) -> dict[str, Any]:
    """How both OpenAI APIs' requests start, once the options are checked: the model, the
    conversation under `turns_key`, streamed; then the API's own `extra` fields."""
    endpoint.check_options(options)
    return {"model": options.model_id or endpoint.model, turns_key: turns, "stream": True, **extra}


def convert_schema(endpoint: Endpoint, schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The schema in this model's dialect, and whether strict mode may be asked for.

    Strict mode needs the schema in the profile's dialect (the chain engine restores outputs
    against the original with the same dialect); a schema the dialect cannot express is sent
    unchanged and not strict.
    """
    if not endpoint.profile.supports_strict_schema:
        return schema, False
    try:
        converted = endpoint.in_dialect(schema)
    except SchemaError:  # not expressible strictly: send it as is and let validation judge
        return schema, False
    return (converted, True) if isinstance(converted, dict) else (schema, False)


def tool_definitions(
    endpoint: Endpoint, tools: Sequence[ToolSpec]
) -> list[tuple[ToolSpec, dict[str, Any], bool]]:
    """Each tool's schema in this model's dialect (this request's own copy), and whether it may be strict."""
    return [(tool, *convert_schema(endpoint, copy_json(dict(tool.parameters)))) for tool in tools]


def response_schema(endpoint: Endpoint, fmt: ResponseFormat) -> tuple[dict[str, Any], bool]:
    """The format's schema in this model's dialect (a copy: the request may change it)."""
    source = fmt.schema or {}  # as it is: the chain's own object, whose canonical text is known
    schema, strict = convert_schema(endpoint, source)
    return dict(schema) if schema is source else schema, strict and fmt.strict


def sdk_error(exc: Exception, guard: StreamGuard, opened: bool) -> ProviderError:
    """What the openai SDK raised, typed: status, the provider's own message and the request id;
    after the stream began, a StreamInterruptedError saying how far it got."""
    openai = import_sdk("openai", "openai")
    if opened:
        mapped = sdk_error(exc, guard, False)
        what = "invalid event" if isinstance(exc, ValueError) else "stream broke"
        return guard.error(
            f"{what} after {len(guard.updates)} update(s): {mapped.provider_message}",
            status=mapped.status,
            request_id=mapped.request_id,
            kind=mapped.kind,
            interrupted=True,
        )
    if isinstance(exc, openai.APIStatusError):
        body = exc.body
        message = body.get("message") if isinstance(body, dict) else None
        headers = exc.response.headers
        forced = _forces_tool_choice(exc.response)
        refused = refuses_forced_choice(exc.status_code, str(message or ""), forced)
        return guard.error(
            str(message or exc.message),
            status=exc.status_code,
            request_id=exc.request_id or request_id(headers),
            retry_after=retry_after(headers),
            kind="tool_choice_rejected" if refused else None,
            interrupted=False,
        )
    if isinstance(exc, openai.APITimeoutError):
        return guard.error("request timed out", kind="timeout", interrupted=False)
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        detail = f": {type(cause).__name__}: {cause}" if cause else ""
        return guard.error(f"connection failed{detail}", interrupted=False)
    return guard.error(f"{type(exc).__name__}: {exc}", interrupted=False)


async def _no_retry_on_rejection(response: Any) -> None:
    """A server error that is really a refusal of the request as sent (a 500 naming a rejected
    field) is marked with the SDK's own `x-should-retry: false`: its retries would get the same."""
    if response.status_code < 500 or "x-should-retry" in response.headers:
        return
    await response.aread()
    if is_rejection(response.status_code, response.text) or refuses_forced_choice(
        response.status_code, _error_message(response.text), _forces_tool_choice(response)
    ):
        response.headers["x-should-retry"] = "false"


def _forces_tool_choice(response: Any) -> bool:
    """Whether the request of an HTTP response (httpx) forced a tool choice: "required" or a
    named function."""
    try:
        body = json.loads(response.request.content or b"{}")
    except (AttributeError, RuntimeError, ValueError):  # no request, a streamed body, not JSON
        return False
    choice = body.get("tool_choice") if isinstance(body, dict) else None
    return choice == "required" or isinstance(choice, dict)


def _error_message(text: str) -> str:
    """The `error.message` of an OpenAI-style error body (the whole text when it is not one)."""
    try:
        body = json.loads(text)
    except ValueError:
        return text
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return str(message or "") if isinstance(error, dict) else text


def request_id(headers: Mapping[str, str]) -> str | None:
    """A response's request id: OpenAI's header, else Azure's (API Management's, then the service's)."""
    return headers.get("x-request-id") or headers.get("apim-request-id") or headers.get("x-ms-request-id")


OPENAI_FINISH = {"function_call": FinishReason.TOOL_CALLS}


def reject_unsupported_content(kind: str, provider: str) -> UnsupportedOptionError:
    return UnsupportedOptionError(
        f"{provider} cannot take {kind} content in this position", provider=provider
    )


def _endpoint(base_url: str | None, env: str, service: str, example: str) -> str:
    """The endpoint from the argument, else the environment; its password is remembered for redaction."""
    endpoint = base_url or os.environ.get(env)
    remember_url(endpoint)
    if not endpoint:
        raise ValueError(f"{service} needs an endpoint: pass base_url='https://{example}' or set {env}")
    return endpoint
