"""Smoke tests of the benchmark plumbing on fake results: report building and section isolation.

No timing is measured or asserted here.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def bench_modules() -> tuple[Any, Any]:
    sys.path.insert(0, str(BENCH))
    try:
        return importlib.import_module("report"), importlib.import_module("run")
    finally:
        sys.path.remove(str(BENCH))


def fake_report() -> dict[str, Any]:
    row = {"median_ms": 10.0, "min_ms": 9.0, "max_ms": 12.0, "ratio": 1.0, "overhead_ms": 0.0}
    slow = {**row, "median_ms": 25.0, "ratio": 2.5, "overhead_ms": 15.0}
    variant = {"frameworks": {"openai SDK loop": row, "chainform": slow}, "errors": {"llm": "no schema"}}
    summary = {"tasks": 5, "success": 4, "correct": 3, "model_calls": 12, "tokens": 345, "seconds": 0.5}
    return {
        "date": "2026-01-01T00:00:00+00:00",
        "machine": {"cpu": "Fake CPU 9000", "cpus": 2, "python": "3.11.0"},
        "sections": {
            "chain": {
                "rounds": 3,
                "batch": 2,
                "versions": {"chainform": "0.1.0", "openai": "9.9"},
                "servers": {"fast": {"tools": variant, "tools+schema": variant}},
            },
            "cli": {
                "repeats": 3,
                "commands": {"python -c pass": {"median_ms": 20.0, "min_ms": 19.0, "over_python_ms": 0.0}},
            },
            "local": {"error": "chainform.local is not installed"},
            "conformance": {"suite": {"draft7": {"passed": 1, "total": 1}}, "weird_layout": True},
            "strategies": {
                "tasks": ["weather"],
                "models": {"scripted-good": {"summary": {"native": summary}}, "local": {"error": "no torch"}},
            },
            "stream": {
                "delta": 8,
                "rounds": 2,
                "baseline": "openai SDK (stream)",
                "sizes": [
                    {
                        "bytes": 1048576,
                        "deltas": 131072,
                        "runners": {
                            "openai SDK (stream)": {"median_s": 10.0, "ratio": 1.0},
                            "chainform .value": {"median_s": 14.0, "ratio": 1.4},
                        },
                    }
                ],
            },
        },
    }


def test_markdown_has_every_section_stamped(bench_modules: tuple[Any, Any]) -> None:
    report, _ = bench_modules
    text = report.markdown(fake_report(), [], "")
    assert "Fake CPU 9000" in text and "openai 9.9" in text and "2026-01-01" in text
    assert "| chainform | 25.00 | 2.500× |  | +15.00 | 9.00–12.00 |" in text
    assert "llm: not measured: `no schema`" in text
    assert "chainform.local is not installed" in text
    assert "| scripted-good | native | 4/5 | 3/5 | 12 | 345 | 0.5 |" in text
    assert "local: not run: `no torch`" in text
    assert "`python -c pass`" in text
    assert "**1,048,576 bytes in 131,072 deltas of 8 characters**" in text
    assert "| chainform .value | 14.00 | 1.40× |  |  |" in text


def test_chain_section_shows_the_paired_ratios(bench_modules: tuple[Any, Any]) -> None:
    report, _ = bench_modules
    data = fake_report()
    variant = data["sections"]["chain"]["servers"]["fast"]["tools"]
    variant["frameworks"]["chainform"]["ratio_of_medians"] = 2.4
    variant["log_on/log_off"] = {"median": 1.0412, "q1": 1.01, "q3": 1.08}
    text = report.markdown(data, [], "")
    assert "| chainform | 25.00 | 2.500× | 2.40× | +15.00 | 9.00–12.00 |" in text
    assert "chainform log on / log off: 1.041 (quartiles 1.010–1.080)" in text


def test_paired_ratio_is_the_median_of_each_rounds_ratio() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        chain = importlib.import_module("bench_chain")
    finally:
        sys.path.remove(str(BENCH))
    samples = {"a": [3.0, 1.0, 2.2, 8.0, 1.1], "b": [1.0, 1.0, 2.0, 4.0, 1.0]}  # ratios 3, 1, 1.1, 2, 1.1
    assert chain.paired(samples, "a", "b") == {"median": 1.1, "q1": 1.1, "q3": 2.0}


def test_a_section_left_out_keeps_its_text_on_the_results_page(bench_modules: tuple[Any, Any]) -> None:
    """Sections run on their own (their figures written under their heading by hand) survive a
    partial run that regenerates the page; one never run says so."""
    report, _ = bench_modules
    page = "### 10. Sending a large PDF\n\nhand-written figures\n\n### 11. Tracing (OpenTelemetry)\n\nNot run (x)\n"
    kept = report.kept_blocks(page + "## Notes\n\nnot a section's text\n")
    assert "not a section's text" not in "\n".join(kept["11. Tracing (OpenTelemetry)"])
    text = report.markdown(fake_report(), [], "", kept)
    assert "### 10. Sending a large PDF\n\nhand-written figures" in text
    after = text.split("### 11. Tracing (OpenTelemetry)")[1]
    assert after.lstrip().startswith("Not run (`--only` left it out).")


def test_unknown_layout_falls_back_to_a_flat_table(bench_modules: tuple[Any, Any]) -> None:
    report, _ = bench_modules
    lines = report.flat_md({"load_seconds": 1.5, "nested": {"tokens_per_s": 42}, "runs": [1, 2]})
    assert "| load_seconds | 1.5 |" in lines
    assert "| nested.tokens_per_s | 42 |" in lines


def test_partial_report_says_what_was_left_out(bench_modules: tuple[Any, Any]) -> None:
    report, _ = bench_modules
    data = fake_report()
    del data["sections"]["cli"]
    assert "Not run (`--only` left it out)." in report.markdown(data, [], "")


def test_failing_section_records_its_error(bench_modules: tuple[Any, Any], tmp_path: Path) -> None:
    _, run = bench_modules
    script = tmp_path / "boom.py"
    script.write_text("import sys\nprint('partial output')\nsys.exit('section exploded')\n")
    result = run.run_section([sys.executable, str(script)], timeout=60)
    assert "error" in result and "section exploded" in result["error"]


def test_section_json_comes_from_out_file(bench_modules: tuple[Any, Any], tmp_path: Path) -> None:
    _, run = bench_modules
    script = tmp_path / "ok.py"
    script.write_text("import json, sys\nopen(sys.argv[2], 'w').write(json.dumps({'value': 3}))\n")
    result = run.run_section([sys.executable, str(script)], timeout=60, out=tmp_path / "out.json")
    assert result["value"] == 3 and "error" not in result


def test_stream_bench_serves_the_answer_it_measures(bench_modules: tuple[Any, Any]) -> None:
    sys.path.insert(0, str(BENCH))
    try:
        stream = importlib.import_module("bench_stream")
    finally:
        sys.path.remove(str(BENCH))
    text = stream.answer_of(5000)
    assert 5000 <= len(text) < 5200
    events = [e for e in stream.sse_body(text, 8).decode().split("\n\n") if e.startswith("data: {")]
    deltas = [json.loads(e[6:])["choices"] for e in events]
    joined = "".join(c[0]["delta"].get("content") or "" for c in deltas if c)
    assert joined == text and stream.Items.model_validate_json(joined).items
