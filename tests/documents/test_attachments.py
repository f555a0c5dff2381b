"""Attachments: one source, types told from the bytes, bad files refused before anything is read whole."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from docs_helpers import receipt_png, text_pdf

from chainform.errors import AttachmentError
from chainform.types import Attachment, MediaSupport, ModelProfile

pytestmark = pytest.mark.unit  # no socket, no process (tests/guards.py)


def test_type_is_told_from_the_bytes_and_read_once(tmp_path: Path) -> None:
    path = tmp_path / "receipt"  # no extension: the bytes say PNG
    receipt_png(path)
    attachment = Attachment(path=path)
    assert attachment.media_type() == "image/png"
    assert attachment.name == "receipt"
    first = attachment.read()
    path.unlink()
    assert attachment.read() is first  # read once, kept


def test_type_override_and_bytes_and_data_urls() -> None:
    assert Attachment(content=b"%PDF-1.7\n...").media_type() == "application/pdf"
    assert Attachment(content=b"a,b\n1,2\n", type="text/csv").media_type() == "text/csv"
    assert Attachment(content=b"plain words\n").media_type() == "text/plain"
    inline = Attachment(url="data:text/plain;base64,aGVsbG8=")
    assert not inline.is_remote and inline.read() == b"hello" and inline.media_type() == "text/plain"
    remote = Attachment(url="https://example.com/files/scan.pdf")
    assert remote.is_remote and remote.name == "scan.pdf" and remote.media_type() == "application/pdf"


def test_text_files_keep_their_extension_type(tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# Title\nbody\n")
    assert Attachment(path=path).media_type() == "text/markdown"


def _file(directory: Path, name: str, data: bytes) -> Path:
    (directory / name).write_bytes(data)
    return directory / name


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing.png", "no such file"),
        (lambda d: d, "is a directory"),
        (lambda d: _file(d, "empty.png", b""), "is empty"),
        (lambda d: _file(d, "x.bin", b"\x00\x01\x02\xff" * 10), "unknown binary"),
        (lambda d: _file(d, "fake.pdf", receipt_png()), "contradicts its extension"),
    ],
)
def test_bad_files_are_one_clear_error(tmp_path: Path, make: Callable[[Path], Path], message: str) -> None:
    with pytest.raises(AttachmentError, match=message):
        Attachment(path=make(tmp_path)).media_type()


def test_one_source_only_and_safe_schemes() -> None:
    with pytest.raises(AttachmentError, match="exactly one"):
        Attachment()
    with pytest.raises(AttachmentError, match="exactly one"):
        Attachment(path="a.png", content=b"x")
    with pytest.raises(AttachmentError, match="only http"):
        Attachment(url="file:///etc/passwd")


def test_a_file_over_the_limit_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.pdf"
    path.write_bytes(text_pdf() + b"\n" * 5000)
    reads: list[int] = []
    real_read_bytes = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda self: reads.append(1) or real_read_bytes(self))
    attachment = Attachment(path=path)
    assert attachment.media_type() == "application/pdf"  # sniffed from the head alone
    with pytest.raises(AttachmentError, match="over the limit of 1,000"):
        attachment.read(max_bytes=1000)
    assert reads == []


def test_media_support_is_profile_data() -> None:
    media = MediaSupport(types=frozenset({"image/png"}), max_bytes=10, type_limits=(("image/png", 5),))
    profile = ModelProfile(media=media)
    assert profile.supports_images and media.limit("image/png") == 5 and media.limit("text/plain") == 10
    assert not ModelProfile().supports_images
    assert ModelProfile().capabilities()["media"] == []
