"""OpenTelemetry traces and metrics of chains, tool calls and map runs (GenAI semantic conventions).

    import chainform as cf
    cf.instrument()                       # the global TracerProvider / MeterProvider
    cf.instrument(provider, include_content=True)

Needs only opentelemetry-api (`pip install 'chainform[otel]'`); nothing of OpenTelemetry is
imported until `instrument()` is called, and a chain pays one `None` test per hook while it is off.
The CLI's `--otel` (or CHAINFORM_OTEL=1) exports over OTLP/HTTP (`_export.py`). What each span
carries: docs/production.md.
"""

from __future__ import annotations

from typing import Any

from chainform import _trace
from chainform.errors import TracingSetupError

__all__ = ["instrument", "uninstrument"]


def instrument(
    tracer_provider: Any = None, include_content: bool = False, *, meter_provider: Any = None
) -> None:
    """Trace every chain, model call, tool call and map row from now on.

    `tracer_provider` / `meter_provider`: OpenTelemetry providers (default: the global ones).
    `include_content`: also record prompts, answers, tool arguments and results (keys masked).
    """
    try:
        from chainform.otel._spans import Spans
    except ImportError as exc:
        raise TracingSetupError(
            f"tracing needs opentelemetry-api ({exc}): pip install 'chainform[otel]'"
        ) from None
    _trace.hooks = Spans(tracer_provider, meter_provider, include_content)


def uninstrument() -> None:
    """Stop tracing (spans already started still end)."""
    _trace.hooks = None
