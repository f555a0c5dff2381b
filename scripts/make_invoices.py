"""Make an eval set of invoices and receipts with their answers, offline and the same every time.

    python scripts/make_invoices.py OUT_DIR [--count 50] [--seed 7] [--pdf] [--png]

Writes OUT_DIR/invoices.jsonl (one row per document: `id`, `text`, `expected`, and `file` when
--pdf or --png made one) and OUT_DIR/invoice.schema.json. --pdf writes each document as a PDF with a
text layer (fpdf2), --png as an image (Pillow); both are in chainform's `dev` extra. Then:

    chainform eval OUT_DIR/invoices.jsonl --schema OUT_DIR/invoice.schema.json \\
        -p 'Extract the fields of this document: {text}' -m local --strategy native --strategy prompted
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "kind": {"enum": ["invoice", "receipt"]},
        "vendor": {"type": "string"},
        "date": {"type": "string", "format": "date"},
        "currency": {"enum": ["EUR", "USD", "GBP"]},
        "total": {"type": "number"},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "qty": {"type": "integer"}},
                "required": ["name", "qty"],
            },
        },
    },
    "required": ["kind", "vendor", "date", "currency", "total", "items"],
}
VENDORS = ["Acme Tools", "Blue Fern Cafe", "Nordic Paper Co", "Lumen Labs", "Casa Verde", "Orbit Books"]
GOODS = ["pencil", "notebook", "coffee", "stapler", "lamp", "tea", "cable", "mug"]
SYMBOL = {"EUR": "EUR", "USD": "USD", "GBP": "GBP"}


def document(index: int, rng: random.Random) -> tuple[str, dict[str, Any]]:
    """The document's text and its answer."""
    kind = "invoice" if index % 2 == 0 else "receipt"
    vendor = rng.choice(VENDORS)
    day = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    currency = rng.choice(list(SYMBOL))
    items = [{"name": name, "qty": rng.randint(1, 4)} for name in rng.sample(GOODS, rng.randint(1, 3))]
    prices = [round(rng.uniform(1, 40), 2) for _ in items]
    total = round(sum(item["qty"] * price for item, price in zip(items, prices, strict=True)), 2)
    lines = [f"{item['qty']} x {item['name']} @ {price:.2f}" for item, price in zip(items, prices, strict=True)]
    if kind == "invoice":
        text = "\n".join([f"INVOICE No. {1000 + index}", f"From: {vendor}", f"Date: {day}", *lines,
                          f"Total due: {total:.2f} {currency}"])  # fmt: skip
    else:
        text = "\n".join(
            [vendor.upper(), f"Receipt {day}", *lines, f"TOTAL {currency} {total:.2f}", "Thank you!"]
        )
    answer = {
        "kind": kind,
        "vendor": vendor,
        "date": day,
        "currency": currency,
        "total": total,
        "items": items,
    }
    return text, answer


def write_pdf(text: str, path: Path) -> None:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    for line in text.splitlines():
        pdf.cell(0, 8, line, new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))


def write_png(text: str, path: Path) -> None:
    from PIL import Image, ImageDraw

    lines = text.splitlines()
    image = Image.new("RGB", (640, 40 + 28 * len(lines)), "white")
    draw = ImageDraw.Draw(image)
    for number, line in enumerate(lines):
        draw.text((24, 20 + 28 * number), line, fill="black", font_size=20)
    image.save(path)


def make(out: Path, count: int = 50, seed: int = 7, pdf: bool = False, png: bool = False) -> Path:
    """Write the set into `out`; returns the JSONL's path."""
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    (out / "invoice.schema.json").write_text(json.dumps(SCHEMA, indent=2) + "\n")
    data = out / "invoices.jsonl"
    with open(data, "w", encoding="utf-8") as handle:
        for index in range(count):
            text, answer = document(index, rng)
            row: dict[str, Any] = {"id": f"doc-{index:03d}", "text": text, "expected": answer}
            if pdf:
                write_pdf(text, out / f"doc-{index:03d}.pdf")
                row["file"] = f"doc-{index:03d}.pdf"
            if png:
                write_png(text, out / f"doc-{index:03d}.png")
                row["file"] = ",".join(filter(None, [row.get("file"), f"doc-{index:03d}.png"]))
            handle.write(json.dumps(row) + "\n")
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description="Make invoices and receipts with their answers.")
    parser.add_argument("out", type=Path)
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--pdf", action="store_true", help="also write each document as a PDF")
    parser.add_argument("--png", action="store_true", help="also write each document as a PNG image")
    args = parser.parse_args()
    path = make(args.out, args.count, args.seed, args.pdf, args.png)
    print(f"wrote {args.count} documents to {path}")


if __name__ == "__main__":
    main()
