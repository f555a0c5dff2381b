"""The CLI's `--otel` (or CHAINFORM_OTEL=1): spans and metrics sent over OTLP/HTTP to the collector
that OTEL_EXPORTER_OTLP_ENDPOINT names, with opentelemetry-sdk's providers and exporters.

The providers are this command's own (no global is set, so a library user's are never replaced)
and are shut down, flushing what is left, when the command ends. A collector that cannot be
reached costs one warning, `could not send traces to <endpoint>` whether the export failed or
the wait at exit ran out: the chain still answers and is logged. The exporters' own log lines
are silenced in favour of that warning. The export timeout is OTEL_EXPORTER_OTLP_TIMEOUT seconds
when that is a number (at most MAX_TIMEOUT), else DEFAULT_TIMEOUT, and it also bounds the wait at
exit: the flush runs on a helper thread the command waits for that long at most (Ctrl-C ends the
wait), so a collector that accepts and never answers cannot hold the command's exit.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import warnings
from collections.abc import Callable
from typing import Any

from chainform.errors import TracingSetupError
from chainform.keys import redact, remember_url

_PACKAGES = "opentelemetry-sdk opentelemetry-exporter-otlp-proto-http"
_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
_TIMEOUTS = ("OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
DEFAULT_TIMEOUT = 3.0  # seconds; the exporter's own default (10 s) would hold a CLI's exit that long
MAX_TIMEOUT = 10.0  # seconds: the most OTEL_EXPORTER_OTLP_TIMEOUT can make a command wait at exit


def wanted(flag: bool) -> bool:
    """Whether the command was asked to trace (`--otel`, or CHAINFORM_OTEL=1/true/yes)."""
    return flag or os.environ.get("CHAINFORM_OTEL", "").strip().lower() in ("1", "true", "yes", "on")


def start(include_content: bool = False) -> Callable[[], None]:
    """Instrument chainform with OTLP/HTTP exporters; returns the function that flushes and stops."""
    try:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as exc:
        raise TracingSetupError(
            f"--otel needs the chainform[otel-export] extra ({_PACKAGES}; {exc.name} is missing): "
            "pip install 'chainform[otel-export]'"
        ) from None
    endpoint = next((os.environ[v] for v in _ENDPOINTS if os.environ.get(v)), None)
    if endpoint is None:
        raise TracingSetupError(
            "--otel needs a collector: set OTEL_EXPORTER_OTLP_ENDPOINT (e.g. http://localhost:4318)"
        )
    from chainform.otel import instrument, uninstrument

    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)  # one warning of ours instead
    remember_url(endpoint)  # a password or token in it is masked like a key
    shown = redact(endpoint)
    timeout = export_timeout()
    resource = Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME") or "chainform"})
    once = OneWarning(shown)  # one warning for traces and metrics together
    spans = _warned(OTLPSpanExporter(timeout=timeout), once)
    # no atexit shutdown of their own: `stop` is the one flush, and it is bounded
    tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    tracer_provider.add_span_processor(BatchSpanProcessor(spans, export_timeout_millis=timeout * 1000))
    metrics = _warned(OTLPMetricExporter(timeout=timeout), once)
    reader = PeriodicExportingMetricReader(
        metrics, export_interval_millis=60_000, export_timeout_millis=timeout * 1000
    )
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader], shutdown_on_exit=False)
    instrument(tracer_provider, include_content, meter_provider=meter_provider)

    def flush() -> None:
        tracer_provider.shutdown()
        meter_provider.shutdown()

    def stop() -> None:
        uninstrument()
        worker = threading.Thread(target=flush, name="chainform-otel-flush", daemon=True)
        worker.start()
        worker.join(timeout)  # a collector that never answers is given up on, not waited for
        if worker.is_alive():
            once.warn(f": no answer within {timeout:g} s")

    return stop


def export_timeout() -> float:
    """Seconds an export may take (and the command wait at exit): OTEL_EXPORTER_OTLP_TIMEOUT when
    it is a positive number, at most MAX_TIMEOUT; else DEFAULT_TIMEOUT (`abc` does not lift the cap)."""
    for name in _TIMEOUTS:
        raw = os.environ.get(name, "").strip()
        try:
            value = float(raw)
        except ValueError:
            continue
        if math.isfinite(value) and value > 0:
            return min(value, MAX_TIMEOUT)
    return DEFAULT_TIMEOUT


class OneWarning:
    """A command's one `could not send traces to <endpoint>` warning, whichever thread gives it
    first (an exporter's, on a failed export; the command's, when the wait at exit runs out). The
    check and the warning are one step under a lock: a caller that finds the warning given knows
    it is out, so the exit never returns while the exporter's thread is still between the two."""

    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self._lock = threading.Lock()
        self._given = False

    def warn(self, detail: str = "") -> None:
        """Warn (`detail` after the endpoint) unless a warning was given; return once it is out."""
        with self._lock:
            if not self._given:
                self._given = True
                warnings.warn(f"chainform: could not send traces to {self.endpoint}{detail}", stacklevel=3)


def _warned(exporter: Any, once: OneWarning) -> Any:
    """`exporter` whose failed exports warn once (naming the endpoint, credentials masked) instead
    of logging each."""
    export = exporter.export

    def checked(*args: Any, **kwargs: Any) -> Any:
        result = export(*args, **kwargs)
        if getattr(result, "name", "") == "FAILURE":
            once.warn()
        return result

    exporter.export = checked
    return exporter
