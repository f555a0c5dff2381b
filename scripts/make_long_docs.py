"""Write a folder-of-documents job for the embedded model: invoices as OCR-like text, with their answers.

    python scripts/make_long_docs.py OUT_DIR [--count 24] [--lines 60] [--seed 7]

OUT_DIR gets `rows.jsonl` (one `{"id", "text"}` row per invoice, the input of `chainform map`),
`answers.jsonl` (`{"id", "invoice_number", "date", "vendor", "currency", "total"}`) and `schema.json`
(the five fields). With 80 line items an invoice is about 2,600 SmolLM2 tokens. The same seed gives
the same documents, so runs of different engines are compared on the same rows.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

SCHEMA = {
    "type": "object",
    "properties": {
        "invoice_number": {"type": "string"},
        "date": {"type": "string"},
        "vendor": {"type": "string"},
        "currency": {"type": "string", "enum": ["EUR", "USD", "GBP", "CHF"]},
        "total": {"type": "number"},
    },
    "required": ["invoice_number", "date", "vendor", "currency", "total"],
}
TEMPLATE = "Extract the invoice number, date, vendor, currency and total from this invoice.\n\n{text}"
"""The map prompt: its fixed part is the same for every row (what prefix reuse can share)."""

VENDORS = ["Nordlicht GmbH", "Acme Tools Ltd", "Blue Harbor Supply", "Kestrel & Sons", "Vireo Office SA",
           "Granite Peak Inc", "Lumen Components", "Old Mill Bakery"]  # fmt: skip
ITEMS = ["hex bolts M8", "copy paper A4", "LED panel 40W", "cable ties", "safety gloves", "toner cartridge",
         "wood screws 4x40", "USB-C cable 2m", "printer drum", "packing tape", "desk lamp", "coffee beans 1kg"]  # fmt: skip
CURRENCIES = ["EUR", "USD", "GBP", "CHF"]


def invoice(rng: random.Random, number: int, lines: int) -> tuple[str, dict[str, object]]:
    vendor = rng.choice(VENDORS)
    currency = rng.choice(CURRENCIES)
    date = f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    ref = f"INV-{rng.randint(10000, 99999)}"
    rows = []
    subtotal = 0
    for i in range(1, lines + 1):
        qty = rng.randint(1, 40)
        cents = rng.randint(50, 20000)
        amount = qty * cents
        subtotal += amount
        rows.append(f"{i:>3}  {rng.choice(ITEMS):<18} {qty:>4} x {cents / 100:>8.2f} = {amount / 100:>10.2f}")
    tax = subtotal * 20 // 100
    total = round((subtotal + tax) / 100, 2)
    head = [vendor.upper(), f"{rng.randint(1, 200)} Market Street", "", f"INVOICE {ref}",
            f"Invoice date: {date}", f"Customer no. C-{rng.randint(1000, 9999)}", f"Currency: {currency}", "",
            "Pos  Item               Qty   Unit price      Amount"]  # fmt: skip
    foot = ["", f"Subtotal {subtotal / 100:.2f}", f"VAT 20% {tax / 100:.2f}",
            f"TOTAL DUE {currency} {total:.2f}", "Payment within 30 days. Thank you for your order."]  # fmt: skip
    answer = {"id": str(number), "invoice_number": ref, "date": date, "vendor": vendor,
              "currency": currency, "total": total}  # fmt: skip
    return "\n".join(head + rows + foot), answer


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("out", type=Path)
    parser.add_argument("--count", type=int, default=24)
    parser.add_argument("--lines", type=int, default=80)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    args.out.mkdir(parents=True, exist_ok=True)
    with (args.out / "rows.jsonl").open("w") as rows, (args.out / "answers.jsonl").open("w") as answers:
        for number in range(args.count):
            text, answer = invoice(rng, number, args.lines)
            rows.write(json.dumps({"id": str(number), "text": text}) + "\n")
            answers.write(json.dumps(answer) + "\n")
    (args.out / "schema.json").write_text(json.dumps(SCHEMA, indent=2))


if __name__ == "__main__":
    main()
