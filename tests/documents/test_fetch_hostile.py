"""Hostile downloads and URLs (issue 38, item 8): a total deadline, the connection made to the address
that was checked, bytes checked against the type the server declared, malformed URLs and URL
passwords an `AttachmentError` that never shows the password."""

from __future__ import annotations

import socket
from typing import Any

import pytest
from click.testing import CliRunner
from docs_helpers import ends_within

import chainform as cf
from chainform.cli import _prompt, cli
from chainform.documents import fetch, prepare_parts
from chainform.errors import AttachmentError
from chainform.models import Model
from chainform.testing import ScriptedClient
from chainform.types import ModelProfile

TEXT_ONLY = ModelProfile(name="scripted", provider="testing", supports_json_schema=True)
BOUND = 30.0  # seconds: generous; the bug is a download that never ends


def test_a_download_that_trickles_forever_ends_at_the_total_deadline(server: Any) -> None:
    """A byte every 0.1 s is never 3 s of silence (only a test process stalled for 2.9 s would see
    one, and end in the silence timeout instead): the whole download's deadline ends it."""
    trickle = cf.Attachment(url=f"{server}/trickle")
    found = ends_within(BOUND, lambda: fetch(trickle, allow_private=True, timeout=3.0))
    assert isinstance(found, AttachmentError) and "the deadline" in str(found)


def test_a_name_that_rebinds_to_loopback_is_never_fetched(
    server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check sees a public address, a second lookup would say 127.0.0.1: the connection goes to
    the address checked (unreachable here), never to the loopback server."""
    real = socket.getaddrinfo
    answers = iter(["192.0.32.10"])  # a public address (example.com's old one)

    def rebinding(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host != "rebind.example":
            return real(host, port, *args, **kwargs)
        address = next(answers, "127.0.0.1")
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))]

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    with pytest.raises(AttachmentError):
        fetch(cf.Attachment(url=f"http://rebind.example:{server.port}/receipt"), timeout=2)
    assert server.seen == []


def test_bytes_sent_as_text_that_are_not_text_are_refused(server: Any) -> None:
    attachment = fetch(cf.Attachment(url=f"{server}/nul-text"), allow_private=True)
    with pytest.raises(AttachmentError, match=r"not text, which contradicts its type \(text/plain\)"):
        attachment.media_type()
    with pytest.raises(AttachmentError, match="not text"):
        prepare_parts([cf.Attachment(url=f"{server}/nul-text")], TEXT_ONLY, allow_private_urls=True)


MALFORMED = ["http://a:1:2/x.png", "http://[::1]x/y.png", "http://xn--/a.png", "http://[::1]:99999/x"]


@pytest.mark.parametrize("url", MALFORMED)
def test_a_malformed_url_is_an_attachment_error(url: str) -> None:
    with pytest.raises(AttachmentError, match="malformed URL"):
        cf.Attachment(url=url)


def _cli(monkeypatch: pytest.MonkeyPatch, *args: str) -> Any:
    client = ScriptedClient(["ok"], TEXT_ONLY)
    monkeypatch.setattr(_prompt, "resolve_model", lambda name, **_: Model(client, name=name))
    return CliRunner().invoke(cli, ["x", *args]), client


@pytest.mark.parametrize("url", MALFORMED)
def test_a_malformed_url_on_the_command_line_is_exit_2(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    result, client = _cli(monkeypatch, "-a", url, "--allow-private-urls")
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert "malformed URL" in result.stderr and not client.requests


@pytest.mark.parametrize(
    "url",
    [
        "https://user:s3cretpass@127.0.0.1:1/x.png",
        "http://user:s3cretpass@127.0.0.1:1",
        "http://u:s3cretpass@a:1:2/",
    ],
)
def test_an_attachment_urls_password_is_never_printed(url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    result, _ = _cli(monkeypatch, "-a", url)
    assert result.exit_code == 2 and "Error:" in result.stderr
    assert "s3cretpass" not in result.stderr + result.stdout
    result, _ = _cli(monkeypatch, "-a", url, "--allow-private-urls")
    assert result.exit_code == 2 and "s3cretpass" not in result.stderr + result.stdout


def test_ctrl_c_during_a_download_ends_the_command_with_exit_130(server: Any, tmp_path: Any) -> None:
    """A body that trickles for minutes: Ctrl-C ends the command at its next chunk, exit 130."""
    import os
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ, "CHAINFORM_HOME": str(tmp_path / "home"), "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-m", "chainform.cli", "-m", "vllm/any", "--base-url", "http://127.0.0.1:9/v1"]
    process = subprocess.Popen(
        [*command, "Read", "-a", f"{server}/trickle", "--allow-private-urls"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + BOUND
        while "/trickle" not in server.seen and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "/trickle" in server.seen, "the download never started"
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=BOUND)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, stderr.decode()
    assert b"Traceback" not in stderr, stderr.decode()
