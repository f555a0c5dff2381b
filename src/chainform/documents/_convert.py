"""What a model gets for an attachment: the file itself where its profile accepts the type, else text
converted locally (PDF text layer, OCR, decoded text files), else a clear error before anything is sent."""

from __future__ import annotations

from dataclasses import dataclass

from chainform.errors import AttachmentError
from chainform.types import MediaSupport, ModelProfile
from chainform.types._attachment import Attachment, decode_text, is_text_type
from chainform.types._content import DataContent, TextContent, UriContent

MAX_CONVERT_BYTES = 100_000_000
_CONVERTIBLE = ("application/pdf", "image/png", "image/jpeg", "image/webp", "image/gif", "image/bmp", "image/tiff")


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


def to_text(attachment: Attachment) -> tuple[str, Conversion]:
    """The attachment as text, converted locally; AttachmentError when no converter fits."""
    media_type = attachment.media_type()
    data = attachment.read(MAX_CONVERT_BYTES)
    name = attachment.name or "attachment"
    if media_type == "application/pdf":
        from chainform.documents._pdf import pdf_text

        pdf = pdf_text(data, name)
        method = "PDF text" if not pdf.ocr_pages else "OCR" if pdf.ocr_pages == len(pdf.pages) else "PDF text + OCR"
        pages = len(pdf.pages)
        return pdf.text, Conversion(name, media_type, method, f"{pages} page{'s' * (pages != 1)}")
    if media_type in _CONVERTIBLE:
        from chainform.documents._ocr import ocr_lines

        lines = ocr_lines(data)
        return "\n".join(lines), Conversion(name, media_type, "OCR", f"{len(lines)} line{'s' * (len(lines) != 1)}")
    if is_text_type(media_type):
        text = decode_text(data)
        if text is None:
            text = data.decode("utf-8-sig", errors="replace")
        count = text.count("\n") + (not text.endswith("\n"))
        return text, Conversion(name, media_type, "text", f"{count} line{'s' * (count != 1)}")
    raise AttachmentError(f"{name}: no local converter reads {media_type}")


def prepare(
    attachment: Attachment, profile: ModelProfile, *, convert: bool = True
) -> tuple[DataContent | UriContent | TextContent, Conversion]:
    """The content part `profile`'s model receives for `attachment`, and how it got there."""
    media: MediaSupport = profile.media
    media_type = attachment.media_type()
    name = attachment.name or "attachment"
    if media.accepts(media_type):
        if attachment.is_remote and media.fetches(media_type):
            return attachment.to_content(), Conversion(name, media_type, "as is", "URL")
        if attachment.is_remote:
            raise AttachmentError(f"{name}: download it before preparing it (chainform.documents.fetch)")
        attachment.read(media.limit(media_type))
        return attachment.to_content(), Conversion(name, media_type, "as is", _size(attachment))
    if not convert or not can_convert(media_type):
        why = "conversion is off" if not convert and can_convert(media_type) else "no local converter reads it"
        raise AttachmentError(
            f"{name}: {profile.provider}/{profile.name} cannot read {media_type} and {why}; "
            f"it accepts {media.describe()}"
        )
    text, conversion = to_text(attachment)
    return TextContent(f"[{conversion.summary()}]\n{text}"), conversion


def _size(attachment: Attachment) -> str:
    size = attachment.size() or 0
    return f"{size / 1_000_000:.1f} MB" if size >= 100_000 else f"{size:,} bytes"
