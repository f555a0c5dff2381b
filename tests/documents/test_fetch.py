"""Downloading attached URLs: loopback refused unless allowed, status errors, size caps, redirect loops."""

from __future__ import annotations

import pytest
from docs_helpers import PNG

from chainform.documents import fetch
from chainform.errors import AttachmentError
from chainform.types import Attachment


def test_download_keeps_bytes_and_type(server: str) -> None:
    attachment = fetch(Attachment(url=f"{server}/receipt"), allow_private=True)
    assert attachment.read() == PNG and attachment.media_type() == "image/png"


def test_loopback_is_refused_unless_allowed(server: str) -> None:
    with pytest.raises(AttachmentError, match="loopback or reserved address"):
        fetch(Attachment(url=f"{server}/receipt"))


@pytest.mark.parametrize(
    ("path", "kwargs", "message"),
    [
        ("/missing", {}, "HTTP 404"),
        ("/loop", {}, "more than 5 redirects"),
        ("/receipt", {"max_bytes": 100}, "over the limit of 100"),
        ("/endless", {"max_bytes": 10_000}, "more than 10,000 bytes"),
    ],
)
def test_bad_downloads_are_attachment_errors(
    server: str, path: str, kwargs: dict[str, int], message: str
) -> None:
    with pytest.raises(AttachmentError, match=message):
        fetch(Attachment(url=f"{server}{path}"), allow_private=True, **kwargs)


def test_a_dead_server_is_an_attachment_error() -> None:
    with pytest.raises(AttachmentError, match="download failed"):
        fetch(Attachment(url="http://127.0.0.1:9/x.png"), allow_private=True, timeout=2)
