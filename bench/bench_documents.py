"""Documents in, on the embedded model: seconds per page to turn a file into text (OCR, or a PDF's
text layer) and to extract fields from that text with SmolLM2, offline.

    python bench/bench_documents.py --rounds 5 --out documents.json

Three documents, made here (the same generators as tests/documents): a receipt PNG drawn with
Pillow (1 page), a three-page invoice PDF with a text layer, and the same pages rendered to images
only (read by OCR). Each round converts and extracts every document once, in a shuffled order
(interleaved), after one warm-up round that loads the OCR models and the embedded model (timed
apart as `load_s`). Conversion is `chainform.documents.to_text`; extraction is `model.chain(...)`
with the converted text and a schema (what `chainform -m local -a FILE --schema ...` does after
converting). Figures are medians over rounds, per page; the answers are checked every round.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent / "tests" / "documents"))
import docs_helpers as docs  # the documents of the embedded-model tests (tests/documents)
from _common import machine, now, versions


def documents() -> list[dict[str, Any]]:
    import io

    buffer = io.BytesIO()
    docs.receipt_image(docs.CAFE_RECEIPT).save(buffer, format="PNG")
    return [
        {
            "name": "receipt PNG (OCR)",
            "file": ("receipt.png", buffer.getvalue()),
            "pages": 1,
            "ask": ("Extract the merchant and the total", "merchant, total float"),
            "check": lambda v: (
                str(v["merchant"]).replace(" ", "").lower() == "bluebottlecafe" and v["total"] == 9.8
            ),
        },
        {
            "name": "3-page PDF, text layer",
            "file": ("invoice.pdf", docs.text_pdf(docs.INVOICE)),
            "pages": 3,
            "ask": docs.INVOICE_ASK,
            "check": lambda v: v == docs.INVOICE_FIELDS,
        },
        {
            "name": "3-page PDF, images only (OCR)",
            "file": ("scan.pdf", docs.image_pdf(docs.INVOICE)),
            "pages": 3,
            "ask": docs.INVOICE_ASK,
            "check": lambda v: v == docs.INVOICE_FIELDS,
        },
    ]


def one(model: Any, doc: dict[str, Any]) -> tuple[float, float, bool, str]:
    import chainform as cf
    from chainform.documents import to_text

    name, data = doc["file"]
    started = time.perf_counter()
    text, conversion = to_text(cf.Attachment(content=data, name=name))
    converted = time.perf_counter()
    ask, schema = doc["ask"]
    value = model.chain(f"{ask}\n\n[{conversion.summary()}]\n{text}", schema=schema, log=False).value
    done = time.perf_counter()
    return converted - started, done - converted, bool(doc["check"](value)), conversion.summary()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    import chainform as cf

    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    model = cf.get_model("local")
    docs = documents()
    for doc in docs:  # warm-up: loads the OCR models and the embedded model
        one(model, doc)
    load_s = time.perf_counter() - started
    samples: dict[str, list[tuple[float, float, bool]]] = {d["name"]: [] for d in docs}
    summaries: dict[str, str] = {}
    for _ in range(args.rounds):
        order = list(docs)
        random.shuffle(order)
        for doc in order:
            convert_s, extract_s, right, summary = one(model, doc)
            samples[doc["name"]].append((convert_s, extract_s, right))
            summaries[doc["name"]] = summary
    rows = []
    for doc in docs:
        got = samples[doc["name"]]
        pages = doc["pages"]
        convert = statistics.median(s[0] for s in got)
        extract = statistics.median(s[1] for s in got)
        rows.append(
            {
                "document": doc["name"],
                "conversion": summaries[doc["name"]],
                "pages": pages,
                "convert_s_per_page": round(convert / pages, 3),
                "extract_s_per_page": round(extract / pages, 3),
                "total_s_per_page": round((convert + extract) / pages, 3),
                "total_s": round(convert + extract, 3),
                "right": f"{sum(s[2] for s in got)}/{len(got)}",
            }
        )
    result = {
        "date": now(),
        "machine": machine(),
        "versions": versions("rapidocr-onnxruntime", "pypdfium2", "onnxruntime", "torch"),
        "rounds": args.rounds,
        "load_s": round(load_s, 1),
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "rows": rows,
    }
    text = json.dumps(result, indent=1)
    if args.out:
        args.out.write_text(text)
    print(text)
    print(table(result), file=sys.stderr)


def table(result: dict[str, Any]) -> str:
    """The markdown table docs/benchmarks.md shows (bench/report.py calls this)."""
    lines = [
        f"SmolLM2-135M on this CPU, median of {result['rounds']} interleaved rounds after a warm-up "
        f"(loading the OCR models and the embedded model: {result['load_s']} s, once per process); "
        f"load average {result['load_average'][0]} before, {result['load_average'][1]} after.",
        "",
        "| document | conversion | convert s/page | extract s/page | total s/page | right answers |",
        "|---|---|---|---|---|---|",
    ]
    for row in result["rows"]:
        lines.append(
            f"| {row['document']} | {row['conversion']} | {row['convert_s_per_page']:.2f} | "
            f"{row['extract_s_per_page']:.2f} | **{row['total_s_per_page']:.2f}** | {row['right']} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
