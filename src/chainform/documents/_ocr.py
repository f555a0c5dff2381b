"""Text from images, offline: rapidocr-onnxruntime (PP-OCR models shipped in its wheel, run on onnxruntime).

rapidocr returns one box per run of text; a receipt's `Coffee` and its `3.20` are two boxes far apart on
one line. The model needs them on one line, so the boxes are grouped back into lines in reading order
here (rapidocr has no such grouping of its own).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from chainform.errors import AttachmentError

_engine: Any = None
_engine_lock = threading.Lock()
_MIN_SCORE = 0.5


@dataclass(frozen=True)
class _Box:
    text: str
    left: float
    top: float
    bottom: float

    @property
    def height(self) -> float:
        return max(self.bottom - self.top, 1.0)


def _ocr_engine() -> Any:
    """One engine per process: loading its three models takes about half a second."""
    global _engine
    with _engine_lock:
        if _engine is None:
            try:
                from rapidocr_onnxruntime import RapidOCR
            except ImportError as exc:
                raise AttachmentError(
                    "OCR needs rapidocr-onnxruntime: pip install 'chainform[documents]'"
                ) from exc
            _engine = RapidOCR()
        return _engine


def ocr_lines(image: Any) -> list[str]:
    """The lines of text in `image` (encoded bytes or a numpy array), top to bottom, left to right."""
    try:
        found, _ = _ocr_engine()(image)
    except AttachmentError:
        raise
    except Exception as exc:  # rapidocr raises whatever its image loader raised
        raise AttachmentError(f"the image does not decode ({type(exc).__name__}: {exc})") from None
    boxes = []
    for points, text, score in found or []:
        if float(score) < _MIN_SCORE or not str(text).strip():
            continue
        xs = [float(p[0]) for p in points]
        ys = [float(p[1]) for p in points]
        boxes.append(_Box(str(text).strip(), min(xs), min(ys), max(ys)))
    return [" ".join(box.text for box in line) for line in group_lines(boxes)]


def group_lines(boxes: list[_Box]) -> list[list[_Box]]:
    """Boxes that overlap vertically by at least half the smaller one's height share a line."""
    lines: list[list[_Box]] = []
    for box in sorted(boxes, key=lambda b: (b.top + b.bottom) / 2):
        if lines:
            line = lines[-1]
            top = min(b.top for b in line)
            bottom = max(b.bottom for b in line)
            overlap = min(bottom, box.bottom) - max(top, box.top)
            if overlap >= 0.5 * min(box.height, bottom - top):
                line.append(box)
                continue
        lines.append([box])
    return [sorted(line, key=lambda b: b.left) for line in lines]
