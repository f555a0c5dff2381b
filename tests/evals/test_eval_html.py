"""The HTML report: self-contained (no script, no fetch), escaped, with the plot, the tables, the
enum confusion and the wrong rows' call ids; it opens in headless Chromium and draws something."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from eval_helpers import two_cell_report

from chainform.evals._html import html


@pytest.fixture
def report(priced):
    return two_cell_report()


def test_the_page_holds_plot_tables_confusion_and_wrong_rows(report):
    page = html(report)
    assert "<svg id='plot'" in page and page.count("class='cell'") == 2
    assert "<table id='cells'>" in page and "class='bars'" in page
    assert "Confusion: <code>currency</code>" in page
    bad = report.cells[0]
    # row 3 answered USD for EUR: one off the diagonal; row 4 failed
    confusion = page[page.index("Confusion") :]
    assert "<th>expected \\ answered</th><th>EUR</th><th>USD</th><th>(error)</th>" in confusion
    assert "<tr><th>EUR</th><td>4</td><td>1</td><td>1</td></tr>" in confusion
    assert "bad / native: 4 wrong" in page and "good / native: 0 wrong" in page
    for row in bad.rows[2:]:
        assert all(call_id in page for call_id in row.call_ids)
    lowered = page.lower()
    assert (
        "<script" not in lowered
        and "src=" not in lowered
        and "href=" not in lowered
        and "@import" not in lowered
    )


def test_model_output_is_escaped(report):
    report.cells[0].rows[4].error = "output: <img src=x onerror=alert(1)>"
    page = html(report)
    assert "<img src=x" not in page and "&lt;img src=x" in page


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.skipif(_chromium() is None, reason="no chromium on this machine (apt-get install -y chromium)")
def test_headless_chromium_renders_a_non_blank_page(report, tmp_path: Path):
    from PIL import Image

    page = tmp_path / "report.html"
    page.write_text(html(report), encoding="utf-8")
    shot = tmp_path / "shot.png"
    argv = [_chromium(), "--headless", "--disable-gpu", f"--screenshot={shot}", "--window-size=1200,900"]
    if os.geteuid() == 0:
        argv.append("--no-sandbox")
    subprocess.run([*argv, page.as_uri()], check=True, capture_output=True, timeout=120)
    image = Image.open(shot).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 10  # text, axes, points: not one flat colour
    blue = (0x1F, 0x77, 0xB4)  # the first cell's point and the accuracy bars
    assert any(abs(r - blue[0]) + abs(g - blue[1]) + abs(b - blue[2]) < 30 for _, (r, g, b) in colours)


def test_a_confusion_table_keeps_the_most_frequent_values_and_folds_the_rest():
    """An enum of 100 values (or a model answering many): the table stays MAX_CONFUSION_VALUES rows
    and columns plus one that folds the others, saying how many, and every row is still counted."""
    import re

    from chainform.evals._eval_report import EvalReport
    from chainform.evals._html import MAX_CONFUSION_VALUES
    from chainform.evals._report import Cell, RowResult

    values = [f"v{i:02d}" for i in range(100)]
    schema = {"type": "object", "properties": {"code": {"enum": values}}, "required": ["code"]}
    rows = [
        RowResult(f"{i}-{k}", {}, {"code": value}, {"code": value})
        for i, value in enumerate(values)
        for k in range(3 if i < MAX_CONFUSION_VALUES else 1)
    ]
    rows.append(RowResult("off", {}, {"code": "v00"}, {"code": "v99"}))  # a rare answer: folded
    rows.append(RowResult("failed", {}, {"code": "v50"}, None, error="output: bad"))
    page = html(EvalReport("e1", schema, [Cell("m", "native", "{text}", "run", rows)]))
    table = page[page.index("<table class='confusion'>") :]
    table = table[: table.index("</table>")]
    head, *body = re.findall(r"<tr>(.*?)</tr>", table)
    shown = re.findall(r"<th>(.*?)</th>", head)[1:]
    other = f"(other {len(values) + 1 - MAX_CONFUSION_VALUES} values)"  # the rest, and (error)
    assert shown == [*values[:MAX_CONFUSION_VALUES], other]
    assert [re.match(r"<th>(.*?)</th>", row).group(1) for row in body] == shown
    cells = {
        (re.match(r"<th>(.*?)</th>", row).group(1), answered): int(n or 0)
        for row in body
        for answered, n in zip(shown, re.findall(r"<td>(.*?)</td>", row), strict=True)
    }
    assert sum(cells.values()) == len(rows)
    assert cells["v00", "v00"] == 3 and cells["v00", other] == 1
    assert cells[other, other] == len(values) - MAX_CONFUSION_VALUES + 1  # v20..v99 right, v50 failed
    assert len(page) < 20_000
