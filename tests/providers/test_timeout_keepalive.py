"""The read timeout is the server's silence, counted in bytes, not events (issue 28 item 2): a
server that sends SSE keep-alive comments (which the SDK never hands on as events) for longer than
the read timeout before its first token is not silent, and the call goes on; one that sends
nothing for as long is cut. A loopback server of the test's own, speaking Chat Completions.

Real seconds, as the SDK's own HTTP timeouts are part of what is checked: a ping every 0.05 s
under a read timeout of 3 s, so that only a test process stalled for nearly 3 s between two pings
reads as a silent server; the thinking (4 s) outlasts connect + read (0.1 + 3 s)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import chainform as cf

READ = 3.0  # seconds: the read timeout of both tests
CHUNK = {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": []}


def _event(delta: dict[str, object], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return b"data: " + json.dumps({**CHUNK, "choices": [choice]}).encode() + b"\n\n"


class _Slow(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    keepalive = True  # set per server: send ": ping" comments while thinking, or nothing

    def log_message(self, format: str, *args: object) -> None:
        return

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        chunks = []
        for _ in range(80):  # 4 s of thinking before the first token
            time.sleep(0.05)
            if self.server.keepalive:  # type: ignore[attr-defined]
                self._chunk(b": ping\n\n")
        chunks += [_event({"role": "assistant", "content": "thought "}), _event({"content": "long"}, "stop")]
        chunks.append(b"data: [DONE]\n\n")
        try:
            for data in chunks:
                self._chunk(data)
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    httpd.daemon_threads = True
    httpd.keepalive = request.param  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.mark.parametrize("server", [True], indirect=True)
def test_keepalive_comments_keep_a_slow_first_token_alive(server: str) -> None:
    model = cf.get_model("openai/m", base_url=server, key="sk-t", max_retries=0, timeout=(0.1, READ))
    assert "".join(model.prompt("x", log=False)) == "thought long"


@pytest.mark.parametrize("server", [False], indirect=True)
def test_the_same_wait_in_silence_is_a_timeout(server: str) -> None:
    model = cf.get_model("openai/m", base_url=server, key="sk-t", max_retries=0, timeout=(0.1, READ))
    with pytest.raises(cf.ProviderError) as info:
        "".join(model.prompt("x", log=False))
    assert info.value.kind == "timeout" and info.value.retryable
