"""Fragments as llm's `-f`: text from a file, a URL or the log, sent before the prompt (`--sf`: in
the system prompt), kept once in the log by its sha256; `fragments list/show`; bad fragments are
one `Error:` line, exit 2, before any call."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cli_helpers import Scripted

from chainform.store import Store, fragment_id
from chainform.testing import tool_call

NOTES = "Ship on Friday.\nThe release notes are in docs/.\n" * 20


def _db() -> sqlite3.Connection:
    return sqlite3.connect(Store().path)


@pytest.mark.unit
def test_a_fragment_is_sent_before_the_prompt_and_logged_once(
    run, scripted: Scripted, tmp_path: Path
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text(NOTES)
    scripted.script([tool_call("current_time"), "Friday.", "Again Friday."])
    result = run("When do we ship?", "-f", str(notes), "-T", "current_time")
    assert result.exit_code == 0, result.output
    messages, _ = scripted.client.requests[0]  # type: ignore[union-attr]
    assert [c.text for c in messages[-1].contents] == [NOTES, "When do we ship?"]
    assert run("And where are the notes?", "-f", str(notes)).exit_code == 0
    key = fragment_id(NOTES)
    with _db() as db:
        assert db.execute("SELECT sha256, content, source FROM fragments").fetchall() == [
            (key, NOTES, str(notes))
        ]
        assert (
            db.execute("SELECT COUNT(*) FROM response_fragments WHERE sha256 = ?", (key,)).fetchone()[0] == 3
        )
        stored = [row[0] for row in db.execute("SELECT messages FROM responses")]
        prompts = [row[0] for row in db.execute("SELECT prompt FROM responses ORDER BY created_at")]
    assert all("Ship on Friday" not in text for text in stored)  # 3 calls, the text stored once
    assert prompts == ["When do we ship?", "When do we ship?", "And where are the notes?"]
    calls = Store().recent(None)
    assert all(c.messages[-1].contents[0].text == NOTES for c in calls if c.messages[-1].role == "user")
    shown = json.loads(run("logs", "-n", "1", "--json").stdout)[0]["messages"][-1]
    assert shown["contents"][0]["text"] == NOTES  # `logs --json` reads the call with the text put back
    listed = json.loads(run("fragments", "list", "--json").stdout)
    assert [(f["id"], f["source"], f["calls"]) for f in listed] == [(key, str(notes), 3)]
    assert run("fragments", "show", key[:8]).stdout == NOTES
    scripted.script(["Still Friday."])
    assert run("Sure?", "-c").exit_code == 0  # -c sends the conversation's fragments again
    replayed = [m.text for m in scripted.client.requests[0][0]]  # type: ignore[union-attr]
    assert replayed == [NOTES + "And where are the notes?", "Again Friday.", "Sure?"]
    scripted.script(["Yes."])
    assert run("Same notes by id?", "-f", key[:6]).exit_code == 0  # a logged fragment by id prefix
    assert scripted.client.requests[0][0][-1].contents[0].text == NOTES  # type: ignore[union-attr]
    assert run("logs", "rm", "--before", "2999-01-01", "-y").exit_code == 0
    with _db() as db:
        assert db.execute("SELECT COUNT(*) FROM fragments").fetchone()[0] == 0  # gone with its calls


@pytest.mark.unit
def test_a_system_fragment_joins_the_system_prompt(run, scripted: Scripted, tmp_path: Path) -> None:
    style = tmp_path / "style.md"
    style.write_text("Answer in French.")
    scripted.script(["Vendredi."])
    assert run("When?", "-s", "Be terse.", "--sf", str(style)).exit_code == 0
    messages, _ = scripted.client.requests[0]  # type: ignore[union-attr]
    assert [(m.role, m.text) for m in messages] == [
        ("system", "Be terse."),
        ("system", "Answer in French."),
        ("user", "When?"),
    ]
    call = Store().recent(1)[0]
    assert call.system == "Be terse." and call.prompt == "When?"
    with _db() as db:
        assert db.execute("SELECT content FROM fragments").fetchall() == [("Answer in French.",)]


@pytest.mark.unit
def test_a_template_keeps_its_fragments(run, scripted: Scripted, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text(NOTES)
    os.chdir(tmp_path)
    assert run("Summarize", "-f", "notes.txt", "--save", "sum").exit_code == 0
    assert json.loads(run("templates", "show", "sum").stdout)["fragments"] == [str(notes)]
    scripted.script(["Friday."])
    assert run("-t", "sum").exit_code == 0
    assert [c.text for c in scripted.client.requests[0][0][-1].contents] == [NOTES, "Summarize"]  # type: ignore[union-attr]


@pytest.fixture
def site() -> Iterator[str]:
    """A web server on 127.0.0.1: /redirect sends a client on to /secret on the same loopback address."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/redirect":
                self.send_response(302)
                self.send_header("Location", f"http://127.0.0.1:{self.server.server_port}/secret")
                self.end_headers()
                return
            body = b"internal secret"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_a_url_fragment_that_redirects_to_a_private_address_is_refused(
    run, scripted: Scripted, site: str, monkeypatch
) -> None:
    """The first address passes as public (its check is told so), the redirect to loopback is checked again."""
    import ipaddress

    from chainform.documents import _fetch

    checked = _fetch._checked_address

    def public_first(host: str, port: int, url: str):  # type: ignore[no-untyped-def]
        if url.endswith("/redirect"):
            return ipaddress.ip_address("127.0.0.1")
        return checked(host, port, url)

    monkeypatch.setattr(_fetch, "_checked_address", public_first)
    scripted.script([])
    result = run("Summarize", "-f", f"{site}/redirect")
    assert result.exit_code == 2, result.output
    assert result.stderr.count("Error:") == 1 and "private, loopback or reserved" in result.stderr
    assert scripted.client.requests == []  # type: ignore[union-attr]
    scripted.script(["It says: internal secret."])  # allowed when asked for, as for attachments
    assert run("Summarize", "-f", f"{site}/redirect", "--allow-private-urls").exit_code == 0
    assert scripted.client.requests[0][0][-1].contents[0].text == "internal secret"  # type: ignore[union-attr]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("make", "why"),
    [
        (lambda d: str(d), "is a directory"),
        (lambda d: (os.mkfifo(d / "pipe"), str(d / "pipe"))[1], "is not a regular file"),
        (
            lambda d: ((d / "big.txt").write_text("x" * 1_000_001), str(d / "big.txt"))[1],
            "over the limit of 1,000,000",
        ),
        (lambda d: ((d / "bin").write_bytes(b"\xff\xfe"), str(d / "bin"))[1], "not UTF-8"),
        (lambda d: ((d / "empty").write_text(" \n"), str(d / "empty"))[1], "it is empty"),
        (lambda d: str(d / "missing.txt"), "no fragment"),
        (lambda d: "abcdef12", "no logged fragment has that id"),
        (lambda d: "http://127.0.0.1:9/x", "private, loopback or reserved"),
        (lambda d: "ftp://example.com/x", "no fragment"),
    ],
)
def test_bad_fragments_are_one_error_line(run, scripted: Scripted, tmp_path: Path, make, why: str) -> None:
    value = make(tmp_path)
    scripted.script([])
    for args in (("hi", "-f", value), ("hi", "--sf", value), ("hi", "-f", value, "--save", "never")):
        result = run(*args)
        assert result.exit_code == 2, result.output
        assert result.stderr.count("Error:") == 1 and why in result.stderr, result.stderr
    assert scripted.client.requests == []  # type: ignore[union-attr]


@pytest.mark.unit
def test_fragments_show_of_an_unknown_or_malformed_id(run) -> None:
    for value, why in (("abcd", "no logged fragment"), ("xyz", "is not a fragment id")):
        result = run("fragments", "show", value)
        assert result.exit_code == 2 and result.stderr.count("Error:") == 1 and why in result.stderr
    assert run("fragments").stdout == ""
