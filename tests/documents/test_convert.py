"""Local conversion for models that cannot read a file: PDF text layers, OCR, text files; else errors."""

from __future__ import annotations

import pytest
from docs_helpers import PAGES, encrypted_pdf, image_pdf, receipt_png, text_pdf

from chainform.clients.profiles.anthropic import KNOWN_MODELS as ANTHROPIC
from chainform.clients.profiles.local import local_profile
from chainform.documents import prepare, prepare_parts, to_text
from chainform.documents._ocr import _Box, group_lines
from chainform.errors import AttachmentError
from chainform.types import Attachment, DataContent, TextContent

LOCAL = local_profile("smollm2")
CLAUDE = ANTHROPIC["claude-sonnet-4-5"]


def test_ocr_keeps_each_receipt_row_on_one_line() -> None:
    text, conversion = to_text(Attachment(content=receipt_png(), name="receipt.png"))
    lines = text.splitlines()
    assert conversion.method == "OCR" and conversion.detail == f"{len(lines)} lines"
    assert any("Coffee" in line and "3.20" in line for line in lines)
    assert any("TOTAL" in line and "9.80" in line for line in lines)
    assert conversion.summary() == f"receipt.png: OCR, {len(lines)} lines"


def test_boxes_group_into_lines_in_reading_order() -> None:
    boxes = [_Box("3.20", 400, 52, 80), _Box("Coffee", 20, 50, 82), _Box("Total", 20, 110, 140)]
    assert [[b.text for b in line] for line in group_lines(boxes)] == [["Coffee", "3.20"], ["Total"]]


def test_pdf_text_layer_and_pdf_without_one_read_the_same_fields() -> None:
    # two pages, a field on each (OCR takes seconds a page; the three-page scan is read end to end by
    # tests/documents/test_documents_integration.py)
    pages = [PAGES[0], PAGES[2]]
    layered, how = to_text(Attachment(content=text_pdf(pages), name="invoice.pdf"))
    assert how.method == "PDF text" and how.detail == "2 pages"
    scanned, ocr = to_text(Attachment(content=image_pdf(pages), name="scan.pdf"))
    assert ocr.method == "OCR" and ocr.detail == "2 pages"
    for text in (layered, scanned):
        assert "INV-2041" in text.split("[page 2]")[0] and "1234.50" in text.split("[page 2]")[1]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"%PDF-1.7\n1 0 obj garbage", "not a readable PDF"),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, "does not decode"),
    ],
)
def test_corrupt_files_are_attachment_errors(data: bytes, message: str) -> None:
    with pytest.raises(AttachmentError, match=message):
        to_text(Attachment(content=data, name="bad"))


def test_encrypted_pdf_is_named_as_such() -> None:
    with pytest.raises(AttachmentError, match="encrypted"):
        to_text(Attachment(content=encrypted_pdf(), name="locked.pdf"))


def test_a_model_that_reads_the_type_gets_the_file_itself() -> None:
    part, conversion = prepare(Attachment(content=receipt_png(), name="r.png"), CLAUDE)
    assert isinstance(part, DataContent) and part.media_type == "image/png"
    assert conversion.method == "as is"


def test_a_text_only_model_gets_converted_text_or_a_clear_error() -> None:
    part, conversion = prepare(Attachment(content=text_pdf(), name="invoice.pdf"), LOCAL)
    assert conversion.method == "PDF text"
    assert isinstance(part, TextContent) and part.text.startswith("[invoice.pdf: PDF text, 3 pages]")
    with pytest.raises(
        AttachmentError, match=r"cannot read application/pdf and conversion is off; it accepts text only"
    ):
        prepare(Attachment(content=text_pdf(), name="invoice.pdf"), LOCAL, convert=False)
    with pytest.raises(AttachmentError, match="no local converter"):
        prepare(Attachment(content=b"ID3\x03" + b"\x00" * 64, name="a.mp3", type="audio/mpeg"), LOCAL)


def test_limits_are_checked_before_anything_is_sent() -> None:
    big = Attachment(content=b"\x89PNG\r\n\x1a\n" + b"\x00" * 6_000_000, name="huge.png")
    with pytest.raises(AttachmentError, match="over the limit of 5,000,000"):
        prepare(big, CLAUDE)
    many = [Attachment(content=receipt_png(), name=f"{i}.png") for i in range(101)]
    with pytest.raises(AttachmentError, match="at most 100 in one request"):
        prepare_parts(["look", *many], CLAUDE)
