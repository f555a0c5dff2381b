"""What a model gets for an attachment: the file itself where its profile accepts the type, else text
converted locally (PDF text layer, OCR, decoded text files), else a clear error before anything is sent."""

from __future__ import annotations

import importlib.util
import io
import threading
import warnings
from dataclasses import dataclass

from chainform.documents._limits import Watch
from chainform.errors import AttachmentError
from chainform.types import MediaSupport, ModelProfile
from chainform.types._attachment import Attachment, decode_text, is_text_type
from chainform.types._content import DataContent, TextContent, UriContent

MAX_CONVERT_BYTES = 100_000_000
_CONVERTIBLE = (
    "application/pdf",
    "image/png",
    "image/jpeg",
    "image/webp",
    "image/gif",
    "image/bmp",
    "image/tiff",
)


@dataclass(frozen=True)
class Conversion:
    """How one attachment reached the model: `method` is "as is", "PDF text", "OCR", "PDF text + OCR"
    or "text"; `detail` counts what came out ("3 pages", "14 lines")."""

    name: str
    media_type: str
    method: str
    detail: str
    sha256: str | None = None

    def summary(self) -> str:
        """`receipt.png: OCR, 14 lines`: what --td, the log and the chain's records say."""
        return f"{self.name}: {self.method}, {self.detail}" if self.detail else f"{self.name}: {self.method}"


def can_convert(media_type: str) -> bool:
    return media_type in _CONVERTIBLE or is_text_type(media_type)


def to_text(attachment: Attachment, stop: threading.Event | None = None) -> tuple[str, Conversion]:
    """The attachment as text, converted locally within its `limits`; AttachmentError when no
    converter fits or a limit is passed. `stop` set: the conversion ends at the next page."""
    media_type = attachment.media_type()
    data = attachment.read(MAX_CONVERT_BYTES)
    name = attachment.name or "attachment"
    watch = Watch(name, attachment.limits, stop)
    if media_type == "application/pdf":
        from chainform.documents._pdf import pdf_text

        pdf = pdf_text(data, name, watch)
        method = (
            "PDF text"
            if not pdf.ocr_pages
            else "OCR"
            if pdf.ocr_pages == len(pdf.pages)
            else "PDF text + OCR"
        )
        pages = len(pdf.pages)
        return pdf.text, Conversion(name, media_type, method, f"{pages} page{'s' * (pages != 1)}")
    if media_type in _CONVERTIBLE:
        from chainform.documents._ocr import image_lines

        lines = image_lines(data, watch)
        return "\n".join(lines), Conversion(
            name, media_type, "OCR", f"{len(lines)} line{'s' * (len(lines) != 1)}"
        )
    if is_text_type(media_type):
        text = decode_text(data)
        if text is None:
            text = data.decode("utf-8-sig", errors="replace")
        count = text.count("\n") + (not text.endswith("\n"))
        return text, Conversion(name, media_type, "text", f"{count} line{'s' * (count != 1)}")
    raise AttachmentError(f"{name}: no local converter reads {media_type}")


def prepare(
    attachment: Attachment,
    profile: ModelProfile,
    *,
    convert: bool = True,
    stop: threading.Event | None = None,
) -> tuple[DataContent | UriContent | TextContent, Conversion]:
    """The content part `profile`'s model receives for `attachment`, and how it got there. A file
    sent as it is must open (a PDF with pages, an image that decodes); a text file is decoded for any
    model, `convert=False` or not (reading text converts nothing)."""
    media: MediaSupport = profile.media
    media_type = attachment.media_type()
    name = attachment.name or "attachment"
    if media.accepts(media_type):
        if attachment.is_remote and media.fetches(media_type):
            return attachment.to_content(), Conversion(name, media_type, "as is", "URL")
        if attachment.is_remote:
            raise AttachmentError(f"{name}: download it before preparing it (chainform.documents.fetch)")
        check_readable(attachment.read(media.limit(media_type)), media_type, name)
        return attachment.to_content(), Conversion(name, media_type, "as is", _size(attachment))
    if (not convert and not is_text_type(media_type)) or not can_convert(media_type):
        why = (
            "conversion is off" if not convert and can_convert(media_type) else "no local converter reads it"
        )
        raise AttachmentError(
            f"{name}: {profile.provider}/{profile.name} cannot read {media_type} and {why}; "
            f"it accepts {media.describe()}"
        )
    text, conversion = to_text(attachment, stop)
    return TextContent(f"[{conversion.summary()}]\n{text}"), conversion


_DECODED_BY_PILLOW = ("image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp", "image/tiff")


def check_readable(data: bytes, media_type: str, name: str) -> None:
    """AttachmentError for a file a model would be sent but could not open: a corrupt, truncated,
    encrypted or zero-page PDF, an image that does not decode. Skipped without the converters."""
    if media_type == "application/pdf" and importlib.util.find_spec("pypdfium2") is not None:
        from chainform.documents._pdf import check_pdf

        check_pdf(data, name)
    elif media_type in _DECODED_BY_PILLOW and importlib.util.find_spec("PIL") is not None:
        from PIL import Image

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
                with Image.open(io.BytesIO(data)) as image:
                    image.verify()
        except Exception:  # Pillow raises what its format's parser raised
            raise AttachmentError(f"{name}: the image does not decode ({media_type})") from None


def _size(attachment: Attachment) -> str:
    size = attachment.size() or 0
    return f"{size / 1_000_000:.1f} MB" if size >= 100_000 else f"{size:,} bytes"
