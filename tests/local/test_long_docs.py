"""The long-document job of bench/bench_local_scale.py: the generated invoices carry their answers, are
as long as the bench says, come out the same for the same seed, and the scoring counts fields right."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import jsonschema

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "bench")]

import bench_local_scale  # noqa: E402
import make_long_docs  # noqa: E402


def _read(folder: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / name).read_text().splitlines()]


def test_invoices_carry_their_answers(tmp_path: Path, tokenizer: Any) -> None:
    make_long_docs.main([str(tmp_path / "a"), "--count", "3"])
    make_long_docs.main([str(tmp_path / "b"), "--count", "3"])
    rows, answers = _read(tmp_path / "a", "rows.jsonl"), _read(tmp_path / "a", "answers.jsonl")
    assert rows == _read(tmp_path / "b", "rows.jsonl")  # same seed, same documents
    schema = json.loads((tmp_path / "a" / "schema.json").read_text())
    for row, answer in zip(rows, answers, strict=True):
        assert row["id"] == answer["id"]
        value = {k: v for k, v in answer.items() if k != "id"}
        jsonschema.validate(value, schema)
        text = row["text"]
        assert answer["invoice_number"] in text and answer["date"] in text
        assert f"TOTAL DUE {answer['currency']} {answer['total']:.2f}" in text
        assert answer["vendor"].upper() in text
        tokens = len(tokenizer.encode(make_long_docs.TEMPLATE.format(text=text), add_special_tokens=False))
        assert 2300 < tokens < 2900, tokens


def test_scoring_counts_fields_and_whole_rows() -> None:
    answer = {
        "invoice_number": "INV-1",
        "date": "2026-01-02",
        "vendor": "Acme",
        "currency": "EUR",
        "total": 10.5,
    }
    answers = {"0": {"id": "0", **answer}, "1": {"id": "1", **answer}}
    values = {"0": {**answer, "vendor": " acme ", "total": "10.50"}, "1": {**answer, "total": 10.6}}
    assert bench_local_scale.score(values, answers) == {"fields_right": 0.9, "rows_all_right": 0.5}
    assert bench_local_scale.score({"0": "not json"}, {"0": answers["0"]})["fields_right"] == 0.0
