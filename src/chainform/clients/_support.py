"""Pieces the Anthropic, Gemini and Bedrock adapters share, so each adapter holds only its wire format.

Profile lookup by model family, option rejection driven by `ModelProfile.unsupported_options`,
schema conversion through `chainform.schema.dialects` (when present), key resolution, and the
bookkeeping that lets a broken stream surface what already arrived.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from chainform.clients._errors import classify, is_retryable
from chainform.errors import ProviderError, StreamInterruptedError, UnsupportedOptionError
from chainform.types import (
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    FunctionCallContent,
    Message,
    ModelProfile,
    Role,
    SchemaDialect,
    ToolMode,
)

# Dated snapshots, version tags and "-latest"/"-0" aliases all belong to one family.
_VERSION_SUFFIX = re.compile(r"(-\d{8})?(-v\d+(:\d+)?)?(-latest|-0)?$")
# Cross-region inference profiles on Bedrock ("us.anthropic.claude-...") name the same model.
_REGION_PREFIX = re.compile(r"^(us|eu|apac|global|jp|au|ca|us-gov)\.")


def family_stem(model: str) -> str:
    """`model` without region prefix, snapshot date or version tag."""
    return _VERSION_SUFFIX.sub("", _REGION_PREFIX.sub("", model))


def profile_for(model: str, known: Mapping[str, ModelProfile], fallback: ModelProfile) -> ModelProfile:
    """The profile of `model`: an exact entry, else the longest family that prefixes it, else fallback."""
    if model in known:
        return known[model]
    wanted = _REGION_PREFIX.sub("", model)
    best: ModelProfile | None = None
    best_len = -1
    for key, profile in known.items():
        stem = family_stem(key)
        if wanted.startswith(stem) and len(stem) > best_len:
            best, best_len = profile, len(stem)
    return (best or fallback).replace(name=model)


def reject_unsupported(options: ChatOptions, profile: ModelProfile) -> None:
    """Raise a clear error for set options the model has no equivalent for (instead of dropping them)."""
    bad = sorted(set(options.set_fields()) & profile.unsupported_options)
    if bad:
        raise UnsupportedOptionError(
            f"{profile.provider} model {profile.name!r} does not support option(s): {', '.join(bad)}",
            provider=profile.provider,
        )


def tool_mode(options: ChatOptions) -> ToolMode | None:
    """The effective tool mode: None when no tools are offered (nothing to choose from)."""
    if not options.tools:
        return None
    return options.tool_mode or ToolMode.AUTO


def convert_schema(schema: dict[str, Any], dialect: SchemaDialect) -> dict[str, Any]:
    """The schema in the provider's dialect (the engine restores outputs against the original).

    Until `chainform.schema.dialects` is available the schema is sent unchanged.
    """
    try:
        from chainform.schema.dialects import convert  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return schema
    converted = convert(schema, dialect).schema
    return dict(converted) if isinstance(converted, dict) else {}  # `true` accepts anything


def resolve_key(provider: str, key: str | None, env_var: str) -> str:
    """An explicit key wins, then the environment, then the user's keys file."""
    from chainform.keys import require_key

    return require_key(provider, explicit=key, env_var=env_var)


def import_sdk(module: str, extra: str) -> Any:
    """Import a provider SDK on first use, saying which extra installs it when it is missing."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"this adapter needs {module}: pip install 'chainform[{extra}]'") from exc


def split_system(messages: Sequence[Message]) -> tuple[str | None, list[Message]]:
    """System messages joined into one instruction (these APIs take it apart), and the rest in order."""
    system = [m.text for m in messages if m.role == Role.SYSTEM and m.text]
    rest = [m for m in messages if m.role != Role.SYSTEM]
    return ("\n\n".join(system) or None), rest


def call_names(messages: Sequence[Message]) -> dict[str, str]:
    """call_id -> tool name, for providers whose tool results must repeat the name."""
    return {c.call_id: c.name for m in messages for c in m.contents if isinstance(c, FunctionCallContent)}


class StreamGuard:
    """Remembers the updates yielded so far so a failure can carry them as a partial response."""

    def __init__(self, provider: str, secret: str | None = None) -> None:
        self.provider = provider
        self.secret = secret
        self.updates: list[ChatResponseUpdate] = []

    def seen(self, update: ChatResponseUpdate) -> ChatResponseUpdate:
        self.updates.append(update)
        return update

    def partial(self) -> ChatResponse | None:
        return ChatResponse.from_updates(self.updates) if self.updates else None

    def error(
        self,
        message: str,
        *,
        status: int | None = None,
        request_id: str | None = None,
        retryable: bool | None = None,
        retry_after: float | None = None,
    ) -> ProviderError:
        """A ProviderError; a StreamInterruptedError carrying the partial response once data arrived."""
        from chainform.keys import redact

        message = redact(message, self.secret)  # a provider may echo the key back
        retry = retryable if retryable is not None else is_retryable(status)
        kind = classify(status, message)
        if self.updates:
            return StreamInterruptedError(
                message,
                partial_response=self.partial(),
                status=status,
                provider=self.provider,
                request_id=request_id,
                retryable=retry,
                kind=kind,
            )
        return ProviderError(
            message,
            status=status,
            provider=self.provider,
            request_id=request_id,
            retryable=retry,
            kind=kind,
            retry_after=retry_after,
        )
