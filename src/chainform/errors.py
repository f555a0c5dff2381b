"""Typed errors. Each says which phase failed so callers (and the CLI) can react precisely.

The bottom layer: every other module may raise these, so this one imports no other chainform
module (a response carried by an error is typed `Any`, as `ChainError.responses` is).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal


class ChainformError(Exception):
    """Base class of every error chainform raises on purpose.

    When raised from a chain, `responses` holds every model call made before the failure.
    """

    responses: list[Any] = []  # noqa: RUF012 - replaced per instance by the chain engine
    agent_runs: list[Any] = []  # noqa: RUF012 - subagent runs of the failed chain, set per instance


class HomeError(ChainformError):
    """chainform's home (`CHAINFORM_HOME`, else the user data directory) is not a usable directory:
    the log, keys and saved schemas have nowhere to live. A chain warns and runs unlogged; the CLI
    stops with a usage error."""


class StoreError(ChainformError):
    """The log database cannot be opened, migrated, written or read (or a lookup is ambiguous)."""


class SchemaError(ChainformError, ValueError):
    """A schema given by the user is malformed or cannot be described/converted."""


class JSONLimitError(ChainformError, ValueError):
    """Model-written JSON nested too deeply or too long to parse safely (fed back like any invalid JSON)."""


class AttachmentError(ChainformError, ValueError):
    """An attachment cannot be read, recognised, converted or sent to this model; nothing was sent."""


class HostedToolError(ChainformError, ValueError):
    """A hosted tool (web search, code execution, URL context, file search) this model does not
    have, or cannot combine with the chain's function tools or its schema; raised before any call."""


class TracingSetupError(ChainformError):
    """Tracing cannot start: OpenTelemetry's packages are missing or no collector is named."""


class ModelNotFoundError(ChainformError, LookupError):
    """No model is registered under the requested name or alias."""


class MissingKeyError(ChainformError):
    """The provider needs an API key and none was found (argument, environment or keys file).
    `key_name` (the keys file's name for it) and `env_var` say where one would be read, when known."""

    key_name: str | None = None
    env_var: str | None = None


ProviderErrorKind = Literal[
    "auth",
    "rate_limit",
    "bad_request",
    "tools_with_schema_rejected",
    "response_format_rejected",
    "streaming_rejected",
    "tool_choice_rejected",
    "server",
    "timeout",
    "connection",
]
"""What a provider failure means, whatever its status or wording: the engine reads this, never the message.

response_format_rejected: the structured-output format itself (e.g. json_schema) is not accepted;
streaming_rejected: the request cannot be streamed as sent (e.g. tool calls under "auto");
tool_choice_rejected: a forced tool choice ("required" or a named function) is not accepted."""


def kind_from_status(status: int | None) -> ProviderErrorKind:
    """The meaning of a failure known only by its HTTP status (no status: the connection failed)."""
    if status is None:
        return "connection"
    if status in (401, 403):
        return "auth"
    if status == 429:
        return "rate_limit"
    if status in (408, 504):
        return "timeout"
    if status >= 500:
        return "server"
    return "bad_request"


class ProviderError(ChainformError):
    """The provider failed: HTTP status, auth, rate limit, timeout or a dropped connection.

    `kind` says what it means (see `ProviderErrorKind`); adapters set it from their SDK's errors,
    and when they do not it is derived from the status. `retry_after` is the provider's
    Retry-After in seconds, when it sent one (`model.map` pauses its whole pool that long).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        provider: str | None = None,
        request_id: str | None = None,
        retryable: bool = False,
        kind: ProviderErrorKind | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.status = status
        self.retry_after = retry_after
        self.kind: ProviderErrorKind = kind or kind_from_status(status)
        self.provider = provider
        self.request_id = request_id
        self.retryable = retryable
        bits = [b for b in (provider, f"HTTP {status}" if status else None) if b]
        prefix = f"[{' '.join(bits)}] " if bits else ""
        suffix = f" (request id {request_id})" if request_id else ""
        super().__init__(f"{prefix}{message}{suffix}")
        self.provider_message = message


class UnsupportedOptionError(ProviderError):
    """A chat option was set that this provider has no equivalent for.

    Raised before any request, so it has no status; its kind is "bad_request" (never the
    "connection" a missing status would mean, which `model.map` would retry).
    """

    def __init__(self, message: str, **kwargs: Any) -> None:
        kwargs.setdefault("kind", "bad_request")
        super().__init__(message, **kwargs)


class BatchError(ProviderError):
    """A batch run's row or batch failed: an errored or expired line past its retries, a results
    file naming a row twice, a batch the provider failed; or a provider without a batch API."""


class AllModelsFailedError(ProviderError):
    """Every model of a fallback list failed (`cf.get_model(..., fallback=[...])`); `errors` holds
    (model name, its ProviderError) for each model tried, in order. Its kind, status and
    retry_after are the last model's."""

    def __init__(self, errors: list[tuple[str, ProviderError]]) -> None:
        self.errors = list(errors)
        last = errors[-1][1]
        tried = "; ".join(f"{name}: {exc}" for name, exc in errors)
        super().__init__(
            f"all {len(errors)} models failed: {tried}",
            status=last.status,
            kind=last.kind,
            retryable=last.retryable,
            retry_after=last.retry_after,
        )


class GuardrailError(ChainformError):
    """A guardrail rejected the input or the output of a call."""

    def __init__(self, message: str, *, guardrail: str | None = None, stage: str = "input") -> None:
        self.guardrail = guardrail
        self.stage = stage
        super().__init__(message)


class ToolError(ChainformError):
    """A tool could not be described, found or run."""


class ToolDefinitionError(ToolError, TypeError):
    """A Python callable cannot be turned into a tool (missing annotation, *args, undescribable type)."""


class SandboxUnavailableError(ToolError):
    """The python tool was asked for isolation "strict" and this machine lacks one of its guards."""


class ToolArgumentError(ToolError, ValueError):
    """The model's arguments do not fit the tool's signature. The message names each bad field."""

    def __init__(self, tool: str, errors: list[str]) -> None:
        self.tool = tool
        self.errors = list(errors)
        super().__init__(f"Invalid arguments for tool {tool!r}: " + "; ".join(self.errors))


class MCPServerError(ToolError):
    """An MCP server failed in one phase: ``connect``, ``list`` (its tools) or ``call`` (a tool).

    A ToolError, so a failed call is read by the model and the chain goes on."""

    def __init__(self, message: str, *, server: str, phase: Literal["connect", "list", "call"]) -> None:
        self.server = server
        self.phase = phase
        super().__init__(message)


class UnknownToolError(ToolError, LookupError):
    """The model (or a caller) asked for a tool name that was not registered."""


@dataclass
class Attempt:
    """One try at producing structured output: what the model said and why it was refused."""

    raw_text: str
    error: str
    purpose: str = "chain"


class StructuredOutputGenerationError(ChainformError):
    """Raised inside the middleware chain for ONE failed attempt; a middleware may accept or retry."""

    def __init__(self, message: str, *, raw_text: str, value: Any = None) -> None:
        self.raw_text = raw_text
        self.value = value
        super().__init__(message)


class ChainError(ChainformError):
    """The tool loop failed. `responses` keeps every model call made before the failure."""

    def __init__(self, message: str, *, responses: list[Any] | None = None) -> None:
        self.responses = list(responses or [])
        super().__init__(message)


class ChainInterruptedError(ChainformError):
    """A tool (or a tool hook) raised KeyboardInterrupt: the chain stopped there, the calls it made
    logged (`responses`); `model.map` stops too, writing no row that had not finished, so a resume
    runs them. A typed error, not KeyboardInterrupt itself, which would stop chainform's event loop
    from inside (the CLI exits 130 as for Ctrl-C)."""


class StructuredOutputError(ChainError):
    """Output never validated after all retries; carries every attempt and the last raw text."""

    def __init__(
        self,
        message: str,
        *,
        attempts: list[Attempt],
        responses: list[Any] | None = None,
    ) -> None:
        self.attempts = list(attempts)
        self.last_text = attempts[-1].raw_text if attempts else ""
        super().__init__(message, responses=responses)


class TruncatedOutputError(StructuredOutputError):
    """A call that had to be the answer (the final answer, the formatting call, or a tool call's
    arguments) stopped at the output token limit: a cut answer is never parsed, repaired or
    re-asked with the same limit. `max_tokens` is the limit the call was sent with (None: the
    provider's default), `text` what arrived before the cut, `usage` the call's tokens, `part`
    what was cut ("answer", "formatting" or "tool arguments")."""

    def __init__(
        self,
        message: str,
        *,
        max_tokens: int | None,
        text: str,
        usage: Any = None,
        part: str = "answer",
        attempts: list[Attempt] | None = None,
        responses: list[Any] | None = None,
    ) -> None:
        self.max_tokens = max_tokens
        self.text = text
        self.usage = usage
        self.part = part
        super().__init__(message, attempts=attempts or [Attempt(text, message)], responses=responses)


class FormattingError(ChainError):
    """The deferred (+1) formatting call failed; carries the context it was given."""

    def __init__(
        self,
        message: str,
        *,
        context: str,
        attempts: list[Attempt] | None = None,
        responses: list[Any] | None = None,
    ) -> None:
        self.context = context
        self.attempts = list(attempts or [])
        super().__init__(message, responses=responses)


class BudgetExceededError(ChainError):
    """`max_cost` was reached: the chain ended between two calls. `spent` (USD) is what its calls
    cost; `max_cost` the cap; `responses` the calls made."""

    def __init__(
        self, message: str, *, spent: Decimal, max_cost: Decimal, responses: list[Any] | None = None
    ) -> None:
        self.spent = spent
        self.max_cost = max_cost
        super().__init__(message, responses=responses)


class ArgumentRangeError(ChainformError, ValueError):
    """A count given to the API is outside its documented range (`concurrency=0`, `repeat=10**9`):
    the message names the argument, the value and the range, the same range the CLI's flag takes."""


class PricingError(ChainformError, ValueError):
    """A price or a cap that cannot be used: a negative or non-numeric `--max-cost` / `--price`, a
    malformed prices file, or a cap asked of a model whose price is unknown."""


class ScriptExhaustedError(ChainformError):
    """A ScriptedClient was asked for more replies than its script holds."""


class StreamInterruptedError(ProviderError):
    """A streamed response broke mid-way; `partial_response` (a ChatResponse) joins what arrived
    before the break."""

    def __init__(
        self,
        message: str,
        *,
        partial_response: Any = None,
        status: int | None = None,
        provider: str | None = None,
        request_id: str | None = None,
        retryable: bool = True,
        kind: ProviderErrorKind | None = None,
    ) -> None:
        super().__init__(
            message,
            status=status,
            provider=provider,
            request_id=request_id,
            retryable=retryable,
            kind=kind or "connection",
        )
        self.partial_response = partial_response
