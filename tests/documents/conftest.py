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
        self.server.seen.append(self.path)  # type: ignore[attr-defined]
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
        elif self.path == "/trickle":  # a byte every 0.1 s: never silent for long, never done
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            for _ in range(3000):
                self.wfile.write(b"x")
                self.wfile.flush()
                time.sleep(0.1)
        elif self.path == "/nul-text":  # binary bytes sent as text
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"\x00\x01\x02binary\x00" * 10)
        else:
            self.send_error(404)

    def log_message(self, *args: object) -> None:
        pass


class _QuietServer(ThreadingHTTPServer):
    """A client that stops reading (a size cap, a timeout) breaks the pipe: expected, not printed.

    The default `handle_error` prints the traceback to `sys.stderr`, which a CLI test running at the
    same moment captures as the command's own output."""

    seen: list[str]

    def handle_error(self, request: object, client_address: object) -> None:
        pass


class Served(str):
    """The server's base URL, with the paths it was asked for and its port."""

    seen: list[str]
    port: int

    def __new__(cls, url: str, seen: list[str], port: int) -> Served:
        self = super().__new__(cls, url)
        self.seen, self.port = seen, port
        return self


@pytest.fixture
def server() -> Iterator[Served]:
    httpd = _QuietServer(("127.0.0.1", 0), _Handler)
    httpd.seen = []
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield Served(f"http://127.0.0.1:{httpd.server_address[1]}", httpd.seen, httpd.server_address[1])
    finally:
        httpd.shutdown()
        httpd.server_close()
