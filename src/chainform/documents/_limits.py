"""One document's conversion held to its `ConversionLimits`: its page count, the pixels of each page
or image, the seconds of OCR, and a stop (the chain was cancelled, or the program is ending).

Converting runs on a worker thread, page by page; `check()` between pages is where it stops: a
cancelled chain sets `stop`, and at exit (Ctrl-C) the main thread has ended, so the conversion ends
after the page it is on instead of running on while the program waits for it.
"""

from __future__ import annotations

import math
import threading
import time

from chainform.errors import AttachmentError
from chainform.types._attachment import ConversionLimits


class Watch:
    """The limits of one document's conversion, and the clock of its OCR."""

    def __init__(
        self, name: str, limits: ConversionLimits | None, stop: threading.Event | None = None
    ) -> None:
        self.name = name
        self.limits = limits or ConversionLimits()
        self.stop = stop
        self.started = time.monotonic()

    def pages(self, count: int) -> None:
        """Refuse a document of more pages (or frames) than the limit, before any is read."""
        if count > self.limits.max_pages:
            raise AttachmentError(
                f"{self.name}: {count:,} pages is over the limit of {self.limits.max_pages:,} "
                "(raise it with --max-pages, or ConversionLimits(max_pages=...))"
            )

    def pixels(self, width: int, height: int) -> None:
        """Refuse an image larger than the limit, before it is decoded."""
        if width * height > self.limits.max_pixels:
            raise AttachmentError(
                f"{self.name}: {width:,}x{height:,} pixels is over the limit of {self.limits.max_pixels:,} "
                "(raise it with --max-pixels, or ConversionLimits(max_pixels=...))"
            )

    def scale(self, width: float, height: float, wanted: float) -> float:
        """The render scale for a page of `width` x `height` points: `wanted`, or smaller so that
        the rendered page stays within the pixel limit."""
        area = max(width * height, 1.0)
        return min(wanted, math.sqrt(self.limits.max_pixels / area))

    def check(self) -> None:
        """Between pages: stop when asked or when the program is ending, or when OCR has taken longer
        than its limit."""
        if (self.stop is not None and self.stop.is_set()) or not threading.main_thread().is_alive():
            raise AttachmentError(f"{self.name}: the conversion was stopped")
        took = time.monotonic() - self.started
        if took > self.limits.ocr_seconds:
            raise AttachmentError(
                f"{self.name}: OCR took longer than {self.limits.ocr_seconds:g} s (the limit; raise it "
                "with --ocr-timeout, or ConversionLimits(ocr_seconds=...))"
            )
