"""Hostile documents (issue 38, items 6, 9, 11): converting one is held to its limits (pages, pixels,
OCR seconds), each a clear error naming the limit and how to raise it; a file sent as it is must
open; every frame of a TIFF or GIF is read; names, encodings and --no-convert behave."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from docs_helpers import (
    encrypted_pdf,
    frames,
    image_pdf,
    png_header,
    receipt_png,
    repeated_page_pdf,
    text_pdf,
)

import chainform as cf
from chainform.cli import _prompt, cli
from chainform.clients.profiles import IMAGES
from chainform.documents import prepare, prepare_parts, to_text
from chainform.errors import AttachmentError
from chainform.models import Model
from chainform.testing import ScriptedClient
from chainform.types import MediaSupport, ModelProfile, TextContent

TEXT_ONLY = ModelProfile(name="scripted", provider="testing", supports_json_schema=True)
READS_FILES = TEXT_ONLY.replace(
    media=MediaSupport(types=IMAGES.types | {"application/pdf"}, max_bytes=20_000_000, max_count=10)
)


def test_a_pdf_over_the_page_limit_is_refused_before_any_page_is_read() -> None:
    many = cf.Attachment(content=repeated_page_pdf(500), name="many.pdf")  # 1.5 KB, 500 pages
    with pytest.raises(AttachmentError, match=r"500 pages is over the limit of 100 .*--max-pages"):
        to_text(many)
    text, conversion = to_text(
        cf.Attachment(content=repeated_page_pdf(500), limits=cf.ConversionLimits(max_pages=500))
    )
    assert conversion.detail == "500 pages" and text.count("Repeated page") == 500


def _rendered(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, ...]]:
    shapes: list[tuple[int, ...]] = []

    def record(image: Any) -> list[str]:
        shapes.append(tuple(image.shape))
        return []

    monkeypatch.setattr("chainform.documents._ocr.ocr_lines", record)
    return shapes


def test_a_huge_pdf_page_is_rendered_within_the_pixel_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    shapes = _rendered(monkeypatch)
    huge = repeated_page_pdf(1, size=(14400, 14400), text=False)  # 200 inches square: 28800 px at 144 dpi
    to_text(cf.Attachment(content=huge, name="huge.pdf", limits=cf.ConversionLimits(max_pixels=1_000_000)))
    to_text(cf.Attachment(content=huge, name="huge.pdf"))
    assert [h * w <= limit for (h, w, *_), limit in zip(shapes, [1_000_000, 25_000_000], strict=True)] == [
        True
    ] * 2
    assert shapes[1][0] > 4000  # rendered as large as the limit allows, not needlessly small


def test_an_image_over_the_pixel_limit_is_refused_before_it_is_decoded() -> None:
    bomb = cf.Attachment(content=png_header(13000, 13000), name="bomb.png")  # 169 megapixels in 200 bytes
    with pytest.raises(
        AttachmentError, match=r"13,000x13,000 pixels is over the limit of 25,000,000 .*--max-pixels"
    ):
        to_text(bomb)


def test_ocr_time_is_bounded_for_each_document() -> None:
    scan = cf.Attachment(content=image_pdf(), name="scan.pdf", limits=cf.ConversionLimits(ocr_seconds=0.001))
    with pytest.raises(AttachmentError, match=r"OCR took longer than 0.001 s .*--ocr-timeout"):
        to_text(scan)


def test_the_limit_flags_reach_the_conversion(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    client = ScriptedClient(["ok"], TEXT_ONLY)
    monkeypatch.setattr(_prompt, "resolve_model", lambda name, **_: Model(client, name=name))
    (tmp_path / "many.pdf").write_bytes(repeated_page_pdf(5))
    result = CliRunner().invoke(cli, ["Read", "-a", str(tmp_path / "many.pdf"), "--max-pages", "4"])
    assert result.exit_code == 2 and "5 pages is over the limit of 4" in result.stderr, result.stderr
    assert not client.requests
    result = CliRunner().invoke(cli, ["Read", "-a", str(tmp_path / "many.pdf"), "--max-pages", "5"])
    assert result.exit_code == 0, result.stderr


def _zero_pages() -> bytes:
    return repeated_page_pdf(0)


@pytest.mark.parametrize(
    ("make", "name", "message"),
    [
        (lambda: text_pdf()[:300], "cut.pdf", "not a readable PDF|no pages"),
        (encrypted_pdf, "locked.pdf", "encrypted"),
        (_zero_pages, "empty.pdf", "no pages"),
        (lambda: receipt_png()[:200], "cut.png", "does not decode"),
        (lambda: b"\x89PNG\r\n\x1a\n" + b"not an image" * 10, "junk.png", "does not decode"),
    ],
)
def test_a_file_the_model_reads_itself_must_open(make: Any, name: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(AttachmentError, match=message):
        prepare_parts([cf.Attachment(content=make(), name=name)], READS_FILES)


def test_a_broken_file_for_a_model_that_reads_it_is_exit_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    client = ScriptedClient(["ok"], READS_FILES)
    monkeypatch.setattr(_prompt, "resolve_model", lambda name, **_: Model(client, name=name))
    (tmp_path / "locked.pdf").write_bytes(encrypted_pdf())
    result = CliRunner().invoke(cli, ["Read", "-a", str(tmp_path / "locked.pdf")])
    assert result.exit_code == 2 and "encrypted" in result.stderr and not client.requests


SECOND = [("Second page", None), ("TOTAL", "77.00")]


@pytest.mark.parametrize("kind", ["TIFF", "GIF"])
def test_every_frame_of_a_multi_page_image_is_read(kind: str) -> None:
    from docs_helpers import RECEIPT_LINES

    text, _ = to_text(cf.Attachment(content=frames(kind, [RECEIPT_LINES, SECOND]), name=f"scan.{kind}"))
    assert "9.80" in text and "77.00" in text, text
    with pytest.raises(AttachmentError, match="2 pages is over the limit of 1"):
        to_text(
            cf.Attachment(
                content=frames(kind, [RECEIPT_LINES, SECOND]), limits=cf.ConversionLimits(max_pages=1)
            )
        )


def test_an_image_error_never_shows_an_in_memory_file() -> None:
    junk = cf.Attachment(content=b"\x89PNG\r\n\x1a\n" + b"not an image" * 10, name="junk.png")
    with pytest.raises(AttachmentError) as info:
        to_text(junk)
    assert (
        "does not decode" in str(info.value)
        and "BytesIO" not in str(info.value)
        and "0x" not in str(info.value)
    )


def test_a_newline_in_a_file_name_never_splits_a_line(tmp_path: Path) -> None:
    path = tmp_path / "two\nlines.txt"
    path.write_text("hello\n")
    _, conversion = prepare(cf.Attachment(path=path), TEXT_ONLY)
    assert "\n" not in conversion.summary() and conversion.summary().startswith("two")


def test_a_cp1252_csv_is_text() -> None:
    csv = cf.Attachment(content="name;price\ncafé;3,20\nnaïve;1,10\n".encode("cp1252"), name="prices.csv")
    assert csv.media_type() == "text/csv"
    text, _ = to_text(csv)
    assert "café;3,20" in text


def test_no_convert_still_sends_a_text_file_to_a_model_that_reads_text() -> None:
    part, conversion = prepare(cf.Attachment(content=b"hello\n", name="a.txt"), TEXT_ONLY, convert=False)
    assert isinstance(part, TextContent) and "hello" in part.text and conversion.method == "text"
    with pytest.raises(AttachmentError, match="conversion is off"):
        prepare(cf.Attachment(content=receipt_png(), name="r.png"), TEXT_ONLY, convert=False)


@pytest.mark.skipif(not hasattr(__import__("signal"), "SIGINT"), reason="no SIGINT here")
def test_ctrl_c_during_ocr_ends_the_command_with_exit_130(tmp_path: Path) -> None:
    """A scan of 40 pages takes minutes to OCR; Ctrl-C ends the command after the page it is on."""
    import os
    import signal
    import subprocess
    import sys
    import time

    scan = tmp_path / "scan.pdf"
    scan.write_bytes(image_pdf([[f"Page {n} of the long scan", "Total: 12.00"] for n in range(40)]))
    env = {**os.environ, "CHAINFORM_HOME": str(tmp_path / "home"), "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-m", "chainform.cli", "-m", "vllm/any", "--base-url", "http://127.0.0.1:9/v1"]
    process = subprocess.Popen(
        [*command, "Read", "-a", str(scan), "--td"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        time.sleep(6)  # started, the OCR models loaded, some pages read (the test holds either way)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=90)  # a page or two, not the 38 left
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, stderr.decode()
    assert b"terminate" not in stderr and b"Traceback" not in stderr, stderr.decode()


def test_the_limit_flags_help_says_the_defaults_of_conversion_limits() -> None:
    result = CliRunner().invoke(cli, ["prompt", "--help"], terminal_width=300)
    defaults = cf.ConversionLimits()
    for flag, value in (("--max-pages", defaults.max_pages), ("--max-pixels", defaults.max_pixels)):
        line = next(line for line in result.output.splitlines() if flag in line)
        assert f"[default: {value}]" in line
    assert f"[default: {defaults.ocr_seconds:g}]" in result.output


def test_map_holds_each_row_to_the_limit_flags(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`map --attach` takes --max-pages (and its siblings): a row over the cap is that row's error,
    naming the flag; the other rows are answered."""
    import json

    from chainform.cli import _map

    client = ScriptedClient([lambda messages, options: "read: " + messages[-1].text[:20]] * 10, TEXT_ONLY)
    monkeypatch.setattr(_map, "map_model", lambda name, **kw: cf.AsyncModel(client, name="scripted"))
    for name, pages in (("a.pdf", 2), ("many.pdf", 5), ("b.pdf", 3)):
        (tmp_path / name).write_bytes(repeated_page_pdf(pages))
    inp = tmp_path / "rows.jsonl"
    inp.write_text("".join(json.dumps({"doc": name}) + "\n" for name in ("a.pdf", "many.pdf", "b.pdf")))
    out = tmp_path / "out.jsonl"
    argv = ["map", str(inp), "-o", str(out), "--prompt", "Read it", "--attach", "doc", "-m", "scripted"]
    result = CliRunner().invoke(cli, [*argv, "--max-pages", "3", "--ocr-timeout", "60"])
    assert result.exit_code == 9, result.stderr  # a row over a limit failed (ROWS_FAILED)
    rows = {line["doc"]: line for line in map(json.loads, out.read_text().splitlines())}
    assert rows["a.pdf"]["value"].startswith("read: ") and rows["b.pdf"]["value"].startswith("read: ")
    error = rows["many.pdf"]["error"]
    assert "5 pages is over the limit of 3" in error["message"] and "--max-pages" in error["message"], error
    assert error["phase"] == "input", error  # the row's file, not a chainform bug (`internal`)
    assert "map: 1 of 3 rows failed: input 1 (e.g. AttachmentError: many.pdf: 5 pages" in result.stderr
    assert len(client.requests) == 2  # the row over the cap sent nothing


def test_map_and_prompt_share_the_limit_flags() -> None:
    for command in (["prompt"], ["map"]):
        shown = CliRunner().invoke(cli, [*command, "--help"], terminal_width=300).output
        assert all(flag in shown for flag in ("--max-pages", "--max-pixels", "--ocr-timeout")), command
    result = CliRunner().invoke(cli, ["map", "in.jsonl", "-o", "out.jsonl", "--max-pixels", "0"])
    assert result.exit_code == 2 and "--max-pixels" in result.stderr
