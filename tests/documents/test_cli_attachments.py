"""`-a/--attachment`, `--at`, `--no-convert`, `--attachments-store` on a scripted model, and every bad
input of issue 25: one `Error:` line, exit 2, nothing sent, nothing logged."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from docs_helpers import encrypted_pdf, receipt_png, text_pdf

from chainform.cli import _prompt, cli
from chainform.clients.profiles import IMAGES
from chainform.models import Model
from chainform.store import Store
from chainform.testing import ScriptedClient
from chainform.types import DataContent, MediaSupport, ModelProfile, TextContent

TEXT_ONLY = ModelProfile(name="scripted", provider="testing", supports_json_schema=True)
VISION = TEXT_ONLY.replace(media=IMAGES)
ANSWER = '{"merchant": "Corner Bakery", "total": 9.8}'


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Callable[[ModelProfile], ScriptedClient]:
    def install(profile: ModelProfile) -> ScriptedClient:
        client = ScriptedClient([ANSWER], profile)
        monkeypatch.setattr(_prompt, "resolve_model", lambda name, **_: Model(client, name=name))
        return client

    return install


def run(*args: str, input: bytes | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def test_a_receipt_reaches_a_text_only_model_as_ocr_text_and_td_says_so(model: Any, tmp_path: Path) -> None:
    client = model(TEXT_ONLY)
    receipt_png(tmp_path / "receipt.png")
    result = run("Extract", "-a", str(tmp_path / "receipt.png"), "--schema", "merchant, total float", "--td")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"merchant": "Corner Bakery", "total": 9.8}
    assert "Attachment: receipt.png: OCR, " in result.stderr
    sent = client.requests[0][0][-1].contents
    assert len(sent) == 1 and sent[0].text.startswith("Extract\n\n[receipt.png: OCR, ")  # type: ignore[attr-defined]
    assert "9.80" in sent[0].text  # type: ignore[attr-defined]
    [record] = Store().recent(1)
    assert record.prompt == "Extract" and record.attachments[0].method == "OCR"


def test_stdin_and_at_with_a_type(model: Any, tmp_path: Path) -> None:
    client = model(VISION)
    (tmp_path / "scan.bin").write_bytes(receipt_png())
    result = run("Extract", "-a", "-", "--at", str(tmp_path / "scan.bin"), "image/png", input=receipt_png())
    assert result.exit_code == 0, result.stderr
    parts = client.requests[0][0][-1].contents
    assert [type(p) for p in parts] == [TextContent, DataContent, DataContent]
    assert all(p.media_type == "image/png" for p in parts[1:])  # type: ignore[union-attr]


def test_json_output_lists_the_attachments(model: Any, tmp_path: Path) -> None:
    model(TEXT_ONLY)
    (tmp_path / "note.txt").write_text("Total: 9.80\n")
    result = run("Extract", "-a", str(tmp_path / "note.txt"), "--json")
    assert json.loads(result.stdout)["attachments"][0]["method"] == "text"
    logged = json.loads(run("logs", "-n", "1", "--json").stdout)
    assert logged[0]["attachments"][0]["name"] == "note.txt"
    assert "note.txt (text/plain" in run("logs", "-n", "1").stdout


def test_continue_resends_the_file(model: Any, tmp_path: Path) -> None:
    client = model(VISION)
    client.script.append("second")
    receipt_png(tmp_path / "r.png")
    assert run("Look", "-a", str(tmp_path / "r.png")).exit_code == 0
    assert run("And?", "-c").exit_code == 0
    history = client.requests[1][0]
    assert any(isinstance(c, DataContent) for m in history for c in m.contents)


def _pdf_without_pages() -> bytes:
    import pypdfium2 as pdfium

    buffer = io.BytesIO()
    pdfium.PdfDocument.new().save(buffer)
    return buffer.getvalue()


FILES: list[tuple[str, Callable[[], bytes] | None, str]] = [
    ("missing.png", None, "no such file"),
    ("empty.txt", lambda: b"", "is empty"),
    ("blob.bin", lambda: bytes(range(256)) * 4, "unknown binary content type"),
    ("photo.pdf", receipt_png, "contradicts its extension"),
    ("broken.pdf", lambda: b"%PDF-1.7\n1 0 obj garbage", "not a readable PDF"),
    ("locked.pdf", encrypted_pdf, "encrypted"),
    ("nothing.pdf", _pdf_without_pages, "no pages"),
    ("broken.png", lambda: b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, "does not decode"),
]


@pytest.mark.parametrize(("name", "make", "message"), FILES, ids=[f[0] for f in FILES])
def test_bad_files(
    model: Any, tmp_path: Path, name: str, make: Callable[[], bytes] | None, message: str
) -> None:
    client = model(TEXT_ONLY)
    if make is not None:
        (tmp_path / name).write_bytes(make())
    _refused(run("Extract", "-a", str(tmp_path / name), "--schema", "merchant"), message, client)


def test_a_directory_a_file_over_the_limit_and_too_many(model: Any, tmp_path: Path) -> None:
    client = model(TEXT_ONLY.replace(media=MediaSupport(types=IMAGES.types, max_bytes=1000, max_count=1)))
    _refused(run("x", "-a", str(tmp_path)), "is a directory", client)
    receipt_png(tmp_path / "r.png")
    _refused(run("x", "-a", str(tmp_path / "r.png")), "over the limit of 1,000", client)
    (tmp_path / "a.gif").write_bytes(b"GIF89a" + b"\x00" * 20)
    (tmp_path / "b.gif").write_bytes(b"GIF89a" + b"\x00" * 20)
    _refused(run("x", "-a", str(tmp_path / "a.gif"), "-a", str(tmp_path / "b.gif")), "at most 1", client)


def test_no_convert_names_the_model_and_what_it_accepts(model: Any) -> None:
    client = model(TEXT_ONLY)
    result = run("x", "-a", "-", "--no-convert", input=text_pdf())
    _refused(
        result,
        "testing/scripted cannot read application/pdf and conversion is off; it accepts text only",
        client,
    )


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file(model: Any, tmp_path: Path) -> None:
    client = model(TEXT_ONLY)
    path = tmp_path / "secret.txt"
    path.write_text("x")
    path.chmod(0)
    _refused(run("x", "-a", str(path)), "cannot read", client)


def test_bad_urls(model: Any, server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    client = model(TEXT_ONLY)
    _refused(run("x", "-a", f"{server}/nothing.png"), "private, loopback or reserved", client)
    private = "--allow-private-urls"
    _refused(run("x", "-a", f"{server}/nothing.png", private), "HTTP 404", client)
    _refused(run("x", "-a", f"{server}/loop", private), "more than 5 redirects", client)
    monkeypatch.setattr("chainform.documents._fetch.MAX_BYTES", 100_000)
    _refused(run("x", "-a", f"{server}/endless", private), "the limit", client)
    monkeypatch.setattr("chainform.documents._fetch.TIMEOUT", 0.3)
    _refused(run("x", "-a", f"{server}/slow", private), "timed out", client)
    _refused(run("x", "-a", "ftp://example.com/a.pdf"), "only http(s)", client)


def test_usage_mistakes(model: Any) -> None:
    client = model(TEXT_ONLY)
    for result, message in [
        (run("-a", "-", input=b"data"), "give the prompt as an argument"),
        (run("x", "--at", "a.png", "png"), "not a content type"),
        (run("x", "-a", "-", "-a", "-", input=b"data"), "can be given once"),
    ]:
        assert result.exit_code == 2 and message in result.stderr.strip().splitlines()[-1]
    assert client.requests == []


def _refused(result: Result, message: str, client: ScriptedClient) -> None:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error:") and message in lines[0], lines
    assert client.requests == []
    assert Store().recent(None) == []
