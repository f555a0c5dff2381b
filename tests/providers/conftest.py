"""Fixtures the adapter tests share."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import openai_fixtures
import pytest
from adapter_fixtures import OPEN

from chainform.testing.emulator import Emulator


@pytest.fixture
async def emu(emulator: Emulator) -> AsyncIterator[Emulator]:
    """The emulator, streaming in 4-character pieces (so every adapter meets split events); the
    adapters a test made through `adapter_fixtures.opened` are closed in the test's own loop."""
    emulator.chunk_size = 4
    yield emulator
    while OPEN:
        await OPEN.pop().aclose()


@pytest.fixture
def openai_isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    """The OpenAI tests' isolation (`pytestmark = pytest.mark.usefixtures("openai_isolated")`): no
    provider key variables, and the SDK's backoff near zero (openai_fixtures.prepare)."""
    openai_fixtures.prepare(monkeypatch)


@pytest.fixture
def file_server() -> Iterator[dict[str, tuple[bytes, str]]]:
    """A loopback HTTP server for attachments by URL: put `path -> (bytes, content type)` into the
    dict it yields; its base URL is the dict's "" entry's text (`files[""][1]`). Stopped after."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    files: dict[str, tuple[bytes, str]] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body, kind = files.get(self.path, (b"", ""))
            self.send_response(200 if kind else 404)
            self.send_header("content-type", kind or "text/plain")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    files[""] = (b"", f"http://127.0.0.1:{server.server_address[1]}")
    try:
        yield files
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
