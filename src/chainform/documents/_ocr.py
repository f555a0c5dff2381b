"""Text from images, offline: rapidocr-onnxruntime (PP-OCR models shipped in its wheel, run on onnxruntime).

rapidocr returns one box per run of text; a receipt's `Coffee` and its `3.20` are two boxes far apart on
one line. The model needs them on one line, so the boxes are grouped back into lines in reading order
here (rapidocr has no such grouping of its own). An image file is opened with Pillow first: its size
is checked against the pixel limit before it is decoded, and every frame of a multi-page TIFF or GIF
is read (at most the page limit).
"""

from __future__ import annotations

import io
import re
import threading
import warnings
from dataclasses import dataclass
from typing import Any

from chainform.documents._limits import Watch
from chainform.errors import AttachmentError

_engine: Any = None
_engine_lock = threading.Lock()
_MIN_SCORE = 0.5
_IN_MEMORY = re.compile(r"<_io\.BytesIO object at 0x[0-9a-fA-F]+>")


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


def image_lines(data: bytes, watch: Watch) -> list[str]:
    """The lines of text of every frame of an encoded image (a page after another for a TIFF or GIF)."""
    import numpy
    from PIL import Image

    try:
        with warnings.catch_warnings():  # the pixel limit below is the one that counts
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
    except Exception as exc:  # Pillow raises what its format's parser raised
        raise AttachmentError(f"{watch.name}: the image does not decode ({_why(exc)})") from None
    with image:
        frames = getattr(image, "n_frames", 1)
        watch.pages(frames)
        lines: list[str] = []
        for index in range(frames):
            watch.check()
            try:
                image.seek(index)
                watch.pixels(*image.size)
                pixels = numpy.asarray(image.convert("RGB"))[:, :, ::-1]  # rapidocr reads BGR arrays
            except AttachmentError:
                raise
            except Exception as exc:
                raise AttachmentError(f"{watch.name}: the image does not decode ({_why(exc)})") from None
            lines += ocr_lines(numpy.ascontiguousarray(pixels))
        return lines


def _why(exc: BaseException) -> str:
    """The error without the in-memory file's repr (`<_io.BytesIO object at 0x...>`)."""
    if type(exc).__name__ == "UnidentifiedImageError":
        return "not an image format Pillow reads"
    return _IN_MEMORY.sub("the data", f"{type(exc).__name__}: {exc}")


def ocr_lines(image: Any) -> list[str]:
    """The lines of text in `image` (encoded bytes or a numpy array), top to bottom, left to right."""
    try:
        found, _ = _ocr_engine()(image)
    except AttachmentError:
        raise
    except Exception as exc:  # rapidocr raises whatever its image loader raised
        raise AttachmentError(f"the image does not decode ({_why(exc)})") from None
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
