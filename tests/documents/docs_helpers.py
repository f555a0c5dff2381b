"""Documents made in the tests: a receipt drawn with Pillow, PDFs written with fpdf2 (with a text
layer) or rendered from images (none: only OCR reads them)."""

from __future__ import annotations

import io
import threading
from collections.abc import Callable
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

RECEIPT_LINES = [
    ("Corner Bakery", None),
    ("Coffee", "3.20"),
    ("Croissant", "2.50"),
    ("Orange juice", "4.10"),
    ("TOTAL", "9.80"),
]


def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    try:
        return ImageFont.truetype("DejaVuSans.ttf", size)
    except OSError:
        return ImageFont.load_default(size=size)


def receipt_image(lines: list[tuple[str, str | None]] = RECEIPT_LINES) -> Image.Image:
    image = Image.new("RGB", (640, 80 + 60 * len(lines)), "white")
    draw = ImageDraw.Draw(image)
    font = _font(30)
    for row, (left, right) in enumerate(lines):
        y = 30 + row * 60
        draw.text((30, y), left, fill="black", font=font)
        if right:
            draw.text((470, y), right, fill="black", font=font)
    return image


def receipt_png(path: Path | None = None) -> bytes:
    buffer = io.BytesIO()
    receipt_image().save(buffer, format="PNG")
    if path is not None:
        path.write_bytes(buffer.getvalue())
    return buffer.getvalue()


PNG = receipt_png()


def encrypted_pdf() -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.cell(0, 10, "secret")
    pdf.set_encryption(owner_password="o", user_password="u")
    return bytes(pdf.output())


PAGES = [
    ["INVOICE", "Invoice number: INV-2041", "Customer: Harbor Tools Ltd"],
    ["Item: Hex bolts", "Quantity: 400"],
    ["Amount due: 1234.50 EUR", "Due date: 2026-12-31"],
]


def text_pdf(pages: list[list[str]] = PAGES) -> bytes:
    """A PDF whose pages carry a text layer."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("Helvetica", size=16)
    for lines in pages:
        pdf.add_page()
        for line in lines:
            pdf.cell(0, 12, line, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def image_pdf(pages: list[list[str]] = PAGES) -> bytes:
    """The same pages rendered to images only: no text layer, so only OCR reads them."""
    images = []
    for lines in pages:
        image = Image.new("RGB", (900, 120 + 60 * len(lines)), "white")
        draw = ImageDraw.Draw(image)
        for row, line in enumerate(lines):
            draw.text((40, 40 + row * 60), line, fill="black", font=_font(32))
        images.append(image)
    buffer = io.BytesIO()
    images[0].save(buffer, format="PDF", save_all=True, append_images=images[1:], resolution=100)
    return buffer.getvalue()


# The documents the embedded-model tests and bench/bench_documents.py extract from. SmolLM2-135M
# copies some names better than others: it read "Corner Bakery" as "Mercer" in every prompt layout
# tried, and copies "Blue Bottle Cafe" (OCR: "BlueBottleCafe") exactly.
CAFE_RECEIPT = [
    ("Blue Bottle Cafe", None),
    ("Coffee", "3.20"),
    ("Croissant", "2.50"),
    ("Orange juice", "4.10"),
    ("TOTAL", "9.80"),
]
INVOICE = [
    ["INVOICE", "Invoice number: INV-2041", "Customer: Harbor Tools"],
    ["Item: Hex bolts", "Quantity: 400"],
    ["Total due: 1234.50", "Due date: 2026-12-31"],
]
INVOICE_ASK = (
    "Extract the invoice number, the quantity and the total due",
    "invoice_number, quantity int, total float",
)
INVOICE_FIELDS = {"invoice_number": "INV-2041", "quantity": 400, "total": 1234.5}


def repeated_page_pdf(count: int, size: tuple[int, int] = (612, 792), text: bool = True) -> bytes:
    """A hand-written PDF whose page tree names one page `count` times (a tiny file, many pages);
    `text=False`: the page has no text layer (only OCR could read it)."""
    content = b"BT /F1 24 Tf 72 72 Td (Repeated page) Tj ET" if text else b""
    kids = b" ".join([b"3 0 R"] * count)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % count,
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Contents 4 0 R" % size
        + b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def png_header(width: int, height: int) -> bytes:
    """A PNG that claims `width` x `height` pixels in a few hundred bytes (its pixels never decode)."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\x00" * 64))
        + chunk(b"IEND", b"")
    )


def frames(kind: str, pages: list[list[tuple[str, str | None]]]) -> bytes:
    """A multi-page TIFF or GIF: one receipt-like frame per page."""
    images = [receipt_image(lines) for lines in pages]
    buffer = io.BytesIO()
    images[0].save(buffer, format=kind, save_all=True, append_images=images[1:])
    return buffer.getvalue()


def ends_within(seconds: float, work: Callable[[], object]) -> object:
    """`work`'s result (or the exception it raised) on a daemon thread; AssertionError when it has not
    ended after `seconds` (a generous bound: the bugs it catches wait forever)."""
    out: list[object] = []

    def target() -> None:
        try:
            out.append(work())
        except BaseException as exc:  # handed back to the test
            out.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds:g} s"
    return out[0]
