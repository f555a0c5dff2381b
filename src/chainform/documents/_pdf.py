"""Text from PDFs, offline: each page's text layer through pypdfium2; a page without one is rendered
and read by OCR (chainform.documents._ocr). The page count, each rendered page's pixels and the OCR
time are held to the document's limits (chainform.documents._limits)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from chainform.documents._limits import Watch
from chainform.errors import AttachmentError

_NO_PAGES = re.compile(rb"/Count\s*0\s*/Kids\s*\[\s*\]|/Kids\s*\[\s*\]\s*/Count\s*0\b")
_RENDER_SCALE = 2.0  # 144 dpi: small print stays legible to the OCR model


@dataclass(frozen=True)
class PdfText:
    pages: list[str]
    ocr_pages: int

    @property
    def text(self) -> str:
        return "\n\n".join(f"[page {i}]\n{page}" for i, page in enumerate(self.pages, 1))


def open_pdf(data: bytes, name: str) -> Any:
    """The PDF as a pypdfium2 document with at least one page; AttachmentError when it is corrupt,
    truncated, encrypted or has no pages. The caller closes it."""
    try:
        import pypdfium2 as pdfium
    except ImportError as exc:
        raise AttachmentError("reading PDFs needs pypdfium2: pip install 'chainform[documents]'") from exc
    try:
        document = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        # PDFium's error code is a process-wide "last error" (stale when threads share it), and a
        # document without pages fails with none: the bytes say which it was.
        if b"/Encrypt" in data:
            raise AttachmentError(f"{name}: is encrypted (password protected)") from None
        if _NO_PAGES.search(data):
            raise AttachmentError(f"{name}: the PDF has no pages") from None
        raise AttachmentError(f"{name}: is not a readable PDF ({exc})") from None
    if len(document) == 0:
        document.close()
        raise AttachmentError(f"{name}: the PDF has no pages")
    return document


def check_pdf(data: bytes, name: str) -> None:
    """AttachmentError unless the PDF opens and has pages (for a model that reads PDFs itself)."""
    open_pdf(data, name).close()


def pdf_text(data: bytes, name: str, watch: Watch | None = None) -> PdfText:
    """The text of every page; pages without a text layer are OCR'd (at most the pixel limit each)."""
    watch = watch or Watch(name, None)
    document = open_pdf(data, name)
    try:
        watch.pages(len(document))
        pages: list[str] = []
        ocr_pages = 0
        for index in range(len(document)):
            watch.check()
            page = document[index]
            text = page.get_textpage().get_text_bounded().replace("\r\n", "\n").strip()
            if not text:
                from chainform.documents._ocr import ocr_lines

                width, height = page.get_size()
                bitmap = page.render(scale=watch.scale(width, height, _RENDER_SCALE))
                text = "\n".join(ocr_lines(bitmap.to_numpy()))
                ocr_pages += 1
            pages.append(text)
        return PdfText(pages, ocr_pages)
    finally:
        document.close()
