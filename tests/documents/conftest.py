"""The documents tests' HTTP server on 127.0.0.1 (a PNG, 404s, a redirect loop, a body with no
length, a slow answer), stopped after each test that uses it."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from docs_helpers import PNG


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/receipt":
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.send_header("Content-Length", str(len(PNG)))
            self.end_headers()
            self.wfile.write(PNG)
        elif self.path == "/loop":
            self.send_response(302)
            self.send_header("Location", "/loop")
            self.end_headers()
        elif self.path == "/slow":
            time.sleep(2)
            self.send_response(200)
            self.end_headers()
        elif self.path == "/endless":  # no Content-Length: the cap is enforced while reading
            self.send_response(200)
            self.end_headers()
            for _ in range(64):
                self.wfile.write(b"x" * 4096)
        else:
            self.send_error(404)

    def log_message(self, *args: object) -> None:
        pass


class _QuietServer(ThreadingHTTPServer):
    """A client that stops reading (a size cap, a timeout) breaks the pipe: expected, not printed.

    The default `handle_error` prints the traceback to `sys.stderr`, which a CLI test running at the
    same moment captures as the command's own output."""

    def handle_error(self, request: object, client_address: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = _QuietServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
