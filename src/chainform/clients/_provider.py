"""`Provider`: one SDK-backed provider as data — its prefix, the environment variable holding its
key, its SDK client factory and its adapter (which carries the profiles).

The steps every adapter's `create_client` took by hand are here once: import the SDK on first use
(naming the extra that installs it), resolve the key (argument, environment, keys file), build the
SDK client with the provider's retry and timeout spelling (a `Timeout`: connect and idle read), hand it to the adapter with the key as
the secret to mask. An adapter module declares `PROVIDER_SPEC = Provider(...)` and exposes
`create_client = PROVIDER_SPEC.create_client` for the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from chainform.clients._common import import_sdk, resolve_key
from chainform.clients.base import ChatClient, Middleware
from chainform.types import ModelProfile, Timeout, TimeoutLike

C = TypeVar("C", bound=ChatClient)

SdkFactory = Callable[..., Any]
"""`(sdk_module, key, base_url, max_retries, timeout: Timeout, **kwargs) -> SDK client`."""


@dataclass(frozen=True)
class Provider(Generic[C]):
    """How "prefix/model" becomes a client.

    `key_env`: the environment variable holding the key; None when the SDK finds its own
    credentials (Bedrock: the AWS chain), in which case the raw `key` argument goes to `sdk` and
    no key is required. `adapter_options`: keyword arguments meant for the adapter, not the SDK.
    """

    prefix: str
    sdk_module: str
    extra: str
    key_env: str | None
    sdk: SdkFactory
    adapter: Callable[..., C]
    max_retries: int = 2
    adapter_options: tuple[str, ...] = ()

    def create_client(
        self,
        model: str,
        *,
        key: str | None = None,
        base_url: str | None = None,
        max_retries: int | None = None,
        timeout: TimeoutLike = None,
        profile: ModelProfile | None = None,
        middleware: Sequence[Middleware] = (),
        **kwargs: Any,
    ) -> C:
        """An adapter for `model`; keyword arguments other than the adapter's go to the SDK client."""
        module = import_sdk(self.sdk_module, self.extra)
        secret = resolve_key(self.prefix, key, self.key_env) if self.key_env else None
        options = {name: kwargs.pop(name) for name in self.adapter_options if name in kwargs}
        retries = self.max_retries if max_retries is None else max_retries
        limits = Timeout.of(timeout)
        client = self.sdk(module, secret if self.key_env else key, base_url, retries, limits, **kwargs)
        if secret is not None:
            options["secret"] = secret
        return self.adapter(model, client, profile=profile, middleware=middleware, timeout=limits, **options)


__all__ = ["Provider"]
