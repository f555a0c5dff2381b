"""`--otel` for the commands that run chains: OTLP/HTTP export for this command (chainform/otel/_export.py).

Nothing of OpenTelemetry is imported unless tracing was asked for.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

_CONTENT = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


def otel_option(command: F) -> F:
    return click.option(
        "--otel",
        is_flag=True,
        help="Send traces and metrics over OTLP/HTTP to $OTEL_EXPORTER_OTLP_ENDPOINT (also CHAINFORM_OTEL=1; "
        "needs chainform[otel] with opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http).",
    )(command)


def start_tracing(flag: bool) -> None:
    """Start exporting when asked; the command's context flushes and stops it when it ends."""
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
