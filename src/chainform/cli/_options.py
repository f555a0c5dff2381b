"""Option declarations the commands share: one definition of `-m`, `--strategy`, `--chain-limit`,
`--timeout` and `--otel` for `chainform` and `chainform map`, and the shapes most options take (a
bounded count, a choice, a number of seconds), their default shown in `--help`."""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

if TYPE_CHECKING:
    from chainform.types import Timeout

F = TypeVar("F", bound=Callable[..., Any])

STRATEGY_CHOICES = ("auto", "native", "tool", "prompted", "deferred")
CONTEXT_CHOICES = ("full", "compact", "last")
OPTION_ALIASES = {"max_tokens": "max_output_tokens", "stop": "stop_sequences"}
"""`-o` names llm users type, and the ChatOptions field each stands for."""


def count_option(
    *decls: str, minimum: int, default: int, help: str | None = None, maximum: int | None = None
) -> Callable[[F], F]:
    """An integer option of at least `minimum` (and at most `maximum`, where a larger one would be
    spent as memory: a worker or a run each)."""
    return click.option(
        *decls, type=click.IntRange(min=minimum, max=maximum), default=default, show_default=True, help=help
    )


def renamed_count_option(new: str, old: str, *, minimum: int, default: int, help: str) -> Callable[[F], F]:
    """A count option `new` whose former spelling `old` still works, hidden, with a warning on
    stderr (the value lands in `new`'s parameter; both at once is a usage error)."""
    dest = new.lstrip("-").replace("-", "_")

    def take_new(ctx: click.Context, param: click.Parameter, value: int | None) -> int:
        earlier = ctx.params.get(dest)  # the old spelling, when given before it on the line
        if value is not None and earlier is not None:
            raise click.UsageError(f"give {new} or {old}, not both")
        if value is not None:
            return value
        return earlier if earlier is not None else default

    def take_old(ctx: click.Context, param: click.Parameter, value: int | None) -> None:
        if value is None:
            return
        if ctx.params.get(dest) is not None:
            raise click.UsageError(f"give {new} or {old}, not both")
        click.echo(f"Warning: {old} is now {new}", err=True)
        ctx.params[dest] = value

    def decorate(f: F) -> F:
        f = click.option(
            old, type=click.IntRange(min=minimum), hidden=True, expose_value=False, callback=take_old
        )(f)
        return click.option(
            new, dest, type=click.IntRange(min=minimum), default=None, callback=take_new,
            help=f"{help} [default: {default}]",
        )(f)  # fmt: skip

    return decorate


def choice_option(
    *decls: str, choices: Sequence[str], default: str, help: str | None = None
) -> Callable[[F], F]:
    """An option among `choices`."""
    return click.option(
        *decls, type=click.Choice(list(choices)), default=default, show_default=True, help=help
    )


def model_name_value(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """`-m NAME`: an empty or blank name is a usage error, not the default model."""
    if value is not None and not value.strip():
        raise click.BadParameter("the model name is empty (leave -m out for the default model)")
    return value


def model_option(help: str) -> Callable[[F], F]:
    """`-m/--model NAME`."""
    return click.option("-m", "--model", "model_name", callback=model_name_value, help=help)


model_options_option = click.option(
    "-o",
    "--option",
    "option_pairs",
    type=(str, str),
    multiple=True,
    help="Model option, e.g. -o temperature 0.2; repeatable.",
)
"""`-o KEY VALUE` (repeatable): the model options of a prompt, a chat, `map` and `eval`, checked by
`parse_options`: one spelling on every command."""

strategy_option = choice_option(
    "--strategy", choices=STRATEGY_CHOICES, default="auto", help="How the schema is enforced."
)
chain_limit_option = count_option(
    "--cl", "--chain-limit", "chain_limit", minimum=1, default=5, help="Most model calls in the tool phase."
)


class Seconds(click.FloatRange):
    """A number of seconds within a range (as `click.FloatRange` takes it) that is a number:
    FloatRange lets `nan` through, and `inf` where it has no maximum."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        seconds = super().convert(value, param, ctx)
        if not math.isfinite(seconds):
            self.fail(f"{seconds} is not a number of seconds", param, ctx)
        return seconds


class TimeoutParam(click.ParamType["Timeout"]):
    """`--timeout`: READ or CONNECT,READ seconds, as a `chainform.types.Timeout`."""

    name = "SECONDS"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Timeout:
        from chainform.types import Timeout

        if isinstance(value, Timeout):
            return value
        try:
            return Timeout.parse(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


def _profile_name(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """Checked when given (the profiles load only then): "openai" or a compatible server's name."""
    if value is not None:
        from chainform.clients.profiles.openai import PROFILE_NAMES

        if value not in PROFILE_NAMES:
            names = ", ".join(PROFILE_NAMES)
            raise click.BadParameter(f"{value!r} is not a profile: name one of {names}")
    return value


_profile_option = click.option(
    "--profile",
    callback=_profile_name,
    help="What the server at --base-url can do: 'openai' (a proxy in front of OpenAI) or a compatible "
    "server's name (vllm, llamacpp, ollama...); default: OpenAI's at OpenAI, a compatible server's elsewhere.",
)


_timeout_option = click.option(
    "--timeout",
    type=TimeoutParam(),
    default=None,
    help="Provider call timeouts in seconds: READ (how long the server may send nothing; default 120) "
    "or CONNECT,READ (connect default 10). A call past either fails with exit 3.",
)


def provider_options(command: F) -> F:
    """--timeout and --profile (how the provider is called, prompt and map alike), handed to the
    command as one `provider_settings` dict of those given."""

    @functools.wraps(command)
    def with_settings(*args: Any, timeout: Any = None, profile: str | None = None, **kwargs: Any) -> Any:
        given = {"timeout": timeout, "profile": profile}
        settings = {name: value for name, value in given.items() if value is not None}
        return command(*args, provider_settings=settings, **kwargs)

    return _timeout_option(_profile_option(cast(F, with_settings)))


_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def otel_option(command: F) -> F:
    return click.option(
        "--otel",
        is_flag=True,
        help="Send traces and metrics over OTLP/HTTP to $OTEL_EXPORTER_OTLP_ENDPOINT (also CHAINFORM_OTEL=1; "
        "needs chainform[otel] with opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http).",
    )(command)


def start_tracing(flag: bool) -> None:
    """`--otel`: OTLP/HTTP export for this command (chainform/otel/_export.py); nothing of
    OpenTelemetry is imported unless tracing was asked for. The command's context flushes and
    stops the export when it ends."""
    if not flag and not os.environ.get("CHAINFORM_OTEL"):
        return
    from chainform.errors import TracingSetupError
    from chainform.otel import _export

    if not _export.wanted(flag):
        return
    content = os.environ.get(_CONTENT, "").strip().lower() in ("1", "true")
    try:
        stop = _export.start(include_content=content)
    except TracingSetupError as exc:
        raise click.UsageError(str(exc)) from None
    click.get_current_context().call_on_close(stop)


def rate_options(per: str) -> Callable[[F], F]:
    """`--rpm`, `--tpm` (shared by `per`, e.g. "all workers") and `--transport-retries` of one
    model call (`--retries`, its old name, warns)."""

    def add(command: F) -> F:
        command = renamed_count_option(
            "--transport-retries",
            "--retries",
            minimum=0,
            default=2,
            help="Retries of one model call after a 429, 5xx, timeout or dropped connection.",
        )(command)
        command = click.option(
            "--tpm", type=click.FloatRange(min=0, min_open=True), help=f"Tokens per minute, {per}."
        )(command)
        return click.option(
            "--rpm", type=click.FloatRange(min=0, min_open=True), help=f"Requests per minute, {per}."
        )(command)

    return add


def retry_max_tokens_option(what: str, otherwise: str) -> Callable[[F], F]:
    """`--retry-max-tokens N`: `what` cut off at the token limit is asked once more with N."""
    return click.option(
        "--retry-max-tokens",
        type=click.IntRange(min=1),
        default=None,
        help=f"When {what} is cut off at the token limit (--option max_tokens N), ask once more with "
        f"this larger limit (default: {otherwise}).",
    )


def stop_at_option(what: str, value: str) -> Callable[[F], F]:
    """`--stop-at TOOL` (repeatable): a call of TOOL ends the chain with its result as the value."""
    return click.option(
        "--stop-at",
        "stop_at",
        multiple=True,
        metavar="TOOL",
        help=f"End {what} when the model calls TOOL: its result (validated against --schema) is "
        f"{value}, with no further model call; repeatable.",
    )
